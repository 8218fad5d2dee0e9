"""The report's phrase-map section: the encoder summary c of source phrases, projected to 2-D and drawn."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from smt_features.report.figures import pyplot
from smt_features.report.projection import pca_2d, tsne_2d
from smt_features.report.render import Figure, Section


def phrase_summaries(model_path: str | Path, phrases: Sequence[Sequence[str]]) -> Any:
    """Encoder summary ``c`` (numpy [N, H]) of each tokenized source phrase under a translation model."""
    from nmt.scoring import PairScorer

    return PairScorer.load(model_path).encoder_summaries(phrases)


def phrase_map_section(out_dir: Path, model: str | Path | None, phrases: Sequence[str] | None,
                       projection: str = "pca") -> Section:
    sec = Section("Phrase representations (encoder summary c)")
    if not model or not phrases:
        sec.notes.append("No phrase map: give a translation model and a phrase list "
                         "(--phrase-model/--phrases or DIR/phrase_model.txt + DIR/phrases.txt).")
        return sec
    toks = [p.split() for p in phrases if p.strip()]
    if len(toks) < 3:
        sec.notes.append("No phrase map: fewer than 3 phrases.")
        return sec
    try:
        c = phrase_summaries(model, toks)
    except (OSError, ValueError, KeyError) as err:
        sec.notes.append(f"No phrase map: {err}")
        return sec
    if projection not in ("pca", "tsne"):
        raise ValueError(f"projection must be 'pca' or 'tsne', not {projection!r}")
    if projection == "tsne":
        pts = tsne_2d(c)
        method = "t-SNE (exact, small numpy implementation, perplexity min(10, (N-1)/3))"
    else:
        pts, ratios = pca_2d(c)
        method = ("PCA via numpy SVD (not t-SNE), explained variance "
                  + ", ".join(f"{100 * r:.1f}%" for r in ratios))
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 5))
    ax.scatter(pts[:, 0], pts[:, 1], s=8)
    for (x, y), t in zip(pts, toks):
        ax.annotate(" ".join(t), (x, y), fontsize=7)
    if projection == "tsne":
        ax.set_xlabel("t-SNE 1")
        ax.set_ylabel("t-SNE 2")
        ax.set_title("t-SNE of encoder summaries c")
    else:
        ax.set_xlabel(f"PC1 ({100 * ratios[0]:.1f}% of variance)")
        ax.set_ylabel(f"PC2 ({100 * ratios[1]:.1f}% of variance)" if len(ratios) > 1 else "PC2")
        ax.set_title("PCA (numpy SVD) of encoder summaries c")
    fig.tight_layout()
    fig.savefig(out_dir / "phrase_map.png", dpi=90)
    plt.close(fig)
    sec.figures.append(Figure("Phrase map", "phrase_map.png",
                              f"{len(toks)} source phrases, model {model}; projection: {method}"))
    return sec
