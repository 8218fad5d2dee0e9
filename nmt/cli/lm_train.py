"""``nmt-lm-train``: train a neural language model (LSTM, RM/RMR, Mogrifier) on a text corpus.

The model flags depend on ``--arch`` (an architecture or preset of
``nmt.models.lm``; ``--arch X --help`` lists them; the defaults shown are the
architecture's, a preset's own values apply unless a flag is given). LM defaults differ from
``nmt-train``'s: SGD, lr 1, clip 5, batches of 20 (the RMN paper's). The loss
is nats per token, tokens = words + one ``</s>`` per line (``<s>`` not counted),
the accounting of every LM of the project (``nmt.core.perplexity``).

Learning-rate schedules, Adam's betas, weight decay and weight averaging are
the trainer's (``nmt.training.trainer``; the lr is a pure function of the trainer's state,
so a resumed run follows the same schedule); ``--loss-norm sequence`` is the
task's loss normaliser (``nmt.lm.task.LMTask.loss``). Runs unchanged under
``torchrun`` (DistributedDataParallel, ``docs/training.md``).
"""
from __future__ import annotations

import sys

from nmt.core import config as C
from nmt.training import distributed
from nmt.core.errors import command
from nmt.lm.data import LMDataConfig
from nmt.lm.training import LMLoopConfig, LMOptimConfig, arch_name, run_lm_training
from nmt.models.lm import ARCHITECTURES, resolve


@command("nmt-lm-train")
def cli_main(argv: list[str] | None = None) -> int:
    name = arch_name(argv)
    try:
        arch, preset_values = resolve(name)
    except KeyError as err:
        raise SystemExit(f"nmt-lm-train: {err.args[0]}") from None
    model_cls, model_cfg_cls = ARCHITECTURES[arch]
    classes = [LMDataConfig, model_cfg_cls, LMOptimConfig, LMLoopConfig]
    args, yaml_values = C.parse_args(classes, argv, description=__doc__)
    try:
        data = C.build(LMDataConfig, args, yaml_values)
        model_cfg = C.build(model_cfg_cls, args, yaml_values, base=preset_values)
        optim = C.build(LMOptimConfig, args, yaml_values)
        loop = C.build(LMLoopConfig, args, yaml_values)
    except (ValueError, TypeError) as err:
        raise SystemExit(f"nmt-lm-train: {err}") from None
    ctx = distributed.init(loop.device)  # no-op outside torchrun
    try:
        return run_lm_training(ctx, name, arch, model_cls, data, model_cfg, optim, loop, args.config)
    finally:
        distributed.shutdown()


if __name__ == "__main__":
    sys.exit(cli_main())
