"""``smt-report``: ``report.md`` + ``report.html`` + PNG figures from an experiment folder.

See :mod:`smt_features.report.build` (and ``docs/rerank_report.md``) for the input layout; every piece
is optional and a missing one leaves its section out with a note.
"""
from __future__ import annotations

import sys
from pathlib import Path
from dataclasses import dataclass

from nmt import config as C
from nmt.errors import command


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
    screenshot: str = C.field("", help="also render report.html in headless Chromium (Debian's `chromium`) and "
                                       "save a full-page PNG here")
    screenshot_size: str = C.field("1280,3200", help="browser window WIDTH,HEIGHT in pixels for --screenshot")


def _read_lines(path: str) -> list[str]:
    """Lines of a UTF-8 text file (strict: a bad byte is reported as FILE:LINE)."""
    from nmt.data.io import read_lines

    return read_lines(path, allow_empty=True)


def check_paths(cfg: ReportConfig) -> None:
    """Refuse bad folders and outputs that would overwrite an input, before anything is written."""
    import errno

    from nmt.errors import refuse_overwriting_inputs

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


@command("smt-report")
def cli_main(argv: list[str] | None = None) -> int:
    cfg = C.parse(ReportConfig, argv, description=__doc__)
    if not cfg.experiment_dir or not cfg.out:
        raise SystemExit("smt-report: --experiment-dir and --out are required")
    from smt_features.report.build import build_report

    if cfg.projection not in ("pca", "tsne"):
        raise SystemExit(f"smt-report: --projection must be 'pca' or 'tsne', not {cfg.projection!r}")
    check_paths(cfg)
    phrases = _read_lines(cfg.phrases) if cfg.phrases else None
    att = _read_lines(cfg.attention_sentences) if cfg.attention_sentences else None
    if cfg.phrases and not any(p.strip() for p in phrases or []):
        raise SystemExit(f"smt-report: {cfg.phrases}: no phrases (the file is empty)")
    if cfg.attention_sentences and not any(a.strip() for a in att or []):
        raise SystemExit(f"smt-report: {cfg.attention_sentences}: no sentences (the file is empty)")
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


def screenshot(html_path: str | Path, png_path: str | Path, size: str = "1280,3200", timeout: int = 120) -> Path:
    """Render ``html_path`` with headless Chromium into ``png_path`` (raises if no browser is found,
    it fails, or it writes no PNG)."""
    import shutil
    import subprocess
    import tempfile
    from pathlib import Path

    exe = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    if exe is None:
        raise FileNotFoundError("no chromium / chromium-browser / google-chrome on PATH (Debian: apt-get install "
                                "chromium)")
    png = Path(png_path).resolve()
    png.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--user-data-dir={profile}",
               f"--window-size={size}", f"--screenshot={png}", Path(html_path).resolve().as_uri()]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0 or not png.is_file() or png.read_bytes()[:8] != b"\x89PNG\r\n\x1a\n":
        raise RuntimeError(f"{exe} did not write {png} (exit {proc.returncode}): {proc.stderr[-800:]}")
    return png


if __name__ == "__main__":
    sys.exit(cli_main())
