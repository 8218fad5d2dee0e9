"""The results of the SMT recipes' MERT runs: the BLEU / chrF table (mean ± sd over runs) and translation examples.

    summarize.py --runs 3 --system Baseline=WORK/tune --system +RNN=WORK/rnn.tune [--out-json DIR]
    summarize.py --examples --text SMT/text --run 1 --system Baseline=WORK/tune --system +all=WORK/all
    summarize.py ... --text SMT/text --significance "test_2016_flickr test_2017_flickr" [--significance-trials N]

A system is ``NAME=PREFIX``: run r's files are in ``PREFIX.r/`` (``SET.scores.json`` as ``nmt-evaluate
--json`` writes it, ``SET.fr`` the detokenized output). Sets: val, test_2016_flickr, test_2017_flickr,
those present (``--sets`` for others). Table cells: mean ± sample standard deviation (min–max) over the runs, BLEU and chrF2
in percent, sacreBLEU on detokenized text. ``--out-json`` writes one ``smt-report`` results file per system. ``--significance SETS`` adds, per set,
every system tested against the first over the runs all of them have, joined (``nmt-significance``: paired
approximate randomization, Clark et al. 2011), against ``TEXT/SET.ref.fr``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

SETS = ("val", "test_2016_flickr", "test_2017_flickr")


def _systems(items: list[str]) -> list[tuple[str, str]]:
    out = []
    for item in items:
        name, sep, prefix = item.partition("=")
        if not sep or not name or not prefix:
            raise SystemExit(f"--system {item!r}: expected NAME=PREFIX")
        out.append((name, prefix))
    return out


def _cell(values: list[float]) -> str:
    if not values:
        return "–"
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.2f} ± {sd:.2f} ({min(values):.2f}–{max(values):.2f})"


def table(systems: list[tuple[str, str]], runs: int, out_json: Path | None, set_names: Sequence[str] = SETS
          ) -> str:
    records: dict[str, list[dict]] = {}
    sets_seen: list[str] = []
    for name, prefix in systems:
        records[name] = []
        for r in range(1, runs + 1):
            for split in set_names:
                path = Path(f"{prefix}.{r}") / f"{split}.scores.json"
                if not path.is_file():
                    continue
                x = json.loads(path.read_text(encoding="utf-8"))
                records[name].append({"system": name, "set": split, "run": r, "bleu": x["bleu"], "chrf": x["chrf"],
                                      "signature": x["bleu_signature"], "chrf_signature": x["chrf_signature"],
                                      "sentences": x.get("num_sentences")})
                if split not in sets_seen:
                    sets_seen.append(split)
    sets = [s for s in set_names if s in sets_seen]
    lines: list[str] = []
    sigs: set[tuple[str, str]] = set()
    for metric, label in (("bleu", "BLEU"), ("chrf", "chrF2")):
        lines += [f"| {label} | " + " | ".join(sets) + " | runs |", "|---" * (len(sets) + 2) + "|"]
        for name, _ in systems:
            recs = records[name]
            cells = [_cell([x[metric] for x in recs if x["set"] == s]) for s in sets]
            lines.append(f"| {name} | " + " | ".join(cells) + f" | {len({x['run'] for x in recs})} |")
            sigs |= {(x["signature"], x["chrf_signature"]) for x in recs}
        lines.append("")
    for name, _ in systems:
        recs = records[name]
        if out_json is not None and recs:
            slug = "".join(c if c.isalnum() else "_" for c in name.strip("+")).strip("_").lower() or "system"
            out_json.mkdir(parents=True, exist_ok=True)
            (out_json / f"{slug}.json").write_text(json.dumps(recs, indent=1), encoding="utf-8")
    lines.append("mean ± sample sd (min–max) over MERT runs; sacreBLEU on detokenized output")
    for bleu_sig, chrf_sig in sorted(sigs):
        lines.append(f"BLEU {bleu_sig}; chrF {chrf_sig}")
    return "\n".join(lines) + "\n"


def significance(systems: list[tuple[str, str]], runs: int, text: Path, set_names: Sequence[str],
                 trials: int, out_json: Path | None = None) -> str:
    """Per set: each system against the first, paired approximate randomization over the runs joined (with
    ``out_json``, also ``OUT_JSON/significance/SET.json``, which smt-report shows)."""
    from nmt.core.io import read_lines
    from nmt.translation.evaluate import read_hypotheses
    from nmt.translation.significance import paired_test

    lines: list[str] = []
    for split in set_names:
        ref_path = text / f"{split}.ref.fr"
        common = [r for r in range(1, runs + 1)
                  if all((Path(f"{prefix}.{r}") / f"{split}.fr").is_file() for _, prefix in systems)]
        if len(systems) < 2 or not common or not ref_path.is_file():
            continue
        refs = read_lines(ref_path)
        outputs = [(name, [read_hypotheses(str(Path(f"{prefix}.{r}") / f"{split}.fr"), str(ref_path), len(refs))
                           for r in common]) for name, prefix in systems]
        result = paired_test(outputs, refs, trials=trials)
        if out_json is not None:
            (out_json / "significance").mkdir(parents=True, exist_ok=True)
            (out_json / "significance" / f"{split}.json").write_text(json.dumps(asdict(result), indent=1),
                                                                     encoding="utf-8")
        lines += ["", f"### {split}: each system against {systems[0][0]}, MERT run(s) "
                  f"{', '.join(map(str, common))} joined", "", result.markdown()]
    return "\n".join(lines)


def examples(systems: list[tuple[str, str]], text: Path, run: int, split: str, limit: int,
             json_out: Path | None = None) -> str:
    """Sentences where the systems' detokenized outputs differ: source, reference, each system's output
    (Markdown; with ``json_out`` also the ``smt-report`` examples.json)."""
    src = (text / f"{split}.en").read_text(encoding="utf-8").splitlines()
    ref = (text / f"{split}.ref.fr").read_text(encoding="utf-8").splitlines()
    outs = [(name, Path(f"{prefix}.{run}") / f"{split}.fr") for name, prefix in systems]
    hyps = [(name, p.read_text(encoding="utf-8").splitlines()) for name, p in outs]
    differ = [i for i in range(len(src)) if len({h[i] for _, h in hyps}) > 1]
    lines = [f"# {split}, MERT run {run}: {len(differ)} of {len(src)} sentences differ between "
             + ", ".join(n for n, _ in hyps), ""]
    if json_out is not None:
        data = {"title": lines[0].lstrip("# "),
                "examples": [{"id": i + 1, "source": src[i], "reference": ref[i],
                              "outputs": {name: h[i] for name, h in hyps}} for i in differ[:limit]]}
        json_out.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    for i in differ[:limit]:
        lines.append(f"**{i + 1}.** source (tokenized): {src[i]}  ")
        lines.append(f"reference: {ref[i]}  ")
        for name, h in hyps:
            lines.append(f"{name}: {h[i]}  ")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--system", action="append", default=[], help="NAME=PREFIX (repeat, in table order)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sets", default=" ".join(SETS), help="set names in column order (space-separated)")
    ap.add_argument("--out-json", type=Path, help="write DIR/<system>.json result records (smt-report layout)")
    ap.add_argument("--examples", action="store_true", help="print differing translations instead of the table")
    ap.add_argument("--text", type=Path, help="the SMT recipe's text/ folder (sources, references)")
    ap.add_argument("--run", type=int, default=1)
    ap.add_argument("--set", default="test_2016_flickr")
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument("--json", type=Path, help="with --examples: also write them as smt-report's examples.json")
    ap.add_argument("--significance", default="", help="sets (space-separated) whose systems are tested against "
                    "the first --system (needs --text: TEXT/SET.ref.fr)")
    ap.add_argument("--significance-trials", type=int, default=10000, help="approximate randomization trials")
    args = ap.parse_args(argv)
    systems = _systems(args.system)
    if not systems:
        ap.error("give at least one --system")
    if args.examples:
        if args.text is None:
            ap.error("--examples needs --text")
        sys.stdout.write(examples(systems, args.text, args.run, args.set, args.limit, args.json))
    else:
        sys.stdout.write(table(systems, args.runs, args.out_json, args.sets.split()))
        if args.significance:
            if args.text is None:
                ap.error("--significance needs --text")
            sys.stdout.write(significance(systems, args.runs, args.text, args.significance.split(),
                                          args.significance_trials, args.out_json))
    return 0


if __name__ == "__main__":
    sys.exit(main())
