"""nmt-train's run: the checks before anything is written, the model folder (config, vocabulary copies), the trainer.

The entry point is :mod:`nmt.cli.train`; the data and loss :mod:`nmt.translation.data`; the trainer
:mod:`nmt.training.trainer`.
"""
from __future__ import annotations

import dataclasses
import shutil
import sys
import time
from pathlib import Path

import torch
import yaml

from nmt.training import distributed
from nmt.core.io import atomic_write
from nmt.models.gru_encdec import GRUEncDecConfig
from nmt.models.registry import DEFAULT_ARCH, get_arch
from nmt.core.run_checks import clear_run, refuse_out_dir_inputs, refuse_trained_out_dir
from nmt.training.trainer import Trainer
from nmt.training.config import LoopConfig, OptimConfig
from nmt.translation.data import TranslationDataConfig, TranslationTask, swap_side


def run_translation_training(ctx: distributed.DistContext, data: TranslationDataConfig, model_cfg: GRUEncDecConfig, optim: OptimConfig,
         loop: LoopConfig, config_file: str | None = None, arch: str = DEFAULT_ARCH) -> int:
    """Train ``arch`` (a name of :mod:`nmt.models.registry`; ``model_cfg`` its config) as nmt-train does."""
    # everything is read and checked before anything is written: a refused run leaves no --out-dir behind
    out = Path(loop.out_dir)
    refuse_trained_out_dir(out, resume=loop.resume, overwrite=loop.overwrite)
    paths = data.resolved_paths()
    inputs = {f"--{k.replace('_', '-')}": v for k, v in paths.items()}
    inputs.update({"--phrase-table": data.phrase_table, "--config": config_file})
    copies = {side: out / f"{side}_vocab{Path(paths[f'{side}_vocab']).suffix}" for side in ("src", "tgt")}
    refuse_out_dir_inputs(out, {k: v for k, v in inputs.items() if k not in ("--src-vocab", "--tgt-vocab")})

    torch.manual_seed(loop.seed)
    task = TranslationTask(data, batching=(loop.batch_size, loop.max_tokens, loop.seed))  # reads and checks every pair
    model = get_arch(arch).build(model_cfg, len(task.src_vocab), len(task.tgt_vocab))
    if ctx.is_main:
        if loop.overwrite:
            for path in clear_run(out, inputs.values()):
                print(f"nmt-train: --overwrite: removed {path}", file=sys.stderr)
        out.mkdir(parents=True, exist_ok=True)
    for side, copy in copies.items():  # the model folder carries its vocabularies
        if ctx.is_main and Path(paths[f"{side}_vocab"]).resolve() != copy.resolve():
            shutil.copyfile(paths[f"{side}_vocab"], copy)
        setattr(data, swap_side(f"{side}_vocab") if data.reverse else f"{side}_vocab", str(copy))
        task.paths[f"{side}_vocab"] = str(copy)  # the checkpoint records the copy
    ctx.barrier()  # the folder and the copies exist before any rank goes on
    data_dict = {k: v for k, v in dataclasses.asdict(data).items() if k != "stream_buffer" or v is not None}
    recorded_arch = {"arch": arch} if arch != DEFAULT_ARCH else {}  # absent = rnnenc: its config.yaml is unchanged
    resolved = {"task": "translation", **recorded_arch, "data": data_dict, "model": dataclasses.asdict(model_cfg),
                "optim": dataclasses.asdict(optim), "loop": dataclasses.asdict(loop)}
    if ctx.is_main:
        with atomic_write(out / "config.yaml") as fh:
            yaml.safe_dump(resolved, fh, sort_keys=False, allow_unicode=True)
        procs = f", {ctx.world} processes ({ctx.backend})" if ctx.enabled else ""
        sampled = (f" (the {task.num_unique} unique pairs repeated by their counts)"
                   if data.phrase_pairs == "count" and data.phrase_table else "")
        direction = ", reverse direction (target → source)" if data.reverse else ""
        print(f"nmt-train: {task.num_train} training pairs{sampled}{direction} ({task.num_dropped} dropped by --max-len "
              f"{data.max_len}), {len(task.dev_src)} dev pairs, vocab {len(task.src_vocab)}/{len(task.tgt_vocab)}, "
              f"{model.num_parameters():,} parameters, "
              f"{f'cell={model_cfg.cell}' if arch == DEFAULT_ARCH else f'arch={arch}'}{procs}", file=sys.stderr)
    start = time.perf_counter()
    state = Trainer(model, task, loop, optim, resolved).train()
    if ctx.is_main:
        print(f"nmt-train: {state.step} updates, {state.epoch} epochs, best dev loss {state.best_dev:.4f} "
              f"nats/token, {time.perf_counter() - start:.0f} s this run", file=sys.stderr)
    return 0
