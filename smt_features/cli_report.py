"""``smt-report``: ``report.md`` + ``report.html`` + PNG figures from an experiment folder.

See :mod:`smt_features.report` (and ``docs/rerank_report.md``) for the input layout; every piece
is optional and a missing one leaves its section out with a note.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

from nmt import config as C


@dataclass
class ReportConfig:
    experiment_dir: str = C.field("", help="experiment folder (results/, perplexity/, models/, attention/, ...)")
    out: str = C.field("", help="output folder for report.md, report.html and the PNGs")
    title: str = C.field("", help="report title (default: from the folder name)")
    phrase_model: str = C.field("", help="translation model folder for the phrase map (default: "
                                         "DIR/phrase_model.txt)")
    phrases: str = C.field("", help="source phrases, one tokenized phrase per line (default: DIR/phrases.txt)")
    projection: str = C.field("pca", help="phrase map projection: 'pca' (numpy SVD) or 'tsne' (small exact "
                                          "numpy t-SNE)")
    rmn_model: str = C.field("", help="RMN LM folder (nmt-lm-train --arch rm/rmr) whose attention to draw")
    attention_sentences: str = C.field("", help="tokenized sentences (one per line) for the RMN attention maps")


def cli_main(argv: list[str] | None = None) -> int:
    cfg = C.parse(ReportConfig, argv, description=__doc__)
    if not cfg.experiment_dir or not cfg.out:
        raise SystemExit("smt-report: --experiment-dir and --out are required")
    from pathlib import Path

    from smt_features.report import build_report

    if cfg.projection not in ("pca", "tsne"):
        raise SystemExit(f"smt-report: --projection must be 'pca' or 'tsne', not {cfg.projection!r}")
    if not Path(cfg.experiment_dir).is_dir():
        raise SystemExit(f"smt-report: {cfg.experiment_dir}: not a folder")
    phrases = None
    if cfg.phrases:
        try:
            phrases = Path(cfg.phrases).read_text(encoding="utf-8").splitlines()
        except OSError as err:
            raise SystemExit(f"smt-report: {err}") from None
    att = None
    if cfg.attention_sentences:
        try:
            att = Path(cfg.attention_sentences).read_text(encoding="utf-8").splitlines()
        except OSError as err:
            raise SystemExit(f"smt-report: {err}") from None
    paths = build_report(cfg.experiment_dir, cfg.out, title=cfg.title or None,
                         phrase_model=cfg.phrase_model or None, phrases=phrases,
                         rmn_model=cfg.rmn_model or None, attention_sentences=att,
                         projection=cfg.projection)
    print(f"smt-report: wrote {paths['md']}, {paths['html']} and {len(paths) - 2} figure(s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())
