#!/usr/bin/env python3
"""One markdown table of the PTB LM results written by ``recipes/ptb_lm/run.sh``.

    perplexity_table.py WORK_DIR [--models kenlm lstm-1x128 ...]

Reads, per model folder of WORK_DIR: ``valid.json`` / ``test.json`` (``nmt-lm-eval --json`` or
``smt-kenlm eval --json-out``), ``valid.sentence.json`` / ``test.sentence.json`` (a stream-trained
model scored sentence by sentence), ``summary.json`` (``nmt-lm-train``), and for ``kenlm`` the
ARPA header (n-gram counts). Perplexities follow the project's one accounting: N = words + one
``</s>`` per line, ``<s>`` not counted, OOVs included.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

# Published Penn Treebank figures (test perplexity) for the rows that have one.
PAPER = {
    "kenlm": "141.2 (Mikolov et al.; reference run 141.19 test / 148.01 valid)",
    "lstm-3x128": "126.1 †",
    "rm+tM-g": "123.5 †",
}
FOOTNOTES = [
    "† RMN paper (Tran, Bisazza & Monz 2016), Penn Treebank test perplexity after 15 epochs: 3-layer LSTM "
    "126.1 vs RM(+tM−g) 123.5. Rows trained for fewer epochs compare on the gap and the ordering, not on "
    "the absolute values.",
    "Mogrifier paper figures (LSTM 54.6 vs Mogrifier 51.0 on PTB) are for 24M-parameter, long-tuned, "
    "regularised models and are not comparable with the 1 x 128 model here.",
    "N = words + one </s> per line (<s> not counted); OOVs included, scored as <unk>. PTB's literal <unk> is "
    "an ordinary word (KenLM: read as `_unk_`). `stream` = the text as one stream with the state carried "
    "across sentences (cross-sentence context, not comparable with sentence-level figures); "
    "`sentence` = each line from a fresh state.",
]


def _load(path: Path) -> dict | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _ngram_count(folder: Path) -> int | None:
    for arpa in sorted(folder.glob("*.arpa")):
        total = 0
        with open(arpa, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("ngram ") and "=" in line:
                    total += int(line.split("=", 1)[1])
                elif line.startswith("\\1-grams:"):
                    break
        return total
    return None


def _fmt_int(n: int | None) -> str:
    return f"{n:,}" if n is not None else "—"


def _fmt_ppl(res: dict | None) -> str:
    return f"{res['ppl']:.2f}" if res else "—"


def rows_for(work: Path, name: str, paper: bool = True) -> list[list[str]]:
    folder = work / name
    summary = _load(folder / "summary.json") or {}
    rows = []
    variants = [("", None)]
    if (folder / "valid.sentence.json").is_file() or (folder / "test.sentence.json").is_file():
        variants.append((".sentence", "sentence"))
    for suffix, eval_regime in variants:
        valid, test = _load(folder / f"valid{suffix}.json"), _load(folder / f"test{suffix}.json")
        if valid is None and test is None:
            continue
        if name == "kenlm":
            params = f"{_fmt_int(_ngram_count(folder))} n-grams"
            epochs, regime, rate = "—", "sentence", "—"
            oov = "/".join(_fmt_int(r["num_oov"]) if r else "—" for r in (valid, test))
        else:
            params = _fmt_int(summary.get("num_parameters") or (valid or test or {}).get("num_parameters"))
            epochs = str(summary.get("epochs", "—"))
            train_regime = summary.get("regime") or (valid or test or {}).get("regime", "?")
            shown = eval_regime or (valid or test or {}).get("regime", train_regime)
            regime = train_regime if shown == train_regime else f"{train_regime} → eval {shown}"
            tps = summary.get("train_tokens_per_s")
            threads = (summary.get("this_run") or {}).get("threads")
            rate = f"{tps:,.0f}" + (f" ({threads} thr)" if threads else "") if tps else "—"
            oov = "/".join(_fmt_int(r["num_oov"]) if r else "—" for r in (valid, test))
        n = " / ".join(_fmt_int(r["num_tokens"]) if r else "—" for r in (valid, test))
        row = [name, regime, params, epochs, _fmt_ppl(valid), _fmt_ppl(test), n, oov, rate]
        if paper:
            row.append(PAPER.get(name, "—") if not suffix else "—")
        rows.append(row)
    return rows


def table(work: Path, models: list[str] | None = None, paper: bool = True) -> str:
    if not models:
        found = sorted(p.name for p in work.iterdir()
                       if p.is_dir() and ((p / "valid.json").is_file() or (p / "test.json").is_file()))
        models = (["kenlm"] if "kenlm" in found else []) + [m for m in found if m != "kenlm"]
    header = ["model", "regime", "params", "epochs", "valid ppl", "test ppl", "N valid / test",
              "OOV valid/test", "train tokens/s"] + (["paper (test ppl)"] if paper else [])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    missing = []
    for name in models:
        rows = rows_for(work, name, paper)
        if not rows:
            missing.append(name)
        for row in rows:
            lines.append("| " + " | ".join(row) + " |")
    notes = FOOTNOTES if paper else FOOTNOTES[-1:]
    out = "\n".join(lines) + "\n\n" + "\n".join(f"- {f}" for f in notes) + "\n"
    if missing:
        out += f"- no results found for: {', '.join(missing)}\n"
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("work", help="the work folder of run.sh")
    parser.add_argument("--models", nargs="*", help="folders in this order (default: kenlm, then all others)")
    parser.add_argument("--no-paper", action="store_true", help="no published-figures column (not PTB)")
    args = parser.parse_args(argv)
    work = Path(args.work)
    if not work.is_dir():
        parser.error(f"{work} is not a folder")
    sys.stdout.write(table(work, args.models, paper=not args.no_paper))
    return 0


if __name__ == "__main__":
    sys.exit(main())
