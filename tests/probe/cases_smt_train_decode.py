"""Probe cases of smt-train-phrases, smt-kenlm, smt-decode and smt-tune (see ``tests/probe/__init__.py``).

Unusual but valid text (CRLF line ends, a byte order mark, a 5,000-token training line) must be read,
not refused: those runs exit 0 and are checked in ``tests/smt/cli/test_smt_valid_odd_input.py``.
"""
from __future__ import annotations

from pathlib import Path

from . import Case
from .cases_smt_neural import TABLE_FAULTS, TABLE_HEAD
from .faults import missing_or_directory, text

CASES: list[Case] = []

#: a 10-pair parallel corpus (tiny: eflomal and the extraction take well under a second)
TRAIN_SRC = ["s1 s2 s3", "s4 s5", "s6 s7 s8", "s9 s10", "s1 s4", "s2 s5 s6", "s3 s7", "s8 s9 s10", "s1 s10",
             "s5 s6"]
TRAIN_TGT = [line.replace("s", "t") for line in TRAIN_SRC]

#: faults of one corpus side: (label, bytes, 1-based line the message must name or None)
CORPUS_FAULTS: list[tuple[str, bytes, int | None]] = [
    ("non-utf8", text(TRAIN_SRC[:2]).encode() + b"s6 \xff\xfe s8\n" + text(TRAIN_SRC[3:]).encode(), 3),
    ("empty-line", text(TRAIN_SRC[:1] + [""] + TRAIN_SRC[2:]).encode(), 2),
    ("blank-line", text(TRAIN_SRC[:4] + [" \t "] + TRAIN_SRC[5:]).encode(), 5),
    ("empty-file", b"", None),
    ("bars-in-token", text(TRAIN_SRC[:6] + ["s3 |||x s7"] + TRAIN_SRC[7:]).encode(), 7),
]


def _line_of(text_: str, needle: str) -> int:
    """1-based number of the first line of ``text_`` that contains ``needle``."""
    for k, line in enumerate(text_.splitlines(), start=1):
        if needle in line:
            return k
    raise AssertionError(f"{needle!r} not in the text")


# ----------------------------------------------------------------------------- smt-train-phrases

def _train_cases() -> None:
    prog = "smt-train-phrases"
    src_ok = lambda ws: ws.file("train.src", text(TRAIN_SRC))  # noqa: E731
    tgt_ok = lambda ws: ws.file("train.tgt", text(TRAIN_TGT))  # noqa: E731
    out = lambda ws: ws.output("model")  # noqa: E731

    def args(ws, src, tgt, *extra):
        return ["--src", str(src), "--tgt", str(tgt), "--out-dir", str(out(ws)), "--processes", "1",
                "--eflomal-samplers", "1", *extra]

    for side in ("src", "tgt"):
        for label, content, line in CORPUS_FAULTS:
            if side == "tgt" and label in ("blank-line", "bars-in-token"):
                continue
            name = f"train.{side}.{label}"
            tgt_content = content.replace(b"s", b"t")

            def argv(ws, side=side, name=name, content=content, tgt_content=tgt_content):
                bad = ws.file(name, content if side == "src" else tgt_content)
                return args(ws, bad, tgt_ok(ws)) if side == "src" else args(ws, src_ok(ws), bad)

            CASES.append(Case(prog, f"{side}-{label}", argv, where=lambda ws, name=name, line=line: (name, line),
                              outputs=lambda ws: [out(ws)]))
    CASES.append(Case(
        prog, "both-empty",
        lambda ws: args(ws, ws.file("train.empty.src", ""), ws.file("train.empty.tgt", "")),
        where=lambda ws: ("train.empty.src", None), outputs=lambda ws: [out(ws)]))
    CASES.append(Case(
        prog, "misaligned",
        lambda ws: args(ws, src_ok(ws), ws.file("train.tgt.short", text(TRAIN_TGT[:9]))),
        where=lambda ws: ("train.tgt.short", 10), outputs=lambda ws: [out(ws)]))
    CASES.append(Case(
        prog, "src-missing", lambda ws: args(ws, ws.missing("nope.src"), tgt_ok(ws)),
        where=lambda ws: ("nope.src", None), outputs=lambda ws: [out(ws)]))
    CASES.append(Case(
        prog, "src-directory", lambda ws: args(ws, ws.folder("adir"), tgt_ok(ws)),
        where=lambda ws: ("adir", None), outputs=lambda ws: [out(ws)]))
    CASES.append(Case(
        prog, "alignment-out-of-range",
        lambda ws: args(ws, src_ok(ws), tgt_ok(ws), "--alignment",
                        str(ws.file("train.align.bad", "0-0 1-1 2-2\n0-0 1-1\n0-0 5-2\n" + "0-0\n" * 7))),
        where=lambda ws: ("train.align.bad", 3), outputs=lambda ws: [out(ws)]))
    CASES.append(Case(
        prog, "alignment-short",
        lambda ws: args(ws, src_ok(ws), tgt_ok(ws), "--alignment", str(ws.file("train.align.short", "0-0\n" * 8))),
        where=lambda ws: ("train.align.short", 9), outputs=lambda ws: [out(ws)]))
    CASES.append(Case(
        prog, "lm-missing",
        lambda ws: args(ws, src_ok(ws), tgt_ok(ws), "--lm", str(ws.missing("nope.arpa"))),
        where=lambda ws: ("nope.arpa", None), outputs=lambda ws: [out(ws)]))

    def into_own_folder(ws):  # the corpus lies in the output folder under the name of an output
        folder = ws.folder("trainout")
        src = ws.file("trainout/lex.f2e", text(TRAIN_SRC))
        return ["--src", str(src), "--tgt", str(tgt_ok(ws)), "--out-dir", str(folder), "--processes", "1"]

    CASES.append(Case(prog, "output-is-input", into_own_folder, where=lambda ws: ("lex.f2e", None)))


# ----------------------------------------------------------------------------- smt-kenlm

def _kenlm_cases() -> None:
    prog = "smt-kenlm"
    lm_text = text(["w1 w2 w3", "w2 w3", "w3 w1 w2 w4", "w4 w1"])
    prefix = lambda ws: ws.output("lm")  # noqa: E731
    outs = lambda ws: [ws.output("lm.arpa"), ws.output("lm.binary"), ws.output("lm.config.yaml")]  # noqa: E731

    def train(ws, text_path, *extra):
        return ["train", "--text", str(text_path), "--out-prefix", str(prefix(ws)), "--order", "2",
                "--memory", "64M", "--discount-fallback", *extra]

    CASES.append(Case(
        prog, "train-non-utf8", lambda ws: train(ws, ws.file("kenlm.train.bad", b"w1 w2\nw2 \xff w3\n")),
        where=lambda ws: ("kenlm.train.bad", 2), outputs=outs))
    CASES.append(Case(
        prog, "train-empty-file", lambda ws: train(ws, ws.file("kenlm.train.empty", "")),
        where=lambda ws: ("kenlm.train.empty", None), outputs=outs))
    CASES.append(Case(
        prog, "train-only-empty-lines", lambda ws: train(ws, ws.file("kenlm.train.blank", "\n \n\n")),
        where=lambda ws: ("kenlm.train.blank", None), outputs=outs))
    CASES.extend(missing_or_directory(prog, "train", "nope.txt",
                                      lambda ws, path: train(ws, path), outs))
    CASES.append(Case(
        prog, "train-truncated-gz", lambda ws: train(ws, ws.truncated_gz("kenlm.train.gz", lm_text * 300)),
        where=lambda ws: ("kenlm.train.gz", None), outputs=outs))
    CASES.append(Case(
        prog, "train-too-little-data",
        lambda ws: ["train", "--text", str(ws.file("kenlm.train.tiny", "w1 w2\n")), "--out-prefix",
                    str(prefix(ws)), "--order", "3", "--memory", "64M"],
        where=lambda ws: ("kenlm.train.tiny", None), outputs=outs))
    CASES.append(Case(
        prog, "train-unk-collision",
        lambda ws: train(ws, ws.file("kenlm.train.unk", "w1 <unk> w2\nw2 _unk_ w3\n")),
        where=lambda ws: ("kenlm.train.unk", None), outputs=outs))
    CASES.append(Case(
        prog, "train-output-is-input",
        lambda ws: ["train", "--text", str(ws.file("kenlm.own.arpa", lm_text)), "--out-prefix",
                    str(ws.inputs / "kenlm.own"), "--order", "2", "--memory", "64M", "--discount-fallback"],
        where=lambda ws: ("kenlm.own.arpa", None)))

    def evaluate(ws, model, text_path, *extra):
        return ["eval", "--model", str(model), "--text", str(text_path), *extra]

    CASES.append(Case(
        prog, "eval-non-utf8",
        lambda ws: evaluate(ws, ws.arpa, ws.file("kenlm.bad", b"x y\nx \xff y\n")),
        where=lambda ws: ("kenlm.bad", 2)))
    CASES.append(Case(
        prog, "eval-non-utf8-gz",
        lambda ws: evaluate(ws, ws.arpa, ws.file("kenlm.bad.gz", b"x y\ny x\nx \xff y\n")),
        where=lambda ws: ("kenlm.bad.gz", 3)))
    CASES.append(Case(
        prog, "eval-empty-file", lambda ws: evaluate(ws, ws.arpa, ws.file("kenlm.empty", "")),
        where=lambda ws: ("kenlm.empty", None)))
    CASES.append(Case(
        prog, "eval-text-missing", lambda ws: evaluate(ws, ws.arpa, ws.missing("nope.txt")),
        where=lambda ws: ("nope.txt", None)))
    CASES.append(Case(
        prog, "eval-text-directory", lambda ws: evaluate(ws, ws.arpa, ws.folder("adir")),
        where=lambda ws: ("adir", None)))
    CASES.append(Case(
        prog, "eval-model-missing", lambda ws: evaluate(ws, ws.missing("nope.arpa"), ws.decode_ref),
        where=lambda ws: ("nope.arpa", None)))
    CASES.append(Case(
        prog, "eval-model-directory", lambda ws: evaluate(ws, ws.folder("adir"), ws.decode_ref),
        where=lambda ws: ("adir", None)))
    CASES.append(Case(
        prog, "eval-model-not-arpa", lambda ws: evaluate(ws, ws.decode_input, ws.decode_ref),
        where=lambda ws: ("decode.in", None)))
    CASES.append(Case(
        prog, "eval-truncated-gz",
        lambda ws: evaluate(ws, ws.arpa, ws.truncated_gz("kenlm.eval.gz", "x y\n" * 2000)),
        where=lambda ws: ("kenlm.eval.gz", None)))
    CASES.append(Case(
        prog, "eval-json-is-input",
        lambda ws: evaluate(ws, ws.arpa, ws.decode_ref, "--json-out", str(ws.decode_ref)),
        where=lambda ws: ("decode.ref", None)))


# ----------------------------------------------------------------------------- smt-decode

def _ini_text(ws, table: Path | str, lm: Path | str | None = None, num_features: int = 4,
              weights: int | None = None) -> str:
    from smt_features.model.moses_ini_build import default_config

    text_ = default_config(str(table), str(lm or ws.arpa), lm_order=2).to_text()
    text_ = text_.replace("num-features=4", f"num-features={num_features}")
    n = num_features if weights is None else weights
    return text_.replace("TranslationModel0= 0.2 0.2 0.2 0.2", "TranslationModel0= " + " ".join(["0.2"] * n))


def _decode_cases() -> None:
    prog = "smt-decode"
    out = lambda ws: ws.output("decode.out")  # noqa: E731
    nbest = lambda ws: ws.output("decode.nbest")  # noqa: E731
    outs = lambda ws: [out(ws), nbest(ws)]  # noqa: E731

    def args(ws, ini=None, src=None, *extra):
        return ["--moses-ini", str(ini or ws.moses_ini), "--input", str(src or ws.decode_input), "--output",
                str(out(ws)), "--n-best-list", str(nbest(ws)), "2", "--progress", "false", *extra]

    for label, content, line in [
        ("non-utf8", b"a b\nb c\nb \xff a\n", 3),
        ("empty-file", b"", None),
        ("too-long-line", ("a b\n" + " ".join(["a", "b", "c"] * 1700) + "\n").encode(), 2),
    ]:
        name = f"decode.in.{label}"
        CASES.append(Case(
            prog, f"input-{label}", lambda ws, name=name, content=content: args(ws, src=ws.file(name, content)),
            where=lambda ws, name=name, line=line: (name, line), outputs=outs))
    CASES.extend(missing_or_directory(prog, "input", "nope.in",
                                      lambda ws, path: args(ws, src=path), outs))
    CASES.extend(missing_or_directory(prog, "config", "nope.ini",
                                      lambda ws, path: args(ws, ini=path), outs))
    CASES.append(Case(
        prog, "config-non-utf8",
        lambda ws: args(ws, ini=ws.file("decode.ini.non-utf8", b"[feature]\nWordPenalty\n# \xff\n")),
        where=lambda ws: ("decode.ini.non-utf8", 3), outputs=outs))
    # phrase tables with one malformed line, given to the decoder through a moses.ini
    for label, bad in TABLE_FAULTS:
        table = f"decode.table.{label}"
        ini = f"decode.ini.table-{label}"
        CASES.append(Case(
            prog, f"table-{label}",
            lambda ws, table=table, ini=ini, bad=bad: args(
                ws, ini=ws.file(ini, _ini_text(ws, ws.file(table, TABLE_HEAD + bad)))),
            where=lambda ws, table=table: (table, 2), outputs=outs))
    CASES.append(Case(
        prog, "table-truncated-gz",
        lambda ws: args(ws, ini=ws.file("decode.ini.trunc", _ini_text(
            ws, ws.truncated_gz("decode.table.trunc.gz", TABLE_HEAD * 400)))),
        where=lambda ws: ("decode.table.trunc.gz", None), outputs=outs))
    CASES.append(Case(
        prog, "table-empty",
        lambda ws: args(ws, ini=ws.file("decode.ini.empty-table", _ini_text(ws, ws.file("decode.table.empty", "")))),
        where=lambda ws: ("decode.table.empty", None), outputs=outs))
    # moses.ini that does not match its table, or names a file that is not there
    feature_line = lambda ws: _line_of(_ini_text(ws, ws.table), "PhraseDictionaryMemory")  # noqa: E731
    weight_line = lambda ws: _line_of(_ini_text(ws, ws.table), "TranslationModel0=")  # noqa: E731
    lm_line = lambda ws: _line_of(_ini_text(ws, ws.table), "KENLM")  # noqa: E731
    CASES.append(Case(
        prog, "ini-num-features-vs-table",
        lambda ws: args(ws, ini=ws.file("decode.ini.nf5", _ini_text(ws, ws.table, num_features=5))),
        where=lambda ws: ("decode.ini.nf5", feature_line(ws)), outputs=outs))
    CASES.append(Case(
        prog, "ini-weight-count",
        lambda ws: args(ws, ini=ws.file("decode.ini.w3", _ini_text(ws, ws.table, weights=3))),
        where=lambda ws: ("decode.ini.w3", weight_line(ws)), outputs=outs))
    CASES.append(Case(
        prog, "ini-missing-table",
        lambda ws: args(ws, ini=ws.file("decode.ini.notable", _ini_text(ws, ws.missing("nope.table")))),
        where=lambda ws: ("decode.ini.notable", feature_line(ws)), outputs=outs))
    CASES.append(Case(
        prog, "ini-missing-lm",
        lambda ws: args(ws, ini=ws.file("decode.ini.nolm", _ini_text(ws, ws.table, lm=ws.missing("nope.arpa")))),
        where=lambda ws: ("decode.ini.nolm", lm_line(ws)), outputs=outs))
    CASES.append(Case(
        prog, "ini-table-is-directory",
        lambda ws: args(ws, ini=ws.file("decode.ini.tabledir", _ini_text(ws, ws.folder("adir")))),
        where=lambda ws: ("decode.ini.tabledir", feature_line(ws)), outputs=outs))
    CASES.append(Case(
        prog, "weights-override-count",
        lambda ws: args(ws, None, None, "--weights-override", "LM0= 0.5 0.5"),
        where=lambda ws: ("--weights-override", None), outputs=outs))
    # an output that is an input: refused before anything is written.
    # (fault, --output, --n-best-list or None, the input the message names)
    same_file = [
        ("output-is-input", lambda ws: ws.decode_input, None, "decode.in"),
        ("nbest-is-input", out, lambda ws: ws.decode_input, "decode.in"),
        ("output-is-config", lambda ws: ws.moses_ini, None, "moses.ini"),
        ("output-is-table", out, lambda ws: ws.table, "toy.phrase-table"),
        ("output-is-nbest", nbest, nbest, "decode.nbest"),
    ]
    for fault, output, nbest_list, named in same_file:
        def argv(ws, output=output, nbest_list=nbest_list):
            extra = ["--n-best-list", str(nbest_list(ws)), "2"] if nbest_list else []
            return ["--moses-ini", str(ws.moses_ini), "--input", str(ws.decode_input), "--output", str(output(ws)),
                    *extra, "--progress", "false"]
        CASES.append(Case(prog, fault, argv, where=lambda ws, named=named: (named, None), outputs=outs))


# ----------------------------------------------------------------------------- smt-tune

def _tune_cases() -> None:
    prog = "smt-tune"
    work = lambda ws: ws.output("tune")  # noqa: E731

    def args(ws, ini=None, src=None, ref=None, work_dir=None):
        return ["--moses-ini", str(ini or ws.moses_ini), "--dev-src", str(src or ws.decode_input),
                "--dev-ref", str(ref or ws.decode_ref), "--work-dir", str(work_dir or work(ws)), "--nbest", "3",
                "--max-iterations", "1", "--restarts", "0", "--threads", "1", "--decoder-flags=--progress false"]

    outs = lambda ws: [work(ws)]  # noqa: E731
    CASES.append(Case(
        prog, "ref-count-mismatch", lambda ws: args(ws, ref=ws.file("dev.ref.short", "x y\n")),
        where=lambda ws: ("dev.ref.short", 2), outputs=outs))
    CASES.append(Case(
        prog, "ref-too-long", lambda ws: args(ws, ref=ws.file("dev.ref.long", "x y\ny z\nz x\n")),
        where=lambda ws: ("decode.in", 3), outputs=outs))
    CASES.append(Case(
        prog, "ref-non-utf8", lambda ws: args(ws, ref=ws.file("dev.ref.bad", b"x y\ny \xff x y\n")),
        where=lambda ws: ("dev.ref.bad", 2), outputs=outs))
    CASES.append(Case(
        prog, "ref-empty-line", lambda ws: args(ws, ref=ws.file("dev.ref.blank", "x y\n\n")),
        where=lambda ws: ("dev.ref.blank", 2), outputs=outs))
    CASES.append(Case(
        prog, "src-empty-line", lambda ws: args(ws, src=ws.file("dev.src.blank", "\nb c\n")),
        where=lambda ws: ("dev.src.blank", 1), outputs=outs))
    CASES.append(Case(
        prog, "both-empty",
        lambda ws: args(ws, src=ws.file("dev.src.empty", ""), ref=ws.file("dev.ref.empty", "")),
        where=lambda ws: ("dev.src.empty", None), outputs=outs))
    CASES.extend(missing_or_directory(prog, "src", "nope.src",
                                      lambda ws, path: args(ws, src=path), outs))
    CASES.append(Case(
        prog, "config-missing", lambda ws: args(ws, ini=ws.missing("nope.ini")),
        where=lambda ws: ("nope.ini", None), outputs=outs))
    CASES.append(Case(
        prog, "ini-missing-table",
        lambda ws: args(ws, ini=ws.file("decode.ini.notable", _ini_text(ws, ws.missing("nope.table")))),
        where=lambda ws: ("decode.ini.notable", _line_of(_ini_text(ws, ws.table), "PhraseDictionaryMemory")),
        outputs=outs))
    CASES.append(Case(
        prog, "ini-weight-count",
        lambda ws: args(ws, ini=ws.file("decode.ini.w3", _ini_text(ws, ws.table, weights=3))),
        where=lambda ws: ("decode.ini.w3", _line_of(_ini_text(ws, ws.table), "TranslationModel0=")),
        outputs=outs))
    # the decoder meets the bad table: its FILE:LINE message comes through (the work dir stays, to --resume)
    CASES.append(Case(
        prog, "table-zero-prob",
        lambda ws: args(ws, ini=ws.file("tune.ini.zero-prob", _ini_text(
            ws, ws.file("tune.table.zero-prob", TABLE_HEAD + TABLE_FAULTS[3][1])))),
        where=lambda ws: ("tune.table.zero-prob", 2)))

    def tuned_ini_is_config(ws):
        folder = ws.folder("tuneout")
        ini = ws.file("tuneout/moses.tuned.ini", _ini_text(ws, ws.table))
        return args(ws, ini=ini, work_dir=folder)

    CASES.append(Case(prog, "output-is-config", tuned_ini_is_config, where=lambda ws: ("moses.tuned.ini", None)))

    def ref_is_log(ws):
        folder = ws.folder("tuneout2")
        return args(ws, ref=ws.file("tuneout2/mert.log", "x y\ny z x y\n"), work_dir=folder)

    CASES.append(Case(prog, "output-is-ref", ref_is_log, where=lambda ws: ("mert.log", None)))


def _table_tool_cases() -> None:
    """smt-binarize-table and smt-filter-table on a table with a bad line; smt-decode on a stale sidecar."""
    for prog, label, bad in [("smt-binarize-table", "too-few-fields", "b ||| y\n"),
                             ("smt-binarize-table", "zero-prob", dict(TABLE_FAULTS)["zero-prob"]),
                             ("smt-filter-table", "zero-prob", dict(TABLE_FAULTS)["zero-prob"]),
                             ("smt-filter-table", "score-count", dict(TABLE_FAULTS)["score-count"])]:
        table = f"{prog}.table.{label}"
        out = lambda ws, prog=prog: ws.output(f"{prog}.out.gz")  # noqa: E731

        def argv(ws, prog=prog, table=table, bad=bad, out=out):
            t = ws.file(table, TABLE_HEAD + bad)
            extra = ["--input", str(ws.decode_input)] if prog == "smt-filter-table" else []
            return ["--table", str(t), *extra, "--output", str(out(ws)), "--progress", "false"]
        CASES.append(Case(prog, f"table-{label}", argv, where=lambda ws, table=table: (table, 2),
                          outputs=lambda ws, out=out: [out(ws)]))

    def stale(ws):
        import os

        from smt_features.model.binary_table import binarize_table

        t = ws.file("decode.table.stale", TABLE_HEAD)
        binarize_table(t, f"{t}.bin")
        mtime = t.stat().st_mtime_ns
        t.write_text(TABLE_HEAD.replace("0.5", "0.4", 1), encoding="utf-8")  # same size, other content
        os.utime(t, ns=(t.stat().st_atime_ns, mtime + 10**9))
        return ["--moses-ini", str(ws.file("decode.ini.stale", _ini_text(ws, t))), "--input", str(ws.decode_input),
                "--output", str(ws.output("decode.out")), "--progress", "false"]
    CASES.append(Case("smt-decode", "table-stale-binarized", stale, where=lambda ws: ("decode.table.stale.bin", None),
                      outputs=lambda ws: [ws.output("decode.out")]))


_train_cases()
_kenlm_cases()
_decode_cases()
_tune_cases()
_table_tool_cases()
