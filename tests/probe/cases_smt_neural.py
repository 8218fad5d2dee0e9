"""Probe cases of smt-rescore, smt-rescore-sharded, smt-inspect-phrases, smt-rerank and smt-report (see ``tests/probe/__init__.py``)."""
from __future__ import annotations

import shutil
import zlib
from pathlib import Path

from . import Case, Workspace

CASES: list[Case] = []

#: a good 4-score table line and damaged ones: (label, line text, 1-based line of the damage)
TABLE_HEAD = "a ||| x ||| 0.5 0.5 0.5 0.5 ||| 0-0 ||| 1 1 1 ||| |||\n"
TABLE_FAULTS = [
    ("too-few-fields", "b ||| y\n"),
    ("tabs-not-bars", "b\ty\t0.5 0.5 0.5 0.5\n"),
    ("score-count", "b ||| y ||| 0.5 0.5 0.2 ||| 0-0 ||| 1 1 1 ||| |||\n"),
    ("zero-prob", "b ||| y ||| 0.5 0.5 0 0.5 ||| 0-0 ||| 1 1 1 ||| |||\n"),
    ("prob-above-1", "b ||| y ||| 0.5 0.5 1.7 0.5 ||| 0-0 ||| 1 1 1 ||| |||\n"),
    ("bad-alignment", "b ||| y ||| 0.5 0.5 0.5 0.5 ||| 0-7 ||| 1 1 1 ||| |||\n"),
    ("empty-phrase", " ||| y ||| 0.5 0.5 0.5 0.5 ||| 0-0 ||| 1 1 1 ||| |||\n"),
]
NON_UTF8_TABLE = TABLE_HEAD.encode() + b"b \xff ||| y ||| 0.5 0.5 0.5 0.5 ||| 0-0 ||| 1 1 1 ||| |||\n"

#: 600 distinct lines (a repeated line compresses too well to cut the stream deep inside it)
TRUNC_TABLE = "".join(f"s{i} s{i * 7 % 13} ||| t{i} t{i * 3 % 11} ||| 0.{i % 9 + 1} 0.5 0.{(i * 5) % 9 + 1} 0.25 "
                      f"||| 0-0 1-1 ||| {i % 5 + 1} 1 1 ||| |||\n" for i in range(600))


def truncated_table(ws: Workspace) -> Path:
    return ws.truncated_gz("trunc.phrase-table.gz", TRUNC_TABLE)


def true_break_line(path: Path) -> int:
    """The 1-based line where a truncated gzip stream breaks: lines complete before the cut + 1."""
    data = zlib.decompressobj(31).decompress(path.read_bytes())
    return data.count(b"\n") + 1


def truncated_checkpoint(ws: Workspace, name: str, source: Path) -> Path:
    """A copy of a model folder whose ``checkpoint_last.pt`` is cut in half (``checkpoint_best.pt`` removed)."""
    out = ws.inputs / name
    if not out.exists():
        shutil.copytree(source, out)
        (out / "checkpoint_best.pt").unlink(missing_ok=True)
        ckpt = out / "checkpoint_last.pt"
        data = ckpt.read_bytes()
        ckpt.write_bytes(data[: len(data) // 2])
    return out


def mismatched_vocab(ws: Workspace, name: str, source: Path, vocab: str, other: str) -> Path:
    """A copy of a model folder whose vocabulary ``vocab`` is replaced by ``other`` (another fingerprint)."""
    out = ws.inputs / name
    if not out.exists():
        shutil.copytree(source, out)
        (out / "checkpoint_best.pt").unlink(missing_ok=True)
        (out / vocab).write_bytes((source / other).read_bytes())
    return out


def lm_other_vocab(ws: Workspace) -> Path:
    """An LM folder whose ``vocab.tsv`` lacks its last word (a vocabulary of another fingerprint)."""
    out = ws.inputs / "lm.badvocab"
    if not out.exists():
        shutil.copytree(ws.lm, out)
        (out / "checkpoint_best.pt").unlink(missing_ok=True)
        lines = (ws.lm / "vocab.tsv").read_text(encoding="utf-8").splitlines(keepends=True)
        (out / "vocab.tsv").write_text("".join(lines[:-1]), encoding="utf-8")
    return out


def _ckpt(ws: Workspace) -> tuple[str, None]:
    return ("checkpoint_last.pt", None)


def _src_vocab(ws: Workspace) -> tuple[str, None]:
    """A vocabulary that does not match its checkpoint: the message names the vocabulary file."""
    return ("src_vocab.tsv", None)


# -- smt-rescore ---------------------------------------------------------------------------------------------
def _rescore_cases() -> None:
    def base(ws, model=None):
        return ["--model", str(model or ws.model), "--checkpoint", "last", "--threads", "1", "--progress", "false"]

    out = lambda ws: ws.output("rescored.gz")  # noqa: E731
    outs = lambda ws: [out(ws), Path(f"{out(ws)}.rescore.json"), Path(f"{out(ws)}.parts"),  # noqa: E731
                       Path(f"{out(ws)}.lock")]

    def add(fault, table, where, model=None):
        CASES.append(Case(
            "smt-rescore", fault,
            lambda ws: [*base(ws, model(ws) if model else None), "--table", str(table(ws)), "--output",
                        str(out(ws))],
            where=where, outputs=outs))

    for label, bad in TABLE_FAULTS:
        name = f"table.{label}"
        add(f"table-{label}", lambda ws, name=name, bad=bad: ws.file(name, TABLE_HEAD + bad),
            lambda ws, name=name: (name, 2))
    add("table-truncated-gz", truncated_table,
        lambda ws: ("trunc.phrase-table.gz", true_break_line(truncated_table(ws))))
    add("table-non-utf8", lambda ws: ws.file("table.non-utf8", NON_UTF8_TABLE), lambda ws: ("table.non-utf8", 2))
    add("table-empty", lambda ws: ws.file("table.empty", b""), lambda ws: ("table.empty", None))
    add("table-empty-gz", lambda ws: ws.file("table.empty.gz", b""), lambda ws: ("table.empty.gz", None))
    add("table-missing", lambda ws: ws.missing("nope.phrase-table"), lambda ws: ("nope.phrase-table", None))
    add("table-directory", lambda ws: ws.folder("table.dir"), lambda ws: ("table.dir", None))
    add("truncated-checkpoint", lambda ws: ws.table, _ckpt,
        model=lambda ws: truncated_checkpoint(ws, "model.trunc", ws.model))
    add("vocab-mismatch", lambda ws: ws.table, _src_vocab,
        model=lambda ws: mismatched_vocab(ws, "model.badvocab", ws.model, "src_vocab.tsv", "tgt_vocab.tsv"))
    CASES.append(Case(
        "smt-rescore", "output-is-input",
        lambda ws: [*base(ws), "--table", str(ws.table), "--output", str(ws.table)],
        where=lambda ws: ("toy.phrase-table", None)))
    CASES.append(Case(
        "smt-rescore", "moses-ini-out-is-input",
        lambda ws: [*base(ws), "--table", str(ws.table), "--output", str(out(ws)), "--moses-ini", str(ws.moses_ini),
                    "--moses-ini-out", str(ws.moses_ini)],
        where=lambda ws: ("moses.ini", None), outputs=outs))
    CASES.append(Case(
        "smt-rescore", "output-is-a-folder",
        lambda ws: [*base(ws), "--table", str(ws.table), "--output", str(ws.folder("out.dir"))],
        where=lambda ws: ("out.dir", None)))


# -- smt-rescore-sharded -----------------------------------------------------------------------------------
def _sharded_cases() -> None:
    out = lambda ws: ws.output("merged.gz")  # noqa: E731

    def argv(table, model=None):
        return lambda ws: ["--shards", "2", "--output", str(out(ws)), "--table", str(table(ws)), "--model",
                           str(model(ws) if model else ws.model), "--checkpoint", "last", "--threads", "1",
                           "--progress", "false"]

    outs = lambda ws: [out(ws), Path(f"{out(ws)}.lock")]  # noqa: E731
    CASES.append(Case("smt-rescore-sharded", "table-missing", argv(lambda ws: ws.missing("nope.phrase-table")),
                      where=lambda ws: ("nope.phrase-table", None), outputs=outs))
    CASES.append(Case("smt-rescore-sharded", "table-directory", argv(lambda ws: ws.folder("table.dir")),
                      where=lambda ws: ("table.dir", None), outputs=outs))
    CASES.append(Case("smt-rescore-sharded", "table-empty", argv(lambda ws: ws.file("table.empty", b"")),
                      where=lambda ws: ("table.empty", None), outputs=outs))
    CASES.append(Case("smt-rescore-sharded", "model-missing",
                      argv(lambda ws: ws.table, lambda ws: ws.missing("model")),
                      where=lambda ws: ("model", None), outputs=outs))
    CASES.append(Case(
        "smt-rescore-sharded", "output-is-input",
        lambda ws: ["--shards", "2", "--output", str(ws.table), "--table", str(ws.table), "--model",
                    str(ws.model), "--checkpoint", "last"],
        where=lambda ws: ("toy.phrase-table", None)))
    # one case through real shard processes: the shard's FILE:LINE comes back, exit 2 (one shard: fast)
    CASES.append(Case(
        "smt-rescore-sharded", "table-score-count",
        lambda ws: ["--shards", "1", "--output", str(out(ws)), "--table",
                    str(ws.file("table.score-count", TABLE_HEAD + TABLE_FAULTS[2][1])), "--model", str(ws.model),
                    "--checkpoint", "last", "--threads", "1", "--progress", "false"],
        where=lambda ws: ("table.score-count", 2), outputs=outs))


# -- smt-inspect-phrases -----------------------------------------------------------------------------------
def _inspect_cases() -> None:
    out = lambda ws: ws.output("inspect.md")  # noqa: E731
    sources = lambda ws: ws.file("inspect.sources", "a\nb\n")  # noqa: E731

    def add(fault, table, where, src=sources, model=None, output=out, outputs=None):
        CASES.append(Case(
            "smt-inspect-phrases", fault,
            lambda ws: ["--table", str(table(ws)), "--model", str(model(ws) if model else ws.model),
                        "--checkpoint", "last", "--sources", str(src(ws)), "--generate", "1", "--beam-size", "2",
                        "--threads", "1", "--output", str(output(ws))],
            where=where, outputs=outputs or (lambda ws: [out(ws)])))

    for label, bad in TABLE_FAULTS:
        name = f"table.{label}"
        add(f"table-{label}", lambda ws, name=name, bad=bad: ws.file(name, TABLE_HEAD + bad),
            lambda ws, name=name: (name, 2))
    # the 3-score line is the only line of the inspected source 'b': refused all the same (it printed 0.2 as φ(e|f))
    add("table-score-count-other-source", lambda ws: ws.file("table.score-count", TABLE_HEAD + TABLE_FAULTS[2][1]),
        lambda ws: ("table.score-count", 2), src=lambda ws: ws.file("inspect.sources.b", "b\n"))
    add("table-truncated-gz", truncated_table,
        lambda ws: ("trunc.phrase-table.gz", true_break_line(truncated_table(ws))))
    add("table-non-utf8", lambda ws: ws.file("table.non-utf8", NON_UTF8_TABLE), lambda ws: ("table.non-utf8", 2))
    add("table-empty", lambda ws: ws.file("table.empty", b""), lambda ws: ("table.empty", None))
    add("table-missing", lambda ws: ws.missing("nope.phrase-table"), lambda ws: ("nope.phrase-table", None))
    add("table-directory", lambda ws: ws.folder("table.dir"), lambda ws: ("table.dir", None))
    add("sources-non-utf8", lambda ws: ws.table, lambda ws: ("inspect.sources.bad", 2),
        src=lambda ws: ws.file("inspect.sources.bad", b"a\nb \xff\n"))
    add("sources-empty", lambda ws: ws.table, lambda ws: ("inspect.sources.empty", None),
        src=lambda ws: ws.file("inspect.sources.empty", b""))
    add("sources-missing", lambda ws: ws.table, lambda ws: ("nope.sources", None),
        src=lambda ws: ws.missing("nope.sources"))
    add("truncated-checkpoint", lambda ws: ws.table, _ckpt,
        model=lambda ws: truncated_checkpoint(ws, "model.trunc", ws.model))
    add("vocab-mismatch", lambda ws: ws.table, _src_vocab,
        model=lambda ws: mismatched_vocab(ws, "model.badvocab", ws.model, "src_vocab.tsv", "tgt_vocab.tsv"))
    add("output-is-input", lambda ws: ws.table, lambda ws: ("inspect.sources", None), output=sources,
        outputs=lambda ws: [])


# -- smt-rerank --------------------------------------------------------------------------------------------
NBEST_GOOD = ("0 ||| x y  ||| LM0= -2.5 TM0= -1 -2 ||| -3.5\n"
              "0 ||| y x  ||| LM0= -3.5 TM0= -1 -2.5 ||| -4\n"
              "1 ||| y z  ||| LM0= -2 TM0= -0.5 -1 ||| -2.5\n")
NBEST_FAULTS = [  # (label, content, line)
    ("too-few-fields", NBEST_GOOD + "1 ||| z y  ||| LM0= -2\n", 4),
    ("bad-id", NBEST_GOOD + "x ||| z y  ||| LM0= -2 TM0= -1 -1 ||| -3\n", 4),
    ("bad-value", NBEST_GOOD + "1 ||| z y  ||| LM0= -2 TM0= -1 abc ||| -3\n", 4),
    ("bad-total", NBEST_GOOD + "1 ||| z y  ||| LM0= -2 TM0= -1 -1 ||| nan\n", 4),
    ("other-features", NBEST_GOOD + "1 ||| z y  ||| LM0= -2 ||| -3\n", 4),
    ("decreasing-id", NBEST_GOOD + "0 ||| z y  ||| LM0= -2 TM0= -1 -1 ||| -3\n", 4),
    ("non-utf8", NBEST_GOOD.encode() + b"1 ||| z \xff  ||| LM0= -2 TM0= -1 -1 ||| -3\n", 4),
    ("empty-line", NBEST_GOOD + "\n", 4),
    ("empty-file", "", None),
]


def _rerank_cases() -> None:
    out = lambda ws: ws.output("reranked.nbest")  # noqa: E731
    nbest = lambda ws: ws.file("rerank.nbest", NBEST_GOOD)  # noqa: E731
    src = lambda ws: ws.file("rerank.src", "s1 s2\ns3\n")  # noqa: E731
    lm_src = lambda ws: ws.file("rerank.lm.nbest", NBEST_GOOD.replace("x", "w1").replace("y", "w2")  # noqa: E731
                                .replace("z", "w3"))

    def add(fault, argv, where, outputs=lambda ws: [out(ws)]):
        CASES.append(Case("smt-rerank", fault, argv, where=where, outputs=outputs))

    for label, content, line in NBEST_FAULTS:
        name = f"rerank.nbest.{label}"
        add(f"nbest-{label}", lambda ws, name=name, content=content: ["--nbest", str(ws.file(name, content)),
                                                                       "--output", str(out(ws))],
            lambda ws, name=name, line=line: (name, line))
    trunc = lambda ws: ws.truncated_gz("rerank.nbest.gz", "".join(  # noqa: E731
        f"{i // 4} ||| h{i} g{i * 7 % 13}  ||| LM0= -{i % 9}.{i % 7} TM0= -1.{i} -2.{i % 11} ||| -{i}.5\n"
        for i in range(2000)))
    add("nbest-truncated-gz", lambda ws: ["--nbest", str(trunc(ws)), "--output", str(out(ws))],
        lambda ws: ("rerank.nbest.gz", true_break_line(trunc(ws))))
    add("nbest-missing", lambda ws: ["--nbest", str(ws.missing("nope.nbest")), "--output", str(out(ws))],
        lambda ws: ("nope.nbest", None))
    add("nbest-directory", lambda ws: ["--nbest", str(ws.folder("nbest.dir")), "--output", str(out(ws))],
        lambda ws: ("nbest.dir", None))
    add("src-non-utf8", lambda ws: ["--nbest", str(nbest(ws)), "--src", str(ws.file("rerank.src.bad", b"s1\n\xff\n")),
                                    "--output", str(out(ws))], lambda ws: ("rerank.src.bad", 2))
    add("src-too-short", lambda ws: ["--nbest", str(nbest(ws)), "--src", str(ws.file("rerank.src.short", "s1\n")),
                                     "--output", str(out(ws))], lambda ws: ("rerank.nbest", 3))
    add("weights-non-utf8", lambda ws: ["--nbest", str(nbest(ws)), "--weights",
                                        str(ws.file("rerank.weights.bad", b"LM0= 1\nTM0= 0.5 \xff\n")),
                                        "--output", str(out(ws))], lambda ws: ("rerank.weights.bad", 2))
    add("output-is-input", lambda ws: ["--nbest", str(nbest(ws)), "--output", str(nbest(ws))],
        lambda ws: ("rerank.nbest", None), outputs=lambda ws: [])
    add("one-best-is-src", lambda ws: ["--nbest", str(nbest(ws)), "--src", str(src(ws)), "--weights",
                                       str(ws.file("rerank.weights", "LM0= 1\nTM0= 0.5 0.5\n")),
                                       "--one-best", str(src(ws))],
        lambda ws: ("rerank.src", None), outputs=lambda ws: [])
    add("weights-out-is-ref", lambda ws: ["--nbest", str(nbest(ws)), "--tune", "--ref", str(src(ws)),
                                          "--weights-out", str(src(ws))],
        lambda ws: ("rerank.src", None), outputs=lambda ws: [])
    add("encdec-truncated-checkpoint",
        lambda ws: ["--nbest", str(nbest(ws)), "--src", str(src(ws)), "--checkpoint", "last", "--encdec",
                    f"RNN0={truncated_checkpoint(ws, 'model.trunc', ws.model)}", "--output", str(out(ws))], _ckpt)
    add("encdec-vocab-mismatch",
        lambda ws: ["--nbest", str(nbest(ws)), "--src", str(src(ws)), "--checkpoint", "last", "--encdec",
                    f"RNN0={mismatched_vocab(ws, 'model.badvocab', ws.model, 'src_vocab.tsv', 'tgt_vocab.tsv')}",
                    "--output", str(out(ws))], _src_vocab)
    add("lm-truncated-checkpoint",
        lambda ws: ["--nbest", str(lm_src(ws)), "--checkpoint", "last", "--lm",
                    f"LSTM0={truncated_checkpoint(ws, 'lm.trunc', ws.lm)}", "--output", str(out(ws))], _ckpt)
    add("lm-vocab-mismatch",
        lambda ws: ["--nbest", str(lm_src(ws)), "--checkpoint", "last", "--lm", f"LSTM0={lm_other_vocab(ws)}",
                    "--output", str(out(ws))], lambda ws: ("vocab.tsv", None))


# -- smt-report --------------------------------------------------------------------------------------------
def _report_cases() -> None:
    out = lambda ws: ws.output("report")  # noqa: E731
    exp = lambda ws: ws.folder("experiment")  # noqa: E731

    def add(fault, extra, where, experiment=exp):
        CASES.append(Case("smt-report", fault,
                          lambda ws: ["--experiment-dir", str(experiment(ws)), "--out", str(out(ws)), *extra(ws)],
                          where=where, outputs=lambda ws: [out(ws)]))

    add("experiment-missing", lambda ws: [], lambda ws: ("no-such-exp", None),
        experiment=lambda ws: ws.missing("no-such-exp"))
    add("experiment-is-a-file", lambda ws: [], lambda ws: ("exp.file", None),
        experiment=lambda ws: ws.file("exp.file", "x\n"))
    add("phrases-non-utf8", lambda ws: ["--phrases", str(ws.file("report.phrases", b"s1 s2\ns3 \xff\ns4\n"))],
        lambda ws: ("report.phrases", 2))
    add("phrases-missing", lambda ws: ["--phrases", str(ws.missing("nope.phrases"))],
        lambda ws: ("nope.phrases", None))
    add("phrases-directory", lambda ws: ["--phrases", str(ws.folder("phrases.dir"))], lambda ws: ("phrases.dir", None))
    add("phrases-empty", lambda ws: ["--phrases", str(ws.file("report.phrases.empty", b""))],
        lambda ws: ("report.phrases.empty", None))
    add("attention-sentences-non-utf8",
        lambda ws: ["--attention-sentences", str(ws.file("report.att", b"w1 w2\n\xfe w3\n"))],
        lambda ws: ("report.att", 2))
    add("phrase-model-truncated-checkpoint",
        lambda ws: ["--phrase-model", str(truncated_checkpoint(ws, "model.trunc", ws.model)), "--phrases",
                    str(ws.file("report.phrases.ok", "s1 s2\ns3\ns4 s5\n"))], _ckpt)
    add("phrase-model-vocab-mismatch",
        lambda ws: ["--phrase-model",
                    str(mismatched_vocab(ws, "model.badvocab", ws.model, "src_vocab.tsv", "tgt_vocab.tsv")),
                    "--phrases", str(ws.file("report.phrases.ok", "s1 s2\ns3\ns4 s5\n"))], _src_vocab)
    CASES.append(Case("smt-report", "out-is-a-file",
                     lambda ws: ["--experiment-dir", str(exp(ws)), "--out", str(ws.file("report.out.file", "x\n"))],
                     where=lambda ws: ("report.out.file", None)))
    CASES.append(Case(
        "smt-report", "screenshot-is-input",
        lambda ws: ["--experiment-dir", str(exp(ws)), "--out", str(out(ws)), "--phrases",
                    str(ws.file("report.phrases.ok", "s1 s2\ns3\ns4 s5\n")), "--screenshot",
                    str(ws.file("report.phrases.ok", "s1 s2\ns3\ns4 s5\n"))],
        where=lambda ws: ("report.phrases.ok", None), outputs=lambda ws: [out(ws)]))


_rescore_cases()
_sharded_cases()
_inspect_cases()
_rerank_cases()
_report_cases()
