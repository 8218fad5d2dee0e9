"""``nmt-train``: train the RNN Encoder–Decoder on sentence pairs or phrase-table pairs.

Runs unchanged under ``torchrun --nproc_per_node N`` (DistributedDataParallel; ``docs/training.md``)."""
from __future__ import annotations

import dataclasses
import shutil
import sys
import time
from pathlib import Path

import torch
import yaml

from nmt import config as C
from nmt import distributed
from nmt.data.io import atomic_write
from nmt.models.gru_encdec import PRESETS, GRUEncDecConfig, build_model
from nmt.train import LoopConfig, OptimConfig, Trainer
from nmt.translation_data import TranslationDataConfig, TranslationTask
from nmt.errors import command


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
        return _run(ctx, data, model_cfg, optim, loop)
    finally:
        distributed.shutdown()


def _run(ctx: distributed.DistContext, data: TranslationDataConfig, model_cfg: GRUEncDecConfig, optim: OptimConfig,
         loop: LoopConfig) -> int:
    out = Path(loop.out_dir)
    if ctx.is_main:
        out.mkdir(parents=True, exist_ok=True)
    paths = data.resolved_paths()
    for side in ("src", "tgt"):  # the model folder carries its vocabularies
        copy = out / f"{side}_vocab{Path(paths[f'{side}_vocab']).suffix}"
        if ctx.is_main and Path(paths[f"{side}_vocab"]).resolve() != copy.resolve():
            shutil.copyfile(paths[f"{side}_vocab"], copy)
        setattr(data, f"{side}_vocab", str(copy))
    ctx.barrier()  # the copies exist before any rank reads them

    torch.manual_seed(loop.seed)
    task = TranslationTask(data)
    model = build_model(model_cfg, len(task.src_vocab), len(task.tgt_vocab))
    resolved = {"task": "translation", "data": dataclasses.asdict(data), "model": dataclasses.asdict(model_cfg),
                "optim": dataclasses.asdict(optim), "loop": dataclasses.asdict(loop)}
    if ctx.is_main:
        with atomic_write(out / "config.yaml") as fh:
            yaml.safe_dump(resolved, fh, sort_keys=False, allow_unicode=True)
        procs = f", {ctx.world} processes ({ctx.backend})" if ctx.enabled else ""
        print(f"nmt-train: {len(task.train_src)} training pairs ({task.num_dropped} dropped by --max-len), "
              f"{len(task.dev_src)} dev pairs, vocab {len(task.src_vocab)}/{len(task.tgt_vocab)}, "
              f"{model.num_parameters():,} parameters, cell={model_cfg.cell}{procs}", file=sys.stderr)
    start = time.perf_counter()
    state = Trainer(model, task, loop, optim, resolved).train()
    if ctx.is_main:
        print(f"nmt-train: {state.step} updates, {state.epoch} epochs, best dev loss {state.best_dev:.4f} "
              f"nats/token, {time.perf_counter() - start:.0f} s this run", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())
