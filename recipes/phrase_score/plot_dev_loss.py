"""The dev-loss curves of an ablation's phrase models (nats per target token of the dev sentence pairs).

    plot_dev_loss.py OUT.png PAIRS WORK/models/NAME [WORK/models/NAME ...]

Reads each model's history.json (nmt-train's evaluations) and config.yaml and draws dev loss against epochs of the
PAIRS unique training pairs (updates × batch size / PAIRS; a model trained on pairs sampled by count sees the same
number of pairs per update), one line per model.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import yaml  # noqa: E402

from nmt.core.io import atomic_write  # noqa: E402


def curve(model: Path, pairs: int) -> tuple[list[float], list[float]]:
    history = json.loads((model / "history.json").read_text(encoding="utf-8"))
    batch = yaml.safe_load((model / "config.yaml").read_text(encoding="utf-8"))["loop"]["batch_size"]
    evals = [h for h in history if "dev_loss" in h]
    return [h["step"] * batch / pairs for h in evals], [h["dev_loss"] for h in evals]


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    fig, ax = plt.subplots(figsize=(7, 4))
    for name in argv[2:]:
        x, y = curve(Path(name), int(argv[1]))
        ax.plot(x, y, marker=".", label=Path(name).name)
    ax.set_xlabel(f"epochs of the {int(argv[1]):,} unique training pairs")
    ax.set_ylabel("dev loss (nats / target token)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    with atomic_write(argv[0], "wb") as fh:
        fig.savefig(fh, format="png", dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
