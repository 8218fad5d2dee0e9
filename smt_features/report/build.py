"""Building an experiment report: ``report.md`` + ``report.html`` + PNG figures from an experiment folder.

Input layout of an experiment folder ``DIR`` (every piece optional; a missing piece leaves its
section out with a note):

* ``DIR/results/*.json`` — BLEU/chrF results, each file one record or a list of records
  ``{"system": "+RNN", "set": "test2014", "bleu": 31.2, "chrf": 57.9, "signature": "nrefs:1|…",
  "chrf_signature": "…", "run": 2}`` (``bleu`` required; sacreBLEU, percent, on detokenized text).
  Records of one ``(system, set)`` from several MERT runs are summarised as mean ± sample standard
  deviation (n runs).
* ``DIR/perplexity/*.json`` — what ``nmt-lm-eval --json`` and ``smt-kenlm eval --json-out`` write
  (``name``, ``ppl``, ``num_tokens``, ``num_oov``, ``total_logprob``, ``text``; ``arch`` for neural
  LMs). Perplexity = exp(−Σ ln p / N), N = words + one ``</s>`` per line.
* ``DIR/models/**/history.json`` — ``nmt-train`` / ``nmt-lm-train`` histories: train loss and dev
  loss (nats/token) against the update number; one figure per model folder.
* ``DIR/attention/*.npy`` — optional 2-D arrays (positions × memory slots) of RMN attention weights,
  drawn as heat maps; ``NAME.txt`` beside ``NAME.npy`` may give the words of the rows (one line).
* ``DIR/figures/*.png`` — figures made by other tools (e.g. ``nmt-lm-attention``'s Fig. 3/4 PNGs),
  copied beside the report; ``NAME.txt`` beside ``NAME.png`` may hold its caption.
* phrase map — a translation model (``--phrase-model`` or ``DIR/phrase_model.txt`` holding its
  path) and a list of source phrases (``--phrases`` or ``DIR/phrases.txt``, one tokenized phrase
  per line): the encoder summary ``c`` of each phrase projected to 2-D by PCA (numpy SVD), as in
  Cho et al. (2014) Fig. 4–5 (they used Barnes–Hut t-SNE; this is PCA and is labelled so).

The sections come from :mod:`~smt_features.report.tables` (BLEU, perplexity, examples),
:mod:`~smt_features.report.figures` (curves, attention, copied figures) and
:mod:`~smt_features.report.phrase_map` (with :mod:`~smt_features.report.projection`); rendering is
:mod:`~smt_features.report.render`'s job. Nothing here imports torch at module load; the neural models
are reached lazily through :mod:`nmt.scoring`.
"""
from __future__ import annotations

import errno
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nmt.core import config as C
from nmt.core.io import DataError, atomic_write, read_lines
from nmt.core.errors import UsageError, refuse_overwriting_inputs

from smt_features.report.figures import attention_section, curves_section, export_rmn_attention, figures_section
from smt_features.report.phrase_map import phrase_map_section
from smt_features.report.render import render_html, render_markdown
from smt_features.report.screenshot import screenshot
from smt_features.report.tables import bleu_section, examples_section, perplexity_section


@dataclass
class ReportConfig:
    """Options of ``smt-report``."""

    experiment_dir: str = C.field("", help="experiment folder (results/, perplexity/, models/, attention/, ...)",
                                  required=True)
    out: str = C.field("", help="output folder for report.md, report.html and the PNGs", required=True)
    title: str = C.field("", help="report title (default: from the folder name)")
    phrase_model: str = C.field("", help="translation model folder for the phrase map (default: "
                                         "DIR/phrase_model.txt)")
    phrases: str = C.field("", help="source phrases, one tokenized phrase per line (default: DIR/phrases.txt)")
    projection: str = C.field("pca", help="phrase map projection: 'pca' (numpy SVD) or 'tsne' (small exact "
                                          "numpy t-SNE)")
    rmn_model: str = C.field("", help="RMN LM folder (nmt-lm-train --arch rm/rmr) whose attention to draw")
    attention_sentences: str = C.field("", help="tokenized sentences (one per line) for the RMN attention maps")
    screenshot: str = C.field("", help="also render report.html in headless Chromium (Debian's `chromium`) and "
                                       "save a full-page PNG here")
    screenshot_size: str = C.field("1280,3200", help="browser window WIDTH,HEIGHT in pixels for --screenshot")


def check_paths(cfg: ReportConfig) -> None:
    """Refuse bad folders and outputs that would overwrite an input, before anything is written."""
    exp = Path(cfg.experiment_dir)
    if not exp.exists():
        raise FileNotFoundError(errno.ENOENT, "no such experiment folder", cfg.experiment_dir)
    if not exp.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "--experiment-dir is a file, not a folder", cfg.experiment_dir)
    if Path(cfg.out).exists() and not Path(cfg.out).is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "--out is a file; give a folder for the report", cfg.out)
    for flag, model in (("--phrase-model", cfg.phrase_model), ("--rmn-model", cfg.rmn_model)):
        if model and not Path(model).exists():
            raise FileNotFoundError(errno.ENOENT, f"no such model ({flag})", model)
    out = Path(cfg.out)
    outputs = {"report.md": out / "report.md", "report.html": out / "report.html",
               "--screenshot": cfg.screenshot or None}
    inputs = {"--phrases": cfg.phrases or None, "--attention-sentences": cfg.attention_sentences or None,
              "--phrase-model": cfg.phrase_model or None, "--rmn-model": cfg.rmn_model or None}
    for piece in ("phrases.txt", "phrase_model.txt", "examples.json"):
        if (exp / piece).is_file():
            inputs[f"the experiment's {piece}"] = exp / piece
    refuse_overwriting_inputs(outputs, inputs)


def _check_model(path: str | Path, kind: str) -> None:
    """Load a model once to refuse a broken one (truncated checkpoint, mismatched vocabulary) up front."""
    from nmt.core.paths import resolve_checkpoint
    from nmt.scoring import LMScorer, PairScorer, naming_checkpoint

    with naming_checkpoint(resolve_checkpoint(path, "auto")):
        (LMScorer if kind == "lm" else PairScorer).load(path)


def build_report(exp_dir: str | Path, out_dir: str | Path, *, title: str | None = None,
                 phrase_model: str | Path | None = None, phrases: Sequence[str] | None = None,
                 rmn_model: str | Path | None = None, attention_sentences: Sequence[str] | None = None,
                 projection: str = "pca", strict_models: bool = False) -> dict[str, Path]:
    """Write ``report.md``, ``report.html`` and the PNGs into ``out_dir``; returns their paths.

    ``strict_models``: a ``phrase_model`` or ``rmn_model`` passed here must load (checked before anything is
    written; a broken one raises, naming its checkpoint) instead of leaving its section out with a note.
    """
    exp = Path(exp_dir)
    out = Path(out_dir)
    if strict_models:
        if phrase_model is not None:
            _check_model(phrase_model, "translation")
        if rmn_model and attention_sentences:
            _check_model(rmn_model, "lm")
    out.mkdir(parents=True, exist_ok=True)
    if phrase_model is None and (exp / "phrase_model.txt").is_file():
        phrase_model = (exp / "phrase_model.txt").read_text(encoding="utf-8").strip() or None
        if phrase_model and not Path(phrase_model).is_absolute():
            phrase_model = str(exp / phrase_model)
    if phrases is None and (exp / "phrases.txt").is_file():
        phrases = (exp / "phrases.txt").read_text(encoding="utf-8").splitlines()
    extra_att: list[Path] = []
    att_notes: list[str] = []
    if rmn_model and attention_sentences:
        try:
            extra_att = export_rmn_attention(rmn_model, attention_sentences, out / "attention")
        except (OSError, ValueError, KeyError) as err:
            att_notes.append(f"RMN attention not computed: {err}")
    att = attention_section(exp, out, extra_att)
    att.notes.extend(att_notes)
    sections = [bleu_section(exp), examples_section(exp), perplexity_section(exp), curves_section(exp, out), att,
                figures_section(exp, out), phrase_map_section(out, phrase_model, phrases, projection)]
    title = title or f"Experiment report: {exp.resolve().name}"
    paths = {"md": out / "report.md", "html": out / "report.html"}
    with atomic_write(paths["md"]) as fh:
        fh.write(render_markdown(title, sections))
    with atomic_write(paths["html"]) as fh:
        fh.write(render_html(title, sections))
    for sec in sections:
        for f in sec.figures:
            paths[f.file] = out / f.file
    return paths


def run_report(cfg: ReportConfig) -> int:
    """``smt-report``: check the paths, read the phrase and sentence lists, build the report, the screenshot."""
    if cfg.projection not in ("pca", "tsne"):
        raise UsageError(f"--projection must be 'pca' or 'tsne', not {cfg.projection!r}")
    check_paths(cfg)
    phrases = read_lines(cfg.phrases, allow_empty=True) if cfg.phrases else None
    att = read_lines(cfg.attention_sentences, allow_empty=True) if cfg.attention_sentences else None
    if cfg.phrases and not any(p.strip() for p in phrases or []):
        raise DataError(f"{cfg.phrases}: no phrases (the file is empty)")
    if cfg.attention_sentences and not any(a.strip() for a in att or []):
        raise DataError(f"{cfg.attention_sentences}: no sentences (the file is empty)")
    # a model given by flag must load (a broken one is refused); DIR/phrase_model.txt's only leaves a note
    paths = build_report(cfg.experiment_dir, cfg.out, title=cfg.title or None,
                         phrase_model=cfg.phrase_model or None, phrases=phrases,
                         rmn_model=cfg.rmn_model or None, attention_sentences=att,
                         projection=cfg.projection, strict_models=True)
    print(f"smt-report: wrote {paths['md']}, {paths['html']} and {len(paths) - 2} figure(s)", file=sys.stderr)
    if cfg.screenshot:
        try:
            screenshot(paths["html"], cfg.screenshot, cfg.screenshot_size)
        except (FileNotFoundError, RuntimeError) as err:
            print(f"smt-report: error: {err}", file=sys.stderr)
            return 1
        print(f"smt-report: screenshot {cfg.screenshot}", file=sys.stderr)
    return 0
