"""Where a Recurrent Memory Network looks, as plots and JSON (nmt-lm-attention's run; Tran et al. 2016, Fig. 3, 4).

Reads a text sentence by sentence from a fresh state with one or more RM/RMR models and writes
into ``--out-dir``:

* ``mean_attention.png`` — average attention per memory position (0 = the current word) over
  every step whose memory is full (t ≥ n − 1), one line per model (Fig. 3);
* ``heatmap_<model>_<i>.png`` — the attention of ``--samples`` sampled sentences (Fig. 4);
* ``attention.json`` — the averages, the number of steps averaged, the sampled line numbers;
* ``attention_<model>.npz`` (``--save-arrays``) — every step's weights [tokens, n] with the
  sentence offsets, for other plots.

The entry point is :mod:`nmt.cli.lm_attention`; the computation :mod:`nmt.analysis.rmn_attention`.
"""
from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from nmt.core import config as C
from nmt.analysis.rmn_attention import mean_by_distance, plot_heatmap, plot_mean_by_distance, sentence_attention
from nmt.core.io import atomic_write
from nmt.core.errors import UsageError
from nmt.lm.data import read_sentences
from nmt.lm.loading import load_language_model
from nmt.core.run_checks import check_out_dir_path, require_lines


@dataclass
class LMAttentionConfig:
    model: list[str] = C.field([], help="RM/RMR model folders (nmt-lm-train), all after one --model: "
                                        "--model RM=dir1 RMR=dir2; NAME=PATH labels a model (default: the folder "
                                        "name)", required=True)
    text: str | None = C.field(None, help="tokenized text, one sentence per line (plain or .gz)")
    split: str | None = C.field(None, help="instead of --text: train, valid or test of the first model's data")
    max_sentences: int | None = C.field(None, help="only the first N lines")
    samples: int = C.field(3, help="sentences drawn for the heatmaps (seeded; among lines of 8-25 words)")
    seed: int = C.field(1, help="seed of the sample")
    out_dir: str = C.field("work/attention", help="folder for the PNGs and attention.json")
    save_arrays: bool = C.field(False, help="also write every step's weights as attention_<model>.npz")
    threads: int = C.field(2, help="torch intra-op threads")


def _named(spec: str) -> tuple[str, str]:
    if "=" in spec:
        name, path = spec.split("=", 1)
        return name, path
    return Path(spec).name, spec


def write_attention_report(cfg: LMAttentionConfig) -> None:
    """Compute every model's attention over the text, then write the plots and ``attention.json`` into ``cfg.out_dir``."""
    torch.set_num_threads(cfg.threads)
    try:
        models = [(name, load_language_model(path)) for name, path in map(_named, cfg.model)]
        if cfg.text and cfg.split:
            raise ValueError("give --text or --split, not both")
        text = cfg.text or (models[0][1].data_config().resolve_text(cfg.split) if cfg.split else None)
        if not text:
            raise ValueError("--text or --split is required")
    except ValueError as err:  # (a missing file reaches the error wrapper: PATH: No such file or directory)
        raise UsageError(str(err)) from None
    sentences = read_sentences(text, cfg.max_sentences)
    if not sentences and cfg.max_sentences != 0:
        require_lines(text, 0, "sentences")
    candidates = [i for i, s in enumerate(sentences) if 8 <= len(s) <= 25] or list(range(len(sentences)))
    picked = sorted(random.Random(cfg.seed).sample(candidates, min(cfg.samples, len(candidates))))
    out = Path(cfg.out_dir)
    check_out_dir_path(out)
    computed = []  # every model's attention first: a model that cannot give it leaves no --out-dir behind
    for name, loaded in models:
        try:
            items = sentence_attention(loaded, sentences)
            mean, steps = mean_by_distance(items)
        except ValueError as err:
            raise UsageError(str(err)) from None
        computed.append((name, loaded, items, mean, steps))
    out.mkdir(parents=True, exist_ok=True)
    curves: dict[str, np.ndarray] = {}
    record: dict = {"text": str(text), "sentences": len(sentences), "sampled_lines": [i + 1 for i in picked],
                    "models": {}}
    for name, loaded, items, mean, steps in computed:
        curves[name] = mean
        record["models"][name] = {"path": str(loaded.path), "arch": loaded.config.get("arch"),
                                  "memory_size": int(mean.shape[0]), "steps_averaged": steps,
                                  "mean_attention": [round(float(v), 6) for v in mean]}
        print(f"{name}: memory {mean.shape[0]}, {steps:,} full-memory steps; mean attention by position "
              + " ".join(f"{v:.3f}" for v in mean))
        for i in picked:
            plot_heatmap(items[i], out / f"heatmap_{name}_{i + 1}.png", title=f"{name}, line {i + 1}")
        if cfg.save_arrays:
            offsets = np.cumsum([0] + [it.weights.shape[0] for it in items])
            np.savez_compressed(out / f"attention_{name}.npz", weights=np.concatenate([it.weights for it in items]),
                                offsets=offsets)
    plot_mean_by_distance(curves, out / "mean_attention.png",
                          title=f"{Path(text).name}: {len(sentences):,} sentences, full-memory steps")
    with atomic_write(out / "attention.json") as fh:
        json.dump(record, fh, indent=1)
    print(f"wrote {out / 'mean_attention.png'}, {len(picked) * len(models)} heatmaps, {out / 'attention.json'}",
          file=sys.stderr)
