"""``nmt-train``: train an encoder–decoder (``--arch rnnenc|rnnsearch``) on sentence or phrase-table pairs.

Runs unchanged under ``torchrun --nproc_per_node N`` (DistributedDataParallel; ``docs/training.md``)."""
from __future__ import annotations

import sys

from nmt.core import config as C
from nmt.training import distributed
from nmt.core.errors import command
from nmt.models.gru_encdec import GRUEncDecConfig
from nmt.models.registry import ArchConfig, resolve_model_config
from nmt.training.config import LoopConfig, OptimConfig
from nmt.translation.data import TranslationDataConfig
from nmt.translation.training import run_translation_training


@command("nmt-train")
def cli_main(argv: list[str] | None = None) -> int:
    classes = [TranslationDataConfig, ArchConfig, GRUEncDecConfig, OptimConfig, LoopConfig]
    args, yaml_values = C.parse_args(classes, argv, description=__doc__)
    data = C.build(TranslationDataConfig, args, yaml_values)
    preset_given = args.preset is not None or any(k.replace("-", "_") == "preset" for k in yaml_values)
    arch, data.preset, model_cfg = resolve_model_config(data.preset, preset_given, args, yaml_values)
    optim = C.build(OptimConfig, args, yaml_values)
    loop = C.build(LoopConfig, args, yaml_values)

    ctx = distributed.init(loop.device)  # no-op outside torchrun
    try:
        return run_translation_training(ctx, data, model_cfg, optim, loop, args.config, arch=arch)
    finally:
        distributed.shutdown()


if __name__ == "__main__":
    sys.exit(cli_main())
