"""Moses's own decoder on the project's system, against smt-decode, in the same run (issue 23's same-run anchor).

Both decoders read the same tuned moses.ini (the project writes Moses's format: PhraseDictionaryMemory on the
gzip phrase table, LexicalReordering on its gzip table, KENLM on the binary LM, the [weight] section) and the
same tokenized (truecased) input; each output is detruecased, detokenized and scored by sacreBLEU against the raw
references, exactly as the recipes score (`nmt-truecase --detruecase`, `nmt-evaluate --detokenize`). Reported:
BLEU and chrF of each, the number of identical 1-best lines, and decoding speed with model loading excluded:
each decoder runs once on the first sentence alone and once on all N, alternately, and its rate is
(N − 1) / (t_N − t_1). Moses is built from its public source (see docs/smt_core.md); this is a benchmark, not a
test: CI has no Moses.

    .venv/bin/python benchmarks/moses_anchor.py --moses /work/moses/bin/moses \\
        --moses-ini WORK/smt/tune.1/moses.tuned.ini --input WORK/smt/text/test_2016_flickr.en \\
        --references WORK/smt/text/test_2016_flickr.ref.fr --truecase --work /tmp/anchor --json anchor.json
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def timed(cmd: list[str], stdin: Path, stdout: Path, log: Path) -> float:
    """Wall seconds of ``cmd`` reading ``stdin`` into ``stdout`` (stderr into ``log``); a failure stops."""
    t0 = time.perf_counter()
    with open(stdin, "rb") as fin, open(stdout, "wb") as fout, open(log, "wb") as ferr:
        rc = subprocess.run(cmd, stdin=fin, stdout=fout, stderr=ferr).returncode
    seconds = time.perf_counter() - t0
    if rc != 0:
        raise SystemExit(f"moses_anchor.py: {cmd[0]} exited with {rc}; see {log}")
    return seconds


def score(hyp_tok: Path, refs: Path, truecase: bool, name: str, work: Path) -> dict:
    """BLEU / chrF of a tokenized hypothesis file, as the recipes score it."""
    if truecase:
        cased = hyp_tok.with_suffix(".cased")
        subprocess.run([str(BIN / "nmt-truecase"), "--detruecase", "--input", str(hyp_tok), "--output", str(cased)],
                       check=True)
        hyp_tok = cased
    out = work / f"{name}.scores.json"
    subprocess.run([str(BIN / "nmt-evaluate"), "--hyp", str(hyp_tok), "--detokenize", "fr", "--detok-out",
                    str(work / f"{name}.detok.fr"), "--ref", str(refs), "--name", name, "--json", str(out)],
                   check=True, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text(encoding="utf-8"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--moses", required=True, help="Moses's decoder binary (bin/moses of a mosesdecoder build)")
    ap.add_argument("--moses-ini", required=True, help="the project's tuned moses.ini")
    ap.add_argument("--input", required=True, help="tokenized (truecased) source text")
    ap.add_argument("--references", required=True, help="raw references, line-aligned")
    ap.add_argument("--truecase", action="store_true", help="the system is truecased: detruecase before scoring")
    ap.add_argument("--threads", type=int, default=1, help="threads of Moses / processes of smt-decode")
    ap.add_argument("--repeats", type=int, default=1, help="timed rounds (alternating the decoders)")
    ap.add_argument("--work", required=True, help="folder for the outputs")
    ap.add_argument("--json", default="", help="also write the figures here")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    lines = Path(args.input).read_text(encoding="utf-8").splitlines()
    first = work / "first.en"
    first.write_text(lines[0] + "\n", encoding="utf-8")
    n = len(lines)
    decoders = {
        "moses": lambda threads: [args.moses, "-f", args.moses_ini, "-threads", str(threads)],
        "smt-decode": lambda threads: [str(BIN / "smt-decode"), "--moses-ini", args.moses_ini, "--threads",
                                       str(threads), "--progress", "false"],
    }
    env_note = {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "")}
    times: dict[str, dict[str, list[float]]] = {d: {"one": [], "all": []} for d in decoders}
    for _ in range(args.repeats):
        for name, cmd in decoders.items():
            times[name]["one"].append(timed(cmd(args.threads), first, work / f"{name}.one.out",
                                            work / f"{name}.one.log"))
            times[name]["all"].append(timed(cmd(args.threads), Path(args.input), work / f"{name}.tok.fr",
                                            work / f"{name}.log"))
    result: dict = {"sentences": n, "threads": args.threads, "moses_ini": args.moses_ini, "env": env_note}
    outs = {}
    for name in decoders:
        hyp = work / f"{name}.tok.fr"
        outs[name] = hyp.read_text(encoding="utf-8").splitlines()
        if len(outs[name]) != n:
            raise SystemExit(f"moses_anchor.py: {hyp}: {len(outs[name])} lines for {n} inputs")
        t_one, t_all = min(times[name]["one"]), min(times[name]["all"])
        s = score(hyp, Path(args.references), args.truecase, name, work)
        result[name] = {"load_s": round(t_one, 2), "total_s": round(t_all, 2),
                        "sentences_per_s": round((n - 1) / max(t_all - t_one, 1e-9), 2),
                        "bleu": s.get("bleu"), "chrf": s.get("chrf"),
                        "bleu_signature": s.get("bleu_signature"), "chrf_signature": s.get("chrf_signature")}
    same = sum(a.split() == b.split() for a, b in zip(outs["moses"], outs["smt-decode"]))
    result["identical_1best"] = same
    result["speed_ratio_smt_decode_over_moses"] = round(result["smt-decode"]["sentences_per_s"]
                                                        / result["moses"]["sentences_per_s"], 2)
    text = json.dumps(result, indent=2, ensure_ascii=False)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
