"""The report's figure sections: training curves, RMN attention heat maps and copied figures (PNGs via matplotlib)."""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from smt_features.report.render import Figure, Section


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _slug(text: str) -> str:
    out = "".join(c if c.isalnum() else "_" for c in text).strip("_")
    return out or "x"


def curves_section(exp_dir: Path, out_dir: Path) -> Section:
    sec = Section("Training curves")
    folder = exp_dir / "models"
    files = []
    if folder.is_dir():  # os.walk follows symlinked model folders (Path.rglob does not)
        import os

        files = sorted(Path(d) / "history.json" for d, _, names in os.walk(folder, followlinks=True)
                       if "history.json" in names)
    if not files:
        sec.notes.append(f"No training histories: no {folder}/**/history.json.")
        return sec
    plt = pyplot()
    used: set[str] = set()
    for hf in files:
        rel = hf.parent.relative_to(folder).as_posix() or hf.parent.name
        try:
            hist = json.loads(hf.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            sec.notes.append(f"{rel}: unreadable history ({err})")
            continue
        train = [(h["step"], h["train_loss"]) for h in hist if isinstance(h, dict) and "train_loss" in h]
        dev = [(h["step"], h["dev_loss"]) for h in hist if isinstance(h, dict) and "dev_loss" in h]
        if not train and not dev:
            sec.notes.append(f"{rel}: no train_loss/dev_loss entries")
            continue
        fig, ax = plt.subplots(figsize=(5.5, 3.5))
        if train:
            ax.plot(*zip(*train), label="train loss", lw=1)
        if dev:
            ax.plot(*zip(*dev), "o-", label="dev loss", ms=3)
        ax.set_xlabel("update")
        ax.set_ylabel("loss (nats/token)")
        ax.set_title(rel)
        ax.legend()
        fig.tight_layout()
        name = f"curve_{_slug(rel)}.png"
        while name in used:
            name = name[:-4] + "_.png"
        used.add(name)
        fig.savefig(out_dir / name, dpi=90)
        plt.close(fig)
        best = min(v for _, v in dev) if dev else None
        sec.figures.append(Figure(f"Training curve: {rel}", name,
                                  f"{len(train)} train-loss points, {len(dev)} dev evaluations"
                                  + (f"; best dev loss {best:.4f} nats/token" if best is not None else "")))
    return sec


def rmn_attention(model_path: str | Path, words: Sequence[str]) -> tuple[Any, list[str]]:
    """Attention of an RMN LM (``nmt-lm-train --arch rm/rmr``) over one sentence read from a fresh
    state: array [T, n] (row t: input position t, the start symbol first; column k: the word k
    positions back, k = 0 the current one) and the row labels (:mod:`nmt.analysis.rmn_attention`)."""
    from nmt.scoring import LMScorer

    item = LMScorer.load(model_path).attention([list(words)])[0]
    return item.weights, item.inputs


def export_rmn_attention(model_path: str | Path, sentences: Sequence[str], folder: Path) -> list[Path]:
    """``sent<i>.npy`` + ``sent<i>.txt`` (row labels) for each tokenized sentence, into ``folder``."""
    import numpy as np

    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i, line in enumerate(s for s in sentences if s.strip()):
        arr, labels = rmn_attention(model_path, line.split())
        np.save(folder / f"sent{i}.npy", arr)
        (folder / f"sent{i}.txt").write_text(" ".join(labels) + "\n", encoding="utf-8")
        out.append(folder / f"sent{i}.npy")
    return out


def attention_section(exp_dir: Path, out_dir: Path, extra: Sequence[Path] = ()) -> Section:
    sec = Section("RMN attention")
    folder = exp_dir / "attention"
    files = sorted(folder.glob("*.npy")) if folder.is_dir() else []
    files += list(extra)
    if not files:
        sec.notes.append(f"No attention arrays ({folder}/*.npy, or --rmn-model with --attention-sentences): "
                         "section omitted.")
        return sec
    import numpy as np

    plt = pyplot()
    for f in files:
        try:
            arr = np.load(f, allow_pickle=False)
        except (OSError, ValueError) as err:
            sec.notes.append(f"{f.name}: unreadable ({err})")
            continue
        if arr.ndim != 2:
            sec.notes.append(f"{f.name}: expected a 2-D array, got shape {arr.shape}")
            continue
        words_file = f.with_suffix(".txt")
        words = words_file.read_text(encoding="utf-8").split() if words_file.is_file() else []
        fig, ax = plt.subplots(figsize=(max(3.0, 0.3 * arr.shape[1] + 2), max(2.5, 0.25 * arr.shape[0] + 1)))
        im = ax.imshow(arr, aspect="auto", cmap="Greys", vmin=0)
        ax.set_xlabel("memory slot (most recent first)")
        ax.set_ylabel("position")
        if len(words) == arr.shape[0]:
            ax.set_yticks(range(len(words)))
            ax.set_yticklabels(words, fontsize=7)
        fig.colorbar(im, ax=ax)
        fig.tight_layout()
        name = f"attention_{_slug(f.stem)}.png"
        while any(fig_.file == name for fig_ in sec.figures):
            name = name[:-4] + "_.png"
        fig.savefig(out_dir / name, dpi=90)
        plt.close(fig)
        sec.figures.append(Figure(f"Attention: {f.stem}", name, f"array {arr.shape[0]}×{arr.shape[1]}"))
    return sec


def figures_section(exp_dir: Path, out_dir: Path) -> Section:
    """``DIR/figures/*.png`` copied beside the report, in name order."""
    import shutil

    sec = Section("Other figures")
    folder = exp_dir / "figures"
    files = sorted(folder.glob("*.png")) if folder.is_dir() else []
    if not files:
        sec.notes.append(f"No {folder}/*.png: section omitted.")
        return sec
    for f in files:
        name = f"fig_{_slug(f.stem)}.png"
        shutil.copyfile(f, out_dir / name)
        caption_file = f.with_suffix(".txt")
        caption = caption_file.read_text(encoding="utf-8").strip() if caption_file.is_file() else ""
        sec.figures.append(Figure(f.stem, name, caption))
    return sec
