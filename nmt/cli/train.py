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
from nmt.cli.common import clear_run, refuse_out_dir_inputs, refuse_trained_out_dir
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
        return _run(ctx, data, model_cfg, optim, loop, args.config)
    finally:
        distributed.shutdown()


def _run(ctx: distributed.DistContext, data: TranslationDataConfig, model_cfg: GRUEncDecConfig, optim: OptimConfig,
         loop: LoopConfig, config_file: str | None = None) -> int:
    # everything is read and checked before anything is written: a refused run leaves no --out-dir behind
    out = Path(loop.out_dir)
    refuse_trained_out_dir(out, resume=loop.resume, overwrite=loop.overwrite)
    paths = data.resolved_paths()
    inputs = {f"--{k.replace('_', '-')}": v for k, v in paths.items()}
    inputs.update({"--phrase-table": data.phrase_table, "--config": config_file})
    copies = {side: out / f"{side}_vocab{Path(paths[f'{side}_vocab']).suffix}" for side in ("src", "tgt")}
    refuse_out_dir_inputs(out, {k: v for k, v in inputs.items() if k not in ("--src-vocab", "--tgt-vocab")})

    torch.manual_seed(loop.seed)
    task = TranslationTask(data)  # reads and checks the vocabularies and every pair
    model = build_model(model_cfg, len(task.src_vocab), len(task.tgt_vocab))
    if ctx.is_main:
        if loop.overwrite:
            for path in clear_run(out, inputs.values()):
                print(f"nmt-train: --overwrite: removed {path}", file=sys.stderr)
        out.mkdir(parents=True, exist_ok=True)
    for side, copy in copies.items():  # the model folder carries its vocabularies
        if ctx.is_main and Path(paths[f"{side}_vocab"]).resolve() != copy.resolve():
            shutil.copyfile(paths[f"{side}_vocab"], copy)
        setattr(data, f"{side}_vocab", str(copy))
        task.paths[f"{side}_vocab"] = str(copy)  # the checkpoint records the copy
    ctx.barrier()  # the folder and the copies exist before any rank goes on
    resolved = {"task": "translation", "data": dataclasses.asdict(data), "model": dataclasses.asdict(model_cfg),
                "optim": dataclasses.asdict(optim), "loop": dataclasses.asdict(loop)}
    if ctx.is_main:
        with atomic_write(out / "config.yaml") as fh:
            yaml.safe_dump(resolved, fh, sort_keys=False, allow_unicode=True)
        procs = f", {ctx.world} processes ({ctx.backend})" if ctx.enabled else ""
        print(f"nmt-train: {len(task.train_src)} training pairs ({task.num_dropped} dropped by --max-len "
              f"{data.max_len}), {len(task.dev_src)} dev pairs, vocab {len(task.src_vocab)}/{len(task.tgt_vocab)}, "
              f"{model.num_parameters():,} parameters, cell={model_cfg.cell}{procs}", file=sys.stderr)
    start = time.perf_counter()
    state = Trainer(model, task, loop, optim, resolved).train()
    if ctx.is_main:
        print(f"nmt-train: {state.step} updates, {state.epoch} epochs, best dev loss {state.best_dev:.4f} "
              f"nats/token, {time.perf_counter() - start:.0f} s this run", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())
