"""Experiment reports: ``report.md`` + ``report.html`` (self-contained, inline CSS) + PNG figures.

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

Nothing here imports torch at module load; the phrase map imports ``nmt`` lazily.
"""
from __future__ import annotations

import html
import json
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SYSTEM_ORDER = ["Baseline", "+RNN", "+RNN+WP", "+LSTM-LM", "+RMN-LM", "+Mogrifier-LM", "+all"]


# ------------------------------------------------------------------------------------- data

@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)


@dataclass
class Figure:
    title: str
    file: str  # PNG name, beside the report
    caption: str = ""


@dataclass
class Section:
    title: str
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _load_json_records(folder: Path) -> tuple[list[dict[str, Any]], list[str]]:
    records, problems = [], []
    for p in sorted(folder.glob("*.json")):
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            problems.append(f"{p.name}: unreadable ({err})")
            continue
        items = data if isinstance(data, list) else [data]
        for i, item in enumerate(items):
            if isinstance(item, dict):
                item = dict(item)
                item.setdefault("_file", p.name)
                records.append(item)
            else:
                problems.append(f"{p.name}: item {i} is not an object")
    return records, problems


def mean_spread(values: Sequence[float], digits: int = 2) -> str:
    """``"30.50 ± 0.71 (n=2)"``: mean ± sample standard deviation over runs; one run: just the value."""
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.fmean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f} (n={len(values)})"


def _system_key(name: str, first_seen: dict[str, int]) -> tuple[int, int]:
    if name in SYSTEM_ORDER:
        return (0, SYSTEM_ORDER.index(name))
    return (1, first_seen[name])


def bleu_section(exp_dir: Path) -> Section:
    sec = Section("Translation quality (BLEU, chrF)")
    folder = exp_dir / "results"
    if not folder.is_dir():
        sec.notes.append(f"No BLEU results: {folder} not found.")
        return sec
    records, problems = _load_json_records(folder)
    sec.notes.extend(problems)
    good = []
    for r in records:
        if not all(k in r for k in ("system", "set", "bleu")):
            sec.notes.append(f"{r.get('_file')}: a record without system/set/bleu was skipped")
            continue
        good.append(r)
    if not good:
        sec.notes.append("No usable BLEU records.")
        return sec
    first_sys: dict[str, int] = {}
    first_set: dict[str, int] = {}
    for r in good:
        first_sys.setdefault(str(r["system"]), len(first_sys))
        first_set.setdefault(str(r["set"]), len(first_set))
    systems = sorted(first_sys, key=lambda s: _system_key(s, first_sys))
    sets = list(first_set)
    for metric, label in (("bleu", "BLEU"), ("chrf", "chrF")):
        if not any(metric in r for r in good):
            continue
        rows = []
        for s in systems:
            row = [s]
            for t in sets:
                vals = [float(r[metric]) for r in good if str(r["system"]) == s and str(r["set"]) == t
                        and r.get(metric) is not None]
                row.append(mean_spread(vals) if vals else "–")
            rows.append(row)
        sec.tables.append(Table(f"{label} (percent; mean ± sample s.d. over MERT runs)", ["System", *sets], rows))
    sigs = sorted({str(r[k]) for r in good for k in ("signature", "bleu_signature", "chrf_signature") if r.get(k)})
    if sigs:
        sec.notes.append("sacreBLEU signatures: " + "; ".join(f"`{s}`" for s in sigs))
    else:
        sec.notes.append("No sacreBLEU signatures were recorded with the results.")
    return sec


def perplexity_section(exp_dir: Path) -> Section:
    sec = Section("Language-model perplexity")
    folder = exp_dir / "perplexity"
    if not folder.is_dir():
        sec.notes.append(f"No perplexity results: {folder} not found.")
        return sec
    records, problems = _load_json_records(folder)
    sec.notes.extend(problems)
    rows = []
    for r in records:
        if "ppl" not in r or "num_tokens" not in r:
            sec.notes.append(f"{r.get('_file')}: not a perplexity record (no ppl/num_tokens), skipped")
            continue
        kind = r.get("arch") or ("kenlm" if "map_unk" in r else "?")
        nll = r.get("nll_per_token")
        if nll is None and r.get("total_logprob") is not None:
            nll = -float(r["total_logprob"]) / max(int(r["num_tokens"]), 1)
        rows.append([str(r.get("name", r["_file"])), str(kind), Path(str(r.get("text", "?"))).name,
                     f"{int(r['num_tokens']):,}", str(r.get("num_oov", "?")), f"{float(r['ppl']):.2f}",
                     "–" if nll is None else f"{float(nll):.4f}"])
    if rows:
        sec.tables.append(Table("Perplexity (N = words + one </s> per line, OOVs included)",
                                ["Model", "Type", "Text", "N tokens", "OOV", "Perplexity", "nats/token"], rows))
    else:
        sec.notes.append("No usable perplexity records.")
    return sec


def _plt():
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
    plt = _plt()
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
    from nmt.analysis.rmn_attention import sentence_attention
    from nmt.lm_data import load_language_model

    item = sentence_attention(load_language_model(model_path), [list(words)])[0]
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

    plt = _plt()
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


def examples_section(exp_dir: Path) -> Section:
    """``DIR/examples.json``: sentences where systems differ, ``{"title": …, "examples": [{"id": 12, "source": …,
    "reference": …, "outputs": {"Baseline": …, "+all": …}}, …]}`` (``recipes/multi30k_enfr/summarize.py
    --examples --json``)."""
    sec = Section("Translation examples")
    path = exp_dir / "examples.json"
    if not path.is_file():
        sec.notes.append("No examples.json: section omitted.")
        return sec
    data = json.loads(path.read_text(encoding="utf-8"))
    rows: list[list[str]] = []
    for ex in data.get("examples", []):
        rows.append([str(ex.get("id", "")), "source", ex.get("source", "")])
        rows.append(["", "reference", ex.get("reference", "")])
        rows += [["", name, text] for name, text in ex.get("outputs", {}).items()]
    sec.tables.append(Table(data.get("title", "Examples"), ["#", "", "text"], rows))
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


def pca_2d(x: Any) -> tuple[Any, list[float]]:
    """Rows of ``x`` projected on their first two principal components (numpy SVD of the centred
    matrix); returns ``(points [N, 2], explained variance ratios of the two components)``."""
    import numpy as np

    x = np.asarray(x, dtype=np.float64)
    xc = x - x.mean(axis=0, keepdims=True)
    _, s, vt = np.linalg.svd(xc, full_matrices=False)
    k = min(2, vt.shape[0])
    pts = xc @ vt[:k].T
    if k < 2:
        pts = np.concatenate([pts, np.zeros((pts.shape[0], 2 - k))], axis=1)
    var = s ** 2
    ratios = [float(v / var.sum()) if var.sum() > 0 else 0.0 for v in var[:2]]
    return pts, ratios


def tsne_2d(x: Any, *, perplexity: float = 10.0, iterations: int = 500, seed: int = 0) -> Any:
    """A small exact t-SNE (van der Maaten & Hinton 2008) in numpy, for up to a few hundred points:
    Gaussian affinities with per-point bandwidths found by bisection to match ``perplexity``
    (capped at (N − 1) / 3), symmetrised; Student-t similarities in 2-D; gradient descent (learning rate
    max(N / 12, 10)) with momentum 0.5 → 0.8, early exaggeration 4 for the first 100 iterations, per-parameter gains.
    Deterministic for a given ``seed``. Returns points [N, 2]."""
    import numpy as np

    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    if n < 3:
        return np.zeros((n, 2))
    perp = max(1.0, min(perplexity, (n - 1) / 3.0))
    d = np.square(x[:, None, :] - x[None, :, :]).sum(-1)
    p = np.zeros((n, n))
    target = np.log(perp)
    for i in range(n):
        lo, hi, beta = 0.0, np.inf, 1.0
        di = np.delete(d[i], i)
        for _ in range(60):
            w = np.exp(-(di - di.min()) * beta)
            sw = w.sum()
            h = np.log(sw) + beta * float((di - di.min()) @ w) / sw
            if abs(h - target) < 1e-5:
                break
            if h > target:
                lo, beta = beta, beta * 2 if hi == np.inf else (beta + hi) / 2
            else:
                hi, beta = beta, (beta + lo) / 2
        p[i, np.arange(n) != i] = w / sw
    p = (p + p.T) / (2 * n)
    p = np.maximum(p, 1e-12)
    rng = np.random.default_rng(seed)
    y = rng.normal(scale=1e-4, size=(n, 2))
    vel = np.zeros_like(y)
    gains = np.ones_like(y)
    lr = max(n / 12.0, 10.0)  # "auto" learning rate of recent t-SNE implementations, N / exaggeration / 3
    for it in range(iterations):
        pe = p * 4.0 if it < 100 else p
        num = 1.0 / (1.0 + np.square(y[:, None, :] - y[None, :, :]).sum(-1))
        np.fill_diagonal(num, 0.0)
        q = np.maximum(num / num.sum(), 1e-12)
        grad = 4.0 * (((pe - q) * num)[:, :, None] * (y[:, None, :] - y[None, :, :])).sum(1)
        mom = 0.5 if it < 250 else 0.8
        gains = np.where(np.sign(grad) != np.sign(vel), gains + 0.2, gains * 0.8).clip(0.01)
        vel = mom * vel - lr * gains * grad
        y = y + vel
        y = y - y.mean(0)
    return y


def phrase_summaries(model_path: str | Path, phrases: Sequence[Sequence[str]]) -> Any:
    """Encoder summary ``c`` (numpy [N, H]) of each tokenized source phrase under a translation model."""
    import numpy as np
    import torch

    from nmt.data.batching import pair_batch
    from nmt.model_io import load_translation_model

    loaded = load_translation_model(model_path)
    ids = [loaded.src_vocab.encode(list(p)) for p in phrases]
    batch = pair_batch(ids, [[] for _ in ids])
    with torch.no_grad():
        c = loaded.model.encode(batch["src"])
    return np.asarray(c.double().cpu().numpy())


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
    plt = _plt()
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


# ------------------------------------------------------------------------------------- rendering

def _md_text(text: str) -> str:
    """Markdown-safe text: ``<`` outside backquotes as ``&lt;`` (so ``</s>`` is not read as HTML)."""
    parts = text.split("`")
    return "`".join(p if i % 2 else p.replace("<", "&lt;") for i, p in enumerate(parts))


def _md_cell(text: str) -> str:
    return _md_text(text).replace("|", "\\|")


def render_markdown(title: str, sections: Sequence[Section]) -> str:
    out = [f"# {_md_text(title)}", ""]
    for sec in sections:
        out += [f"## {sec.title}", ""]
        for t in sec.tables:
            out += [f"**{_md_text(t.title)}**", "", "| " + " | ".join(_md_cell(h) for h in t.header) + " |",
                    "|" + "|".join("---" for _ in t.header) + "|"]
            out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in t.rows]
            out += [""] + [f"*{_md_text(n)}*" for n in t.notes]
        for f in sec.figures:
            out += [f"![{_md_text(f.title)}]({f.file})", "", f"*{_md_text(f.title)}.* {_md_text(f.caption)}", ""]
        out += [f"- {_md_text(n)}" for n in sec.notes]
        out.append("")
    return "\n".join(out)


CSS = """body{font-family:system-ui,sans-serif;max-width:60em;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1em}th,td{border:1px solid #bbb;padding:.25em .6em;text-align:right}
th:first-child,td:first-child{text-align:left}th{background:#eee}figure{margin:1em 0}
img{max-width:100%}figcaption{font-size:.9em;color:#555}.note{color:#666;font-size:.9em}
code{background:#f4f4f4;padding:0 .2em}td.t{text-align:left}"""


def _html_text(text: str) -> str:
    # backquoted pieces (signatures) as <code>
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


_NUMERIC = re.compile(r"^[-+0-9.,%±()–= n]*$")


def _html_cell(text: str) -> str:
    """A table cell: figures right-aligned (the CSS default), text left-aligned."""
    cls = "" if _NUMERIC.match(text) else ' class="t"'
    return f"<td{cls}>{html.escape(text)}</td>"


def render_html(title: str, sections: Sequence[Section]) -> str:
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', f"<title>{html.escape(title)}</title>",
           f"<style>{CSS}</style></head><body>", f"<h1>{html.escape(title)}</h1>"]
    for sec in sections:
        out.append(f"<h2>{html.escape(sec.title)}</h2>")
        for t in sec.tables:
            out.append(f"<table><caption>{html.escape(t.title)}</caption><thead><tr>"
                       + "".join(f"<th>{html.escape(h)}</th>" for h in t.header) + "</tr></thead><tbody>")
            out += ["<tr>" + "".join(_html_cell(c) for c in row) + "</tr>" for row in t.rows]
            out.append("</tbody></table>")
        for f in sec.figures:
            out.append(f'<figure><img src="{html.escape(f.file)}" alt="{html.escape(f.title)}">'
                       f"<figcaption><b>{html.escape(f.title)}.</b> {html.escape(f.caption)}</figcaption></figure>")
        out += [f'<p class="note">{_html_text(n)}</p>' for n in sec.notes]
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _check_model(path: str | Path, kind: str) -> None:
    """Load a model once to refuse a broken one (truncated checkpoint, mismatched vocabulary) up front."""
    from nmt.paths import resolve_checkpoint
    from smt_features.neural.rescore import naming_checkpoint

    with naming_checkpoint(resolve_checkpoint(path, "auto")):
        if kind == "lm":
            from nmt.lm_data import load_language_model

            load_language_model(path)
        else:
            from nmt.model_io import load_translation_model

            load_translation_model(path)


def build_report(exp_dir: str | Path, out_dir: str | Path, *, title: str | None = None,
                 phrase_model: str | Path | None = None, phrases: Sequence[str] | None = None,
                 rmn_model: str | Path | None = None, attention_sentences: Sequence[str] | None = None,
                 projection: str = "pca", strict_models: bool = False) -> dict[str, Path]:
    """Write ``report.md``, ``report.html`` and the PNGs into ``out_dir``; returns their paths.

    ``strict_models``: a ``phrase_model`` or ``rmn_model`` passed here must load (checked before anything is
    written; a broken one raises, naming its checkpoint) instead of leaving its section out with a note.
    """
    from nmt.data.io import atomic_write

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
