"""Attention of a Recurrent Memory Network over its memory (Tran et al. 2016, Fig. 3 and 4).

For every token read from a fresh state (sentence by sentence, the first context symbol
first), the RM/RMR memory block puts a distribution over its ``n`` slots; slot k is the word
k positions back, k = 0 the current input word. At step t < n − 1 only t + 1 slots hold words
(the rest have weight exactly 0).

* :func:`sentence_attention` — the [T, n] weights of each sentence (T = words + 1 inputs);
* :func:`mean_by_distance` — the average weight per relative position over the steps whose
  memory is full (t ≥ n − 1), the quantity of the paper's Fig. 3;
* :func:`plot_mean_by_distance` / :func:`plot_heatmap` — the PNGs (Fig. 3, Fig. 4 style:
  rows = predicting positions, columns = the memory's words).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from nmt.lm.loading import LoadedLM
from nmt.lm.scoring import length_batches


@dataclass
class SentenceAttention:
    words: list[str]          # the sentence's words
    inputs: list[str]         # the T = len(words) + 1 input symbols (start symbol first)
    weights: np.ndarray       # [T, n] float64; row t, column k: weight of the input k positions back


def start_symbol(loaded: LoadedLM) -> str:
    return "</s>" if loaded.regime == "stream" else "<s>"


@torch.no_grad()
def sentence_attention(loaded: LoadedLM, sentences: Sequence[Sequence[str]], *, max_tokens: int = 2000
                       ) -> list[SentenceAttention]:
    """Attention of ``loaded`` (an RM or RMR model) over each sentence, from a fresh state,
    in input order. Raises ``ValueError`` for a model without a memory block."""
    model = loaded.model
    if not hasattr(model, "memory"):
        raise ValueError(f"{loaded.path}: {loaded.config.get('arch')} model has no memory block (not an RMN)")
    ids = [loaded.vocab.encode(list(s)) for s in sentences]
    out: list[SentenceAttention | None] = [None] * len(ids)
    for idx, inputs, _, in_len in length_batches(ids, start=loaded.start, max_tokens=max_tokens):
        _, _, att = model(inputs, None, lengths=in_len, return_attention=True)
        att = att.double().cpu().numpy()
        for row, k in enumerate(idx):
            words = list(sentences[k])
            out[k] = SentenceAttention(words, [start_symbol(loaded)] + words, att[row, :int(in_len[row])].copy())
    return out  # type: ignore[return-value]


def mean_by_distance(items: Sequence[SentenceAttention]) -> tuple[np.ndarray, int]:
    """(average weight per relative position k = 0 … n−1, number of steps averaged) over the steps
    whose memory is full (t ≥ n − 1), so that every slot holds a word."""
    if not items:
        raise ValueError("no sentences")
    n = items[0].weights.shape[1]
    rows = [it.weights[n - 1:] for it in items if it.weights.shape[0] >= n]
    if not rows:
        raise ValueError(f"no sentence is long enough to fill the memory ({n - 1} words or more)")
    full = np.concatenate(rows, 0)
    return full.mean(0), int(full.shape[0])


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_mean_by_distance(curves: dict[str, np.ndarray], path: str | Path, *, title: str = "") -> Path:
    """One line per model: average attention (y) per relative position (x, 0 = current word)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    for label, mean in curves.items():
        ax.plot(np.arange(len(mean)), mean, marker="o", ms=3, label=label)
    ax.set_xlabel("memory position (words back; 0 = current word)")
    ax.set_ylabel("average attention")
    ax.set_ylim(bottom=0)
    if title:
        ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def plot_heatmap(item: SentenceAttention, path: str | Path, *, title: str = "") -> Path:
    """Fig. 4 style: rows = input positions (the word being read; the model predicts the next),
    columns = the words of the sentence so far; cell = weight of that word's memory slot."""
    steps, n = item.weights.shape
    grid = np.full((steps, steps), np.nan)
    for t in range(steps):
        for k in range(min(n, t + 1)):
            grid[t, t - k] = item.weights[t, k]
    plt = _plt()
    size = max(3.0, 0.32 * steps + 1.5)
    fig, ax = plt.subplots(figsize=(size + 1.0, size))
    # the first rows hold one or two words (weights near 1): scale the colours by the later rows
    vmax = float(np.nanmax(grid[2:])) if steps > 2 else float(np.nanmax(grid))
    im = ax.imshow(grid, cmap="Greys", vmin=0, vmax=vmax or 1.0)
    ax.set_xticks(range(steps))
    ax.set_xticklabels(item.inputs, rotation=90, fontsize=7)
    ax.set_yticks(range(steps))
    nxt = item.words + ["</s>"]
    ax.set_yticklabels([f"{w} → {p}" for w, p in zip(item.inputs, nxt)], fontsize=7)
    ax.set_xlabel("memory (words read so far)")
    ax.set_ylabel("input → next word")
    if title:
        ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.04)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return Path(path)
