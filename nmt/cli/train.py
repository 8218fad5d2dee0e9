"""``nmt-train``: train the RNN Encoder–Decoder on sentence pairs or phrase-table pairs.

Runs unchanged under ``torchrun --nproc_per_node N`` (DistributedDataParallel; ``docs/training.md``)."""
from __future__ import annotations

import sys

from nmt import config as C
from nmt import distributed
from nmt.errors import command
from nmt.models.gru_encdec import PRESETS, GRUEncDecConfig
from nmt.train_config import LoopConfig, OptimConfig
from nmt.translation_data import TranslationDataConfig
from nmt.translation_training import run_translation_training


@command("nmt-train")
def cli_main(argv: list[str] | None = None) -> int:
    classes = [TranslationDataConfig, GRUEncDecConfig, OptimConfig, LoopConfig]
    args, yaml_values = C.parse_args(classes, argv, description=__doc__)
    data = C.build(TranslationDataConfig, args, yaml_values)
    if data.preset not in PRESETS:
        raise SystemExit(f"nmt-train: unknown --preset {data.preset!r}; known: {sorted(PRESETS)}")
    model_cfg = C.build(GRUEncDecConfig, args, yaml_values, base=PRESETS[data.preset])
    optim = C.build(OptimConfig, args, yaml_values)
    loop = C.build(LoopConfig, args, yaml_values)

    ctx = distributed.init(loop.device)  # no-op outside torchrun
    try:
        return run_translation_training(ctx, data, model_cfg, optim, loop, args.config)
    finally:
        distributed.shutdown()


if __name__ == "__main__":
    sys.exit(cli_main())
