"""nmt-translate vs fairseq-generate on the same RNNsearch weights: identical 1-bests, speed, BLEU.

Given an ``nmt-train`` RNNsearch model folder, this

1. exports it for fairseq: dictionaries in our vocabulary's order (``dict.src.txt``, ``dict.tgt.txt``:
   fairseq id i = our id i for every word, only the four specials are permuted, by the plugin's
   ``IdMap``) and a fairseq checkpoint of the plugin's ``rnnsearch_bahdanau`` model holding the same
   weights (``core.<our name>``; ``args`` for the architecture, every ``--rnnsearch-<field>`` set);
2. binarizes the first ``--lines`` source lines with ``fairseq-preprocess --only-source --srcdict``
   (no target: fairseq then orders the sentences by source length, ties by line, and cuts them into
   batches exactly as nmt-translate does);
3. runs, alternately in the same run, for each thread count: ``nmt-translate`` (beam 5, 32 sentences a
   batch) and ``fairseq-generate --beam 5 --batch-size 32 --max-len-a 2 --max-len-b 10 --lenpen 1
   --min-len 0 --required-batch-size-multiple 1 --cpu --num-workers 0``, each as a subprocess with
   ``OMP_NUM_THREADS`` = ``MKL_NUM_THREADS`` = threads (``--threads`` too for ours) and
   ``OMP_WAIT_POLICY=PASSIVE`` for both; wall time of the process, and each toolkit's own generation
   time without start-up (fairseq: its "Translated N sentences ... in" line, the sum over its
   ``inference_step`` calls; ours: the sum over the ``beam_search`` calls of the same ``cli_main`` that
   the ``nmt-translate`` script runs, timed by a wrapper around it);
4. compares the tokenized 1-bests (fairseq's ``H-`` lines put back in input order), and scores both,
   detokenized as ``nmt-translate``/``nmt-evaluate`` do (sacremoses, Moses entities unescaped), with
   sacreBLEU against the raw reference (``nmt.translation.evaluate.evaluate``, signature printed).

Two flags on the fairseq side make the searches the same (see docs/scale_out.md, "RNNsearch"):
``--min-len 0`` (fairseq's default 1 forbids ``</s>`` as the first token; our search allows the empty
translation) and ``--required-batch-size-multiple 1`` (fairseq 0.12's ``batch_by_size`` drops the last
batch when its size is not a multiple of that number, default 8: fairseq issue #5036). The one
difference no flag removes is the length limit, reported per sentence: nmt-translate closes a
hypothesis after 2·|src|+10 tokens (|src| of that sentence, EOS included) as it is, without ``</s>``;
fairseq-generate allows 2·S+10 tokens, S the longest source of the batch, and then forces ``</s>``.

    .venv/bin/python benchmarks/generate_vs_fairseq.py --model work/rnnsearch/model \\
        --src work/data/test_2016_flickr.tok.en --ref work/data/test_2016_flickr.fr --lines 1000
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as the nmt-* commands (nmt/cli/__init__.py), before torch

import torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PLUGIN_DIR = ROOT / "nmt" / "fairseq_plugin"
BIN = Path(sys.executable).parent
SRC, TGT = "src", "tgt"  # fairseq's language suffixes of the exported data (any two distinct names)
INT8 = "nmt-translate int8"  # --int8: nmt-translate --quantize-output int8

# nmt-translate's own cli_main (what the nmt-translate script runs), with the beam_search calls timed
OURS_WRAPPER = """
import sys, time
import nmt.cli  # sets OMP_WAIT_POLICY before torch, as the nmt-translate script does
import nmt.translation.translate as tr
from nmt.cli.translate import cli_main
spent = [0.0, 0]
search = tr.beam_search
def timed(*args, **kwargs):
    start = time.perf_counter()
    out = search(*args, **kwargs)
    spent[0] += time.perf_counter() - start
    spent[1] += len(out)
    return out
tr.beam_search = timed
status = cli_main(sys.argv[1:])
print(f"NMT-GENERATION {spent[0]:.6f} {spent[1]}", file=sys.stderr)
sys.exit(status)
"""
FAIRSEQ_TRANSLATED = re.compile(r"Translated ([\d,]+) sentences \(([\d,]+) tokens\) in [\d.]+s "
                                r"\(([\d.]+) sentences/s")


@dataclasses.dataclass
class Export:
    checkpoint: Path  # the fairseq checkpoint
    data: Path  # fairseq-preprocess'd folder (dict.src.txt, dict.tgt.txt, test.src-tgt.src.*)
    arch: str
    tgt_lang: str
    model_checkpoint: Path  # the nmt-train checkpoint it came from


@dataclasses.dataclass
class Run:
    tool: str
    threads: int
    wall: float  # seconds, the whole process
    own: float  # seconds of generation as the toolkit counts it (no start-up, no model loading)
    hyps: list[str]  # tokenized 1-best per input line


def _fairseq_env(threads: int) -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
            "OMP_WAIT_POLICY": "PASSIVE", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}


def _arch_of(cfg) -> str:
    """The plugin architecture whose preset has the model's sizes (the flags set every field anyway)."""
    from nmt.fairseq_plugin.rnnsearch import ARCHS
    from nmt.models.rnnsearch import config_with_preset

    for arch, preset in ARCHS.items():
        if dataclasses.asdict(config_with_preset(preset)) == {**dataclasses.asdict(cfg), "dropout": 0.0}:
            return arch
    return "rnnsearch_paper"


def write_fairseq_dict(vocab, path: Path) -> None:
    """fairseq's dict.txt (``word count`` per line, specials implicit) in our vocabulary's order."""
    lines = []
    for token, count in zip(vocab.tokens[4:], vocab.counts[4:]):
        lines.append(f"{token} {max(int(count), 1)}\n")
    path.write_text("".join(lines), encoding="utf-8")


def export(model: str | Path, work: Path, src_lines: list[str], *, checkpoint: str = "auto") -> Export:
    """Dictionaries + fairseq checkpoint of ``model`` and the binarized source in ``work``."""
    from fairseq import options
    from fairseq.data import Dictionary

    from nmt.data.vocab import Vocabulary
    from nmt.training.checkpoint import load_checkpoint
    from nmt.translation.model_io import load_translation_model

    loaded = load_translation_model(model, which=checkpoint)
    core = loaded.model
    if type(core).__name__ != "RNNsearch":
        raise SystemExit(f"{loaded.path}: a {type(core).__name__}, not an RNNsearch model (nmt-train --arch rnnsearch)")
    if not all(isinstance(v, Vocabulary) for v in (loaded.src_vocab, loaded.tgt_vocab)):
        raise SystemExit(f"{loaded.path}: SentencePiece vocabularies; this benchmark takes word (Moses) models")
    tgt_lang = load_checkpoint(loaded.path)["config"].get("data", {}).get("tgt_lang") or "fr"
    work.mkdir(parents=True, exist_ok=True)
    for side, vocab in ((SRC, loaded.src_vocab), (TGT, loaded.tgt_vocab)):
        write_fairseq_dict(vocab, work / f"dict.{side}.txt")
        fs_dict = Dictionary.load(str(work / f"dict.{side}.txt"))
        # the same id for every word: only <s> <pad> </s> <unk> (0-3 in both, in another order) are permuted
        if fs_dict.symbols[4:] != vocab.tokens[4:] or len(fs_dict) != len(vocab):
            raise SystemExit(f"{work}/dict.{side}.txt does not keep our vocabulary's order")
    arch = _arch_of(core.cfg)
    flags = []
    for field in dataclasses.fields(core.cfg):
        flags += [f"--rnnsearch-{field.name.replace('_', '-')}", str(getattr(core.cfg, field.name))]
    data = work / "bin"
    args = options.parse_args_and_arch(options.get_training_parser(), input_args=[
        str(data), "--user-dir", str(PLUGIN_DIR), "--task", "translation", "--source-lang", SRC,
        "--target-lang", TGT, "--arch", arch, *flags, "--cpu"])
    state = {"args": args, "cfg": None, "model": {f"core.{k}": v for k, v in core.state_dict().items()},
             "optimizer_history": [{"criterion_name": "CrossEntropyCriterion", "optimizer_name": "none",
                                    "lr_scheduler_state": {}, "num_updates": 0}],
             "extra_state": {"train_iterator": {"epoch": 1}}, "last_optimizer_state": None}
    fs_ckpt = work / "checkpoint_fairseq.pt"
    torch.save(state, fs_ckpt)
    # the source, binarized with our dictionary (no target: see the module's docstring)
    (work / f"test.{SRC}").write_text("".join(line + "\n" for line in src_lines), encoding="utf-8")
    if data.exists():
        shutil.rmtree(data)
    _run([str(BIN / "fairseq-preprocess"), "--only-source", "--source-lang", SRC, "--target-lang", TGT,
          "--testpref", str(work / "test"), "--srcdict", str(work / f"dict.{SRC}.txt"),
          "--destdir", str(data), "--workers", "1"], _fairseq_env(1))
    shutil.copy(work / f"dict.{TGT}.txt", data / f"dict.{TGT}.txt")
    return Export(fs_ckpt, data, arch, tgt_lang, loaded.path)


def _run(cmd: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess, float]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} {cmd[1]} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc, wall


def run_ours(model: str | Path, src_file: Path, out: Path, threads: int, *, checkpoint: str = "auto",
             beam: int = 5, batch_size: int = 32, int8: bool = False) -> Run:
    cmd = [sys.executable, "-c", OURS_WRAPPER, "--model", str(model), "--checkpoint", checkpoint,
           "--input", str(src_file), "--output", str(out), "--tokenized", "true", "--detokenize", "false",
           "--beam-size", str(beam), "--batch-size", str(batch_size), "--len-penalty", "1",
           "--threads", str(threads), "--quantize-output", "int8" if int8 else "none"]
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))  # this checkout's nmt
    env = {**_fairseq_env(threads), "PYTHONPATH": path}
    proc, wall = _run(cmd, env)
    own = re.search(r"NMT-GENERATION ([\d.]+) (\d+)", proc.stderr)
    if own is None:
        raise SystemExit("nmt-translate wrapper printed no generation time:\n" + proc.stderr[-2000:])
    hyps = out.read_text(encoding="utf-8").split("\n")[:-1]  # an empty line is an (empty) translation
    n = len(src_file.read_text(encoding="utf-8").split("\n")[:-1])
    if len(hyps) != n:
        raise SystemExit(f"nmt-translate wrote {len(hyps)} lines for {n} sentences")
    return Run(INT8 if int8 else "nmt-translate", threads, wall, float(own.group(1)), hyps)


def fairseq_command(exp: Export, *, beam: int = 5, batch_size: int = 32) -> list[str]:
    return [str(BIN / "fairseq-generate"), str(exp.data), "--user-dir", str(PLUGIN_DIR), "--path", str(exp.checkpoint),
            "--task", "translation", "--source-lang", SRC, "--target-lang", TGT, "--gen-subset", "test",
            "--beam", str(beam), "--batch-size", str(batch_size), "--max-len-a", "2", "--max-len-b", "10",
            "--lenpen", "1", "--min-len", "0", "--required-batch-size-multiple", "1", "--cpu", "--num-workers", "0"]


def run_fairseq(exp: Export, n: int, threads: int, *, beam: int = 5, batch_size: int = 32) -> Run:
    proc, wall = _run(fairseq_command(exp, beam=beam, batch_size=batch_size), _fairseq_env(threads))
    hyps: dict[int, str] = {}
    for line in proc.stdout.split("\n"):
        if line.startswith("H-"):
            sid, _score, text = line.split("\t", 2)
            hyps[int(sid[2:])] = text
    if sorted(hyps) != list(range(n)):
        raise SystemExit(f"fairseq-generate gave {len(hyps)} hypotheses for {n} sentences")
    own = FAIRSEQ_TRANSLATED.search(proc.stderr + proc.stdout)
    if own is None:
        raise SystemExit("fairseq-generate printed no 'Translated ... sentences' line:\n" + proc.stderr[-2000:])
    own_s = int(own.group(1).replace(",", "")) / float(own.group(3))
    return Run("fairseq-generate", threads, wall, own_s, [hyps[i] for i in range(n)])


def length_limits(src_lines: list[str], batch_size: int) -> tuple[list[int], list[int]]:
    """Per sentence: nmt-translate's limit 2·(|src|+1)+10, and fairseq-generate's 2·S+10, S the padded width of
    its batch (the same batches: length-sorted, ties by line, ``batch_size`` at a time)."""
    from nmt.data.batching import bucketed_batches

    lengths = [len(line.split()) + 1 for line in src_lines]
    ours = [2 * n + 10 for n in lengths]
    theirs = [0] * len(lengths)
    for batch in bucketed_batches(lengths, batch_size=batch_size, shuffle=False):
        width = max(lengths[i] for i in batch)
        for i in batch:
            theirs[i] = 2 * width + 10
    return ours, theirs


def explain(i: int, ours: str, theirs: str, limits: tuple[list[int], list[int]]) -> str:
    n_ours, n_theirs = len(ours.split()), len(theirs.split())
    if n_ours >= limits[0][i]:
        return f"ours cut at its length limit ({limits[0][i]} tokens, no </s>)"
    if n_theirs >= limits[1][i]:
        return f"fairseq forced </s> at its batch's length limit ({limits[1][i]} tokens)"
    return "neither at a length limit (search or rounding)"


def detokenize(hyps: list[str], lang: str) -> list[str]:
    """As nmt-translate (--detokenize true) and nmt-evaluate --detokenize do: sacremoses, entities unescaped."""
    from nmt.data.tokenize import MosesTokenizer

    tok = MosesTokenizer(lang)
    return [tok.detokenize(h.split()) for h in hyps]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="nmt-train RNNsearch model folder (as nmt-translate --model)")
    p.add_argument("--checkpoint", default="auto", help="best, last or auto (as nmt-translate)")
    p.add_argument("--src", required=True,
                   help="Moses-tokenized source, one sentence per line (nmt-prepare's <split>.tok.<src>)")
    p.add_argument("--ref", required=True, help="raw reference for sacreBLEU (nmt-prepare's <split>.<tgt>)")
    p.add_argument("--lines", type=int, default=1000, help="first N lines of --src / --ref")
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--repeats", type=int, default=1, help="rounds of (threads x both tools)")
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--work", default=str(ROOT / "work" / "generate_vs_fairseq"))
    p.add_argument("--show", type=int, default=5, help="print this many differing 1-bests")
    p.add_argument("--int8", action="store_true",
                   help="also run nmt-translate --quantize-output int8 in every round (a third row: its speed, "
                        "its 1-bests against fairseq's, its BLEU)")
    a = p.parse_args()

    from nmt.core.io import read_lines
    from nmt.translation.evaluate import evaluate

    work = Path(a.work)
    src_lines = read_lines(a.src)[:a.lines]
    refs = read_lines(a.ref)[:a.lines]
    if len(refs) != len(src_lines):
        raise SystemExit(f"{len(src_lines)} source lines but {len(refs)} reference lines")
    n = len(src_lines)
    print(f"== export {a.model} -> {work} ({n} sentences)")
    exp = export(a.model, work, src_lines, checkpoint=a.checkpoint)
    print(f"model checkpoint {exp.model_checkpoint}; fairseq --arch {exp.arch}; torch {torch.__version__}; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("fairseq-generate " + " ".join(fairseq_command(exp, beam=a.beam, batch_size=a.batch_size)[1:]))
    runs: list[Run] = []
    for rep in range(a.repeats):
        for threads in a.threads:
            order = ("ours", "fairseq") + (("int8",) if a.int8 else ())
            order = order if rep % 2 == 0 else order[::-1]
            for tool in order:
                if tool in ("ours", "int8"):
                    r = run_ours(a.model, work / f"test.{SRC}", work / f"{tool}.t{threads}.txt", threads,
                                 checkpoint=a.checkpoint, beam=a.beam, batch_size=a.batch_size, int8=tool == "int8")
                else:
                    r = run_fairseq(exp, n, threads, beam=a.beam, batch_size=a.batch_size)
                runs.append(r)
                print(f"  round {rep + 1} threads {threads} {r.tool:16s} wall {r.wall:7.2f} s "
                      f"({n / r.wall:7.1f} sent/s)  own {r.own:7.2f} s ({n / r.own:7.1f} sent/s)", flush=True)

    ours = next(r.hyps for r in runs if r.tool == "nmt-translate")
    theirs = next(r.hyps for r in runs if r.tool == "fairseq-generate")
    int8 = next((r.hyps for r in runs if r.tool == INT8), None)
    for r in runs:  # every run of a tool gives the same output (threads do not change it)
        if r.hyps != {"nmt-translate": ours, INT8: int8}.get(r.tool, theirs):
            print(f"  note: {r.tool} with {r.threads} threads gave other 1-bests than its first run")
    same = sum(x == y for x, y in zip(ours, theirs))
    print(f"\n== identical 1-best (tokenized): {same} of {n}")
    if int8 is not None:
        print(f"   {INT8} against fairseq-generate: {sum(x == y for x, y in zip(int8, theirs))} of {n}; "
              f"against nmt-translate (fp32): {sum(x == y for x, y in zip(int8, ours))} of {n}")
    limits = length_limits(src_lines, a.batch_size)
    diffs = [i for i in range(n) if ours[i] != theirs[i]]
    reasons: dict[str, int] = {}
    for i in diffs:
        why = explain(i, ours[i], theirs[i], limits).split(" (")[0]
        reasons[why] = reasons.get(why, 0) + 1
    for why, count in sorted(reasons.items(), key=lambda kv: -kv[1]):
        print(f"  {count} differ: {why}")
    for i in diffs[:a.show]:
        print(f"  line {i + 1}: {explain(i, ours[i], theirs[i], limits)}\n"
              f"    ours:    {ours[i]}\n    fairseq: {theirs[i]}")

    print("\n| threads | nmt-translate sent/s (wall / own) | fairseq-generate sent/s (wall / own) "
          "| ratio ours/fairseq (wall / own) |")
    print("|---|---|---|---|")
    for threads in a.threads:
        def rate(tool: str, attr: str) -> float:
            return statistics.median(n / getattr(r, attr) for r in runs if r.tool == tool and r.threads == threads)
        o_w, o_o, f_w, f_o = rate("nmt-translate", "wall"), rate("nmt-translate", "own"), \
            rate("fairseq-generate", "wall"), rate("fairseq-generate", "own")
        print(f"| {threads} | {o_w:.1f} / {o_o:.1f} | {f_w:.1f} / {f_o:.1f} | {o_w / f_w:.2f} / {o_o / f_o:.2f} |")
        if int8 is not None:
            q_w, q_o = rate(INT8, "wall"), rate(INT8, "own")
            print(f"| {threads}, {INT8} | {q_w:.1f} / {q_o:.1f} | {f_w:.1f} / {f_o:.1f} "
                  f"| {q_w / f_w:.2f} / {q_o / f_o:.2f} |")
    if a.repeats > 1:
        print(f"(medians over {a.repeats} rounds)")

    print("\n== sacreBLEU (detokenized with sacremoses as nmt-translate does, vs the raw reference)")
    for tool, hyps in (("nmt-translate", ours), ("fairseq-generate", theirs)) + (((INT8, int8),) if int8 else ()):
        res = evaluate(detokenize(hyps, exp.tgt_lang), refs)
        print(f"  {tool:16s} BLEU {res.bleu:6.2f}  chrF2 {res.chrf:6.2f}")
    print(f"  signature: {res.bleu_signature}")


if __name__ == "__main__":
    main()
