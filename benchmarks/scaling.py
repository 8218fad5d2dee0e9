"""Peak RSS and wall time of every pipeline stage at a given corpus size (``/usr/bin/time -v``), JSON + Markdown.

    python benchmarks/scaling.py --sizes 29k,216k,1M --stages prepare,kenlm --out DIR [--combined DIR]

Sizes: ``29k`` is Multi30k train (val / test_2016_flickr as dev / test), ``216k`` the combined real corpus of
``recipes/scaling/combine.sh`` (``--combined DIR``; made under ``DIR/corpora/216k`` when not given), any other
size (``1M``, ``3M``, ``100k``, ``5000``) a synthetic corpus of that many pairs from ``nmt-synthetic-corpus``
(seed 1; dev and test: 1,000 pairs each, seeds 2 and 3; gold alignment written).

Stages, in pipeline order (a stage a later one needs must have run, in this call or an earlier one):
synthesize (synthetic sizes only), prepare (``nmt-prepare`` on plain files), kenlm (``smt-kenlm train``,
5-gram), phrases (``smt-train-phrases``: eflomal + symmetrization + extraction + scoring), phrases_gold
(synthetic only: extraction + scoring from the gold alignment, no eflomal), binarize
(``smt-binarize-table``), filter (``smt-filter-table`` to the dev and test sources), nmt_train (``nmt-train
--phrase-table``, a few hundred updates of a small model, ``--nmt-flags``: the table read as a stream by
default), rescore (``smt-rescore`` of the filtered table when the filter stage ran, else the whole table),
decode (``smt-decode`` of 100 test sentences with the binarized table when the binarize stage ran, start-up
included; the decoder's own load time is recorded too), tune (``smt-tune``, one MERT iteration on 100 dev
sentences, its default ``--filter-table``). A stage whose command or flag does not exist is
recorded as "not available". Each stage keeps its work dir ``OUT/SIZE/STAGE/`` (``cmd.txt``, ``log.txt``,
``time.txt``); results accumulate in ``OUT/scaling.json`` and ``OUT/scaling.md`` (a stage already
measured is skipped unless ``--redo``). Peak RSS is ``/usr/bin/time``'s "Maximum resident set size": the
largest single process of the stage (children included one at a time, not summed); ``peak_rss_by_program``
breaks it down by program (``/proc`` sampled every 0.2 s: e.g. ``python``, ``eflomal``, ``sort``, ``lmplz``).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(os.environ.get("BIN", ROOT / ".venv" / "bin"))
DATA = Path(os.environ.get("MT_DATA", ROOT.parent / "shared" / "data"))
STAGES = ["synthesize", "prepare", "kenlm", "phrases", "phrases_gold", "binarize", "filter", "nmt_train", "rescore",
          "decode", "tune"]
REAL = {"29k", "216k"}


class NotAvailable(Exception):
    """The stage cannot run here (its command or a flag it needs is missing, or an earlier stage is)."""


def pairs_of(size: str) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmM]?)", size)
    if not m:
        raise SystemExit(f"scaling.py: bad size {size!r} (e.g. 29k, 216k, 1M, 5000)")
    return int(float(m.group(1)) * {"": 1, "k": 1000, "m": 1_000_000}[m.group(2).lower()])


def help_text(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd + ["--help"], capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def tool(name: str) -> str:
    path = BIN / name
    if not path.exists():
        raise NotAvailable(f"{name} is not installed")
    return str(path)


def lines(path: Path) -> int:
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def head(src: Path, dst: Path, n: int) -> Path:
    with open(src, encoding="utf-8") as f, open(dst, "w", encoding="utf-8") as g:
        for i, line in enumerate(f):
            if i >= n:
                break
            g.write(line)
    return dst


class Run:
    """One size's corpus, work dirs and stage commands."""

    def __init__(self, args: argparse.Namespace, size: str) -> None:
        self.args, self.size = args, size
        self.work = Path(args.out) / size
        self.corpus = Path(args.out) / "corpora" / size
        if size == "216k" and args.combined:
            self.corpus = Path(args.combined)
        self.synthetic = size not in REAL

    def stage_dir(self, stage: str) -> Path:
        return self.work / stage

    def done(self, stage: str, needed: str) -> Path:
        path = self.stage_dir(stage) / needed
        if not path.exists():
            raise NotAvailable(f"needs stage {stage} ({path} missing)")
        return path

    def ensure_real_corpus(self) -> None:
        """29k / 216k: plain files under the corpus dir (made here, not measured)."""
        if self.synthetic or (self.corpus / "test.fr").exists():
            return
        if self.size == "216k":
            subprocess.run([str(BIN / "nmt-combine-enfr"), "--out-dir", str(self.corpus), "--data", str(DATA)],
                           check=True, stdout=subprocess.DEVNULL)
            return
        self.corpus.mkdir(parents=True, exist_ok=True)
        for split, name in (("train", "train"), ("dev", "val"), ("test", "test_2016_flickr")):
            for lang in ("en", "fr"):
                with open(self.corpus / f"{split}.{lang}", "wb") as g:
                    subprocess.run(["gzip", "-dc", str(DATA / "multi30k" / f"{name}.{lang}.gz")], stdout=g, check=True)

    def text(self, split: str, lang: str) -> Path:
        """Tokenized text of a split: prepare's output when it ran, else the corpus file itself."""
        tok = self.stage_dir("prepare") / f"{split}.tok.{lang}"
        return tok if tok.exists() else self.corpus / f"{split}.{lang}"

    def table(self) -> tuple[Path, Path]:
        for stage in ("phrases", "phrases_gold"):
            ini = self.stage_dir(stage) / "moses.ini"
            if ini.exists():
                return self.stage_dir(stage) / "phrase-table.gz", ini
        raise NotAvailable("needs stage phrases or phrases_gold (no moses.ini)")

    def binarized_ini(self, ini: Path, w: Path) -> Path:
        """A moses.ini in ``w`` whose table is a link to the trained one with the binarize stage's sidecar beside
        it (the decoder opens ``T.gz.bin`` next to the ``T.gz`` it is given), or ``ini`` itself (no sidecar)."""
        table, _ = self.table()
        sidecar = self.stage_dir("binarize") / "phrase-table.gz.bin"
        if not sidecar.exists():
            return ini
        (w / "phrase-table.gz").symlink_to(table.resolve())
        (w / "phrase-table.gz.bin").symlink_to(sidecar.resolve())
        text = ini.read_text(encoding="utf-8").replace(f"path={table.resolve()}", f"path={w / 'phrase-table.gz'}")
        if f"path={w / 'phrase-table.gz'}" not in text:
            raise NotAvailable(f"{ini} does not name {table.resolve()}")
        (w / "moses.ini").write_text(text, encoding="utf-8")
        return w / "moses.ini"

    def command(self, stage: str, w: Path) -> list[str]:
        a = self.args
        if stage == "synthesize":
            if not self.synthetic:
                raise NotAvailable("real corpus (synthetic sizes only)")
            gen = tool("nmt-synthetic-corpus")
            for split, seed, n in (("dev", 2, 1000), ("test", 3, 1000)):
                subprocess.run([gen, "--out-prefix", str(self.corpus / split), "--pairs", str(n), "--seed", str(seed)],
                               check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return [gen, "--out-prefix", str(self.corpus / "train"), "--pairs", str(pairs_of(self.size)),
                    "--seed", "1", "--alignment"]
        if self.synthetic and not (self.corpus / "train.align").exists():
            raise NotAvailable("needs stage synthesize")
        if stage == "prepare":
            prep = tool("nmt-prepare")
            if "--train " in help_text([prep]) or "--train TRAIN" in help_text([prep]):
                return [prep, "--train", str(self.corpus / "train"), "--dev", str(self.corpus / "dev"),
                        "--test", str(self.corpus / "test"), "--src", "en", "--tgt", "fr", "--out-dir", str(w)]
            decl = w / "corpus.yaml"  # a corpus declaration (nmt.data.corpora.load_corpus) for the plain files
            decl.write_text(f"name: scaling-{self.size}\nfolder: {self.corpus.resolve()}\nlanguages: [en, fr]\n"
                            "splits: {train: train, dev: dev, test: test}\n", encoding="utf-8")
            return [prep, "--corpus", str(decl), "--train-split", "train", "--dev-split", "dev",
                    "--test-splits", "test", "--out-dir", str(w)]
        if stage == "kenlm":
            return [tool("smt-kenlm"), "train", "--text", str(self.text("train", "fr")), "--out-prefix",
                    str(w / "fr5"), "--order", "5", "--memory", a.kenlm_memory] + shlex.split(a.kenlm_flags)
        if stage in ("phrases", "phrases_gold"):
            gold = stage == "phrases_gold"  # the corpus files themselves: the gold alignment lines up with them
            src, tgt = ((self.corpus / "train.en", self.corpus / "train.fr") if gold
                        else (self.text("train", "en"), self.text("train", "fr")))
            cmd = [tool("smt-train-phrases"), "--src", str(src), "--tgt", str(tgt), "--out-dir", str(w),
                   "--processes", str(a.threads)]
            lm = self.stage_dir("kenlm") / "fr5.binary"
            if lm.exists():
                cmd += ["--lm", str(lm)]
            if stage == "phrases_gold":
                if not self.synthetic:
                    raise NotAvailable("real corpus: no gold alignment")
                cmd += ["--alignment", str(self.corpus / "train.align")]
            return cmd + shlex.split(a.phrases_flags)
        if stage == "binarize":
            table, _ = self.table()
            return [tool("smt-binarize-table"), "--table", str(table), "--output", str(w / "phrase-table.gz.bin"),
                    "--progress", "false"]
        if stage == "filter":
            table, _ = self.table()
            return [tool("smt-filter-table"), "--table", str(table), "--input", str(self.text("dev", "en")),
                    str(self.text("test", "en")), "--output", str(w / "phrase-table.filtered.gz")]
        if stage == "nmt_train":
            table, _ = self.table()
            extra = shlex.split(a.nmt_flags)
            prep = self.stage_dir("prepare")
            self.done("prepare", "vocab.en.tsv")
            return [tool("nmt-train"), "--data-dir", str(prep), "--dev-src", str(prep / "dev.tok.en"),
                    "--dev-tgt", str(prep / "dev.tok.fr"), "--phrase-table", str(table), "--out-dir", str(w),
                    "--emb-dim", "64", "--hidden-dim", "128", "--maxout-units", "64", "--max-updates",
                    str(a.nmt_updates), "--eval-every", str(a.nmt_updates), "--threads", str(a.threads),
                    "--device", "cpu", "--progress", "false"] + extra
        if stage == "rescore":
            table, _ = self.table()
            filtered = self.stage_dir("filter") / "phrase-table.filtered.gz"
            table = filtered if filtered.exists() else table
            model = self.done("nmt_train", "")
            return [tool("smt-rescore"), "--table", str(table), "--model", str(model), "--output",
                    str(w / "phrase-table.rnn.gz"), "--threads", str(a.threads), "--progress", "false"]
        if stage == "decode":
            _, ini = self.table()
            src = head(self.text("test", "en"), w / "input.en", a.decode_lines)
            ini = self.binarized_ini(ini, w)
            return [tool("smt-decode"), "-f", str(ini), "--input", str(src), "--output", str(w / "output.fr"),
                    "--threads", str(a.threads)]
        if stage == "tune":
            _, ini = self.table()
            src = head(self.text("dev", "en"), w / "dev.en", a.tune_lines)
            ref = head(self.text("dev", "fr"), w / "dev.fr", a.tune_lines)
            return [tool("smt-tune"), "--moses-ini", str(ini), "--dev-src", str(src), "--dev-ref", str(ref),
                    "--work-dir", str(w / "mert"), "--max-iterations", "1", "--nbest", "20", "--restarts", "2",
                    "--threads", str(a.threads)]
        raise SystemExit(f"scaling.py: unknown stage {stage!r}; known: {','.join(STAGES)}")


def parse_time(path: Path) -> dict[str, float]:
    text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
    out: dict[str, float] = {}
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    if m:
        out["peak_rss_mib"] = round(int(m.group(1)) / 1024, 1)
    m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", text)
    if m:
        secs = 0.0
        for part in m.group(1).split(":"):
            secs = secs * 60 + float(part)
        out["wall_s"] = round(secs, 2)
    return out


def _descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (from ``/proc/*/stat``)."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat", encoding="utf-8", errors="replace") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def _sample_rss(pid: int, peaks: dict[str, float]) -> None:
    """Raise ``peaks[program]`` (MiB) to the current RSS of every process of the tree under ``pid``."""
    for p in _descendants(pid):
        try:
            with open(f"/proc/{p}/status", encoding="utf-8", errors="replace") as f:
                status = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        name = status.get("Name", "?").strip()
        rss = status.get("VmRSS", "").strip().split()
        if name != "time" and rss:
            peaks[name] = max(peaks.get(name, 0.0), round(int(rss[0]) / 1024, 1))


def measure(run: Run, stage: str) -> dict[str, object]:
    """Run one stage under /usr/bin/time -v (and the --stage-timeout); its record."""
    w = run.stage_dir(stage)
    if w.exists():
        shutil.rmtree(w)
    w.mkdir(parents=True)
    run.corpus.mkdir(parents=True, exist_ok=True)
    try:
        run.ensure_real_corpus()
        cmd = run.command(stage, w)
    except NotAvailable as why:
        shutil.rmtree(w)
        return {"status": "not available", "why": str(why)}
    (w / "cmd.txt").write_text(shlex.join(cmd) + "\n", encoding="utf-8")
    full = ["/usr/bin/time", "-v", "-o", str(w / "time.txt")] + cmd
    t0 = time.monotonic()
    with open(w / "log.txt", "wb") as log:
        proc = subprocess.Popen(full, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        peaks: dict[str, float] = {}
        try:
            while True:
                try:
                    rc = proc.wait(timeout=0.2)
                    break
                except subprocess.TimeoutExpired:
                    _sample_rss(proc.pid, peaks)
                    if time.monotonic() - t0 > run.args.stage_timeout:
                        raise
            status = "ok" if rc == 0 else f"failed (exit {rc})"
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            status = f"timed out after {run.args.stage_timeout} s (killed)"
    record: dict[str, object] = {"status": status, "command": shlex.join(cmd),
                                 "wall_s": round(time.monotonic() - t0, 2)}
    record.update(parse_time(w / "time.txt"))
    record["peak_rss_by_program"] = dict(sorted(peaks.items(), key=lambda kv: -kv[1]))
    load = re.search(r"\[smt-decode\] loaded .* in ([\d.]+) s", (w / "log.txt").read_text(errors="replace"))
    if load:
        record["decoder_load_s"] = float(load.group(1))
    train = run.text("train", "en")
    if train.exists():
        record["train_pairs"] = lines(train)
    return record


def _ratio(value: object, ref: object) -> str:
    return f"{float(value) / float(ref):.2f}" if isinstance(value, float | int) and isinstance(ref, float | int) \
        and ref else ""


def _programs(r: dict[str, object]) -> str:
    """The three largest programs of a stage by peak RSS (and the decoder's own load time)."""
    peaks = r.get("peak_rss_by_program") or {}
    text = ", ".join(f"{name} {mib:g}" for name, mib in list(peaks.items())[:3]) if isinstance(peaks, dict) else ""
    if "decoder_load_s" in r:
        text += f"; decoder load {r['decoder_load_s']} s"
    return text


def markdown(results: dict[str, dict[str, dict[str, object]]]) -> str:
    """The table; the ratios are against the same stage at the smallest size measured ok (same machine)."""
    out = ["| size | stage | status | train pairs | wall (s) | peak RSS (MiB) | wall / ref | RSS / ref | "
           "largest programs (MiB) | command |",
           "|---|---|---|---:|---:|---:|---:|---:|---|---|"]
    ref: dict[str, dict[str, object]] = {}
    for size in sorted(results, key=pairs_of):
        for stage, r in results[size].items():
            if r.get("status") == "ok":
                ref.setdefault(stage, r)
    for size, stages in results.items():
        for stage in STAGES:
            r = stages.get(stage)
            if r is None:
                continue
            status = r["status"] if r["status"] != "not available" else f"not available: {r.get('why', '')}"
            cmd = f"`{r['command']}`" if "command" in r else ""
            out.append(f"| {size} | {stage} | {status} | {r.get('train_pairs', '')} | {r.get('wall_s', '')} | "
                       f"{r.get('peak_rss_mib', '')} | {_ratio(r.get('wall_s'), ref.get(stage, {}).get('wall_s'))} | "
                       f"{_ratio(r.get('peak_rss_mib'), ref.get(stage, {}).get('peak_rss_mib'))} | "
                       f"{_programs(r)} | {cmd} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="29k,216k", help="comma-separated: 29k, 216k, or N pairs (1M, 3M, 5000)")
    p.add_argument("--stages", default=",".join(STAGES), help=f"comma-separated subset of {','.join(STAGES)}")
    p.add_argument("--out", required=True, help="work dirs, corpora, scaling.json and scaling.md")
    p.add_argument("--combined", default="", help="the combined corpus made by recipes/scaling/combine.sh")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--stage-timeout", type=int, default=3600, help="seconds before a stage is killed")
    p.add_argument("--kenlm-memory", default="1G", help="smt-kenlm --memory (lmplz -S)")
    p.add_argument("--kenlm-flags", default="", help="extra smt-kenlm train flags (e.g. --discount-fallback)")
    p.add_argument("--phrases-flags", default="", help="extra smt-train-phrases flags (e.g. a streaming knob)")
    p.add_argument("--nmt-updates", type=int, default=200)
    p.add_argument("--nmt-flags", default="--stream-buffer 100000",
                   help="extra nmt-train flags (default: the table read as a stream, windows of 100k pairs)")
    p.add_argument("--decode-lines", type=int, default=100)
    p.add_argument("--tune-lines", type=int, default=100)
    p.add_argument("--redo", action="store_true", help="measure stages again even if recorded")
    args = p.parse_args(argv)
    stages = [s for s in args.stages.split(",") if s]
    bad = [s for s in stages if s not in STAGES]
    if bad:
        print(f"scaling.py: unknown stage(s) {bad}; known: {','.join(STAGES)}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    store = out / "scaling.json"
    results = json.loads(store.read_text(encoding="utf-8")) if store.exists() else {}
    for size in [s for s in args.sizes.split(",") if s]:
        pairs_of(size)
        run = Run(args, size)
        for stage in [s for s in STAGES if s in stages]:
            old = results.get(size, {}).get(stage)
            if old and old.get("status") == "ok" and not args.redo:
                continue
            print(f"== {size} {stage}", flush=True)
            record = measure(run, stage)
            print(f"   {json.dumps(record)}", flush=True)
            results.setdefault(size, {})[stage] = record
            store.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
            (out / "scaling.md").write_text(markdown(results), encoding="utf-8")
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
