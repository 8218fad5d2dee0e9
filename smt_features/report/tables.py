"""The report's table sections: BLEU/chrF results, perplexities and translation examples, from the experiment's JSON."""
from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from smt_features.report.render import Section, Table

SYSTEM_ORDER = ["Baseline", "+RNN", "+RNN+WP", "+LSTM-LM", "+RMN-LM", "+Mogrifier-LM", "+all"]


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
    _significance_tables(folder / "significance", sec)
    return sec


def _significance_tables(folder: Path, sec: Section) -> None:
    """A table per test set from ``results/significance/SET.json`` (``nmt-significance``'s JSON, written by the
    recipes' summarize.py): each system against the first, over the MERT runs joined."""
    if not folder.is_dir():
        return
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            scores = data["scores"]
            metrics = list(data["signatures"])
            systems = list(dict.fromkeys(str(x["system"]) for x in scores))
            by = {(str(x["system"]), str(x["metric"])): x for x in scores}
            rows = []
            for system in systems:
                row = [system]
                for metric in metrics:
                    x, base = by[(system, metric)], by[(systems[0], metric)]
                    mean = statistics.fmean(map(float, x["per_run"]))
                    ci = f" ± {float(x['ci95']):.2f}" if x.get("ci95") is not None else ""
                    if system == systems[0]:
                        row += [f"{mean:.2f}", f"{float(x['joined']):.2f}{ci}", ""]
                        continue
                    d_mean = mean - statistics.fmean(map(float, base["per_run"]))
                    p_mean = f" (p {float(x['p_value_mean']):.4f})" if x.get("p_value_mean") is not None else ""
                    row += [f"{d_mean:+.2f}{p_mean}", f"{float(x['joined']):.2f}{ci}",
                            f"{float(x['joined']) - float(base['joined']):+.2f} (p {float(x['p_value']):.4f})"]
                rows.append(row)
            test = "paired approximate randomization" if data["test"] == "ar" else "paired bootstrap resampling"
            title = (f"{path.stem}: each system against {systems[0]} over {int(data['runs'])} MERT run(s) ({test}, "
                     f"{int(data['trials']):,} trials, on the mean of the runs' scores and on the runs joined; "
                     "Clark et al., 2011; ± : bootstrap 95 % interval)")
        except (OSError, ValueError, KeyError, TypeError, IndexError) as err:
            sec.notes.append(f"significance/{path.name}: unreadable ({err!r}), skipped")
            continue
        header = ["System"] + [f"{m} {col}" for m in metrics
                               for col in ("mean over runs, Δ (p)", "runs joined", "joined Δ (p)")]
        table = Table(title, header, rows)
        table.notes += [f"{m}: `{sig}`" for m, sig in data["signatures"].items()]
        sec.tables.append(table)


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


def examples_section(exp_dir: Path) -> Section:
    """``DIR/examples.json``: sentences where systems differ, ``{"title": …, "examples": [{"id": 12, "source": …,
    "reference": …, "outputs": {"Baseline": …, "+all": …}}, …]}`` (``recipes/lib/summarize.py
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
