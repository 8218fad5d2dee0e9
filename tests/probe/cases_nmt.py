"""Probe cases of the ``nmt-*`` commands (see ``tests/probe/__init__.py``).

Every command that reads user files meets the faults that apply to it: a bad byte, an empty line,
an empty file (and both sides empty), misaligned parallel files, a folder or a missing path where a
file is expected, a 5,000-token line, a truncated checkpoint, a vocabulary that is not the model's,
a malformed ``--config``, and an output that is one of the inputs. Text that is unusual but valid
(CRLF line ends, a byte order mark) is read, not refused: those cases expect exit status 0 where the
command says what it did on stderr; the silent filters (``nmt-score``, ``nmt-translate``,
``nmt-evaluate``, ``nmt-lm-score``, ``nmt-lm-eval``) are checked for it in
``tests/nmt/cli/test_nothing_lost_nmt.py`` instead, together with their output.

``nmt-prepare`` reads the corpus registry (``$MT_DATA``), which a case cannot point elsewhere; its
data faults are tested in ``tests/nmt/cli/test_nothing_lost_nmt.py``.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from . import Case, Workspace
from .faults import CRLF_BOM, GOOD_SRC, GOOD_TGT, LINE_FAULTS, LONG_LINE, MALFORMED_YAML, SHORT, text, truncated

CASES: list[Case] = []

_NON_UTF8, _EMPTY_LINE, _EMPTY_FILE = LINE_FAULTS  # (label, content, line)


def _case(prog: str, fault: str, argv, where=None, outputs=lambda ws: [], status: int = 2) -> None:
    CASES.append(Case(prog, fault, argv, where=where, outputs=outputs, status=status))


def _bad_yaml(ws: Workspace) -> Path:
    return ws.file("bad-config.yaml", MALFORMED_YAML[0])


def _yaml_where(ws: Workspace) -> tuple[str, int | None]:
    return "bad-config.yaml", MALFORMED_YAML[1]


def _copy_of(ws: Workspace, source: Path, name: str, change) -> Path:
    """A copy of the model folder ``source`` as ``in/NAME``, damaged once by ``change(folder)``."""
    dest = ws.inputs / name
    if not dest.exists():
        shutil.copytree(source, dest)
        change(dest)
    return dest


def _truncate_last(folder: Path) -> None:
    (folder / "checkpoint_best.pt").unlink(missing_ok=True)
    last = folder / "checkpoint_last.pt"
    last.write_bytes(truncated(last.read_bytes()))


def _nmt_truncated(ws: Workspace) -> Path:
    return _copy_of(ws, ws.model, "model-truncated", _truncate_last)


def _nmt_wrong_vocab(ws: Workspace) -> Path:
    """A model folder whose source vocabulary is the target side's (a mix-up when copying models)."""
    return _copy_of(ws, ws.model, "model-wrong-vocab",
                    lambda d: shutil.copyfile(d / "tgt_vocab.tsv", d / "src_vocab.tsv"))


def _lm_truncated(ws: Workspace) -> Path:
    return _copy_of(ws, ws.lm, "lm-truncated", _truncate_last)


def _other_vocab(ws: Workspace) -> Path:
    from nmt.data.vocab import Vocabulary

    path = ws.inputs / "other.vocab.tsv"
    if not path.exists():
        Vocabulary.build([["a", "b", "c"]], max_size=None).save(path)
    return path


# ----------------------------------------------------------------------------------- nmt-score
def _score_cases() -> None:
    prog = "nmt-score"

    def base(ws, model=None):
        return ["--model", str(model or ws.model), "--checkpoint", "last", "--threads", "1"]

    src_ok = lambda ws: ws.file("score.src", text(GOOD_SRC))  # noqa: E731
    tgt_ok = lambda ws: ws.file("score.tgt", text(GOOD_TGT))  # noqa: E731
    out = lambda ws: ws.output("scores.txt")  # noqa: E731
    outs = lambda ws: [out(ws)]  # noqa: E731

    def pair(src, tgt, model=None):
        return lambda ws: [*base(ws, model(ws) if model else None), "--src", str(src(ws)), "--tgt", str(tgt(ws)),
                           "--output", str(out(ws))]

    for side in ("src", "tgt"):
        for label, content, line in LINE_FAULTS:
            name = f"score.{side}.{label}"
            bad = lambda ws, name=name, content=content: ws.file(name, content)  # noqa: E731
            argv = pair(bad, tgt_ok) if side == "src" else pair(src_ok, bad)
            _case(prog, f"{side}-{label}", argv, where=lambda ws, name=name, line=line: (name, line), outputs=outs)
    _case(prog, "misaligned", pair(src_ok, lambda ws: ws.file("score.tgt.short", SHORT)),
          where=lambda ws: ("score.tgt.short", 4), outputs=outs)
    _case(prog, "misaligned-src-short", pair(lambda ws: ws.file("score.src.short", text(GOOD_SRC[:3])), tgt_ok),
          where=lambda ws: ("score.src.short", 4), outputs=outs)
    _case(prog, "both-empty",
          pair(lambda ws: ws.file("score.src.empty", ""), lambda ws: ws.file("score.tgt.empty", "")),
          where=lambda ws: ("score.src.empty", None), outputs=outs)
    _case(prog, "src-missing", pair(lambda ws: ws.missing("nope.src"), tgt_ok),
          where=lambda ws: ("nope.src", None), outputs=outs)
    _case(prog, "src-directory", pair(lambda ws: ws.folder("adir"), tgt_ok), where=lambda ws: ("adir", None),
          outputs=outs)
    _case(prog, "output-is-input",
          lambda ws: [*base(ws), "--src", str(src_ok(ws)), "--tgt", str(tgt_ok(ws)), "--output", str(tgt_ok(ws))],
          where=lambda ws: ("score.tgt", None))
    _case(prog, "output-is-src",
          lambda ws: [*base(ws), "--src", str(src_ok(ws)), "--tgt", str(tgt_ok(ws)), "--output", str(src_ok(ws))],
          where=lambda ws: ("score.src", None))
    _case(prog, "model-missing", pair(src_ok, tgt_ok, model=lambda ws: ws.missing("model")),
          where=lambda ws: ("model", None), outputs=outs)
    _case(prog, "truncated-checkpoint", pair(src_ok, tgt_ok, model=_nmt_truncated),
          where=lambda ws: ("checkpoint_last.pt", None), outputs=outs)
    _case(prog, "vocab-mismatch", pair(src_ok, tgt_ok, model=_nmt_wrong_vocab),
          where=lambda ws: ("src_vocab.tsv", None), outputs=outs)
    _case(prog, "config-malformed", lambda ws: [*pair(src_ok, tgt_ok)(ws), "--config", str(_bad_yaml(ws))],
          where=_yaml_where, outputs=outs)


# ------------------------------------------------------------------------------- nmt-translate
def _translate_cases() -> None:
    prog = "nmt-translate"
    out = lambda ws: ws.output("hyp.txt")  # noqa: E731
    outs = lambda ws: [out(ws)]  # noqa: E731
    good = lambda ws: ws.file("translate.in", text(GOOD_SRC))  # noqa: E731

    def run(inp, model=None):
        return lambda ws: ["--model", str(model(ws) if model else ws.model), "--checkpoint", "last", "--threads", "1",
                           "--tokenized", "true", "--beam-size", "2", "--input", str(inp(ws)),
                           "--output", str(out(ws))]

    for label, content, line in LINE_FAULTS:
        name = f"translate.in.{label}"
        _case(prog, f"input-{label}", run(lambda ws, name=name, content=content: ws.file(name, content)),
              where=lambda ws, name=name, line=line: (name, line), outputs=outs)
    _case(prog, "input-missing", run(lambda ws: ws.missing("nope.in")), where=lambda ws: ("nope.in", None),
          outputs=outs)
    _case(prog, "input-directory", run(lambda ws: ws.folder("adir")), where=lambda ws: ("adir", None), outputs=outs)
    _case(prog, "long-line", run(lambda ws: ws.file("translate.in.long", LONG_LINE)),
          where=lambda ws: ("translate.in.long", 2), outputs=outs)
    _case(prog, "output-is-input",
          lambda ws: [*run(good)(ws)[:-2], "--output", str(good(ws))], where=lambda ws: ("translate.in", None))
    _case(prog, "attention-is-input", lambda ws: [*run(good)(ws), "--attention", str(good(ws))],
          where=lambda ws: ("translate.in", None), outputs=outs)
    _case(prog, "attention-of-rnnenc", lambda ws: [*run(good)(ws), "--attention", str(ws.output("hyp.attn"))],
          where=lambda ws: ("hyp.attn", None), outputs=lambda ws: [out(ws), ws.output("hyp.attn")])
    _case(prog, "model-missing", run(good, model=lambda ws: ws.missing("model")), where=lambda ws: ("model", None),
          outputs=outs)
    _case(prog, "truncated-checkpoint", run(good, model=_nmt_truncated),
          where=lambda ws: ("checkpoint_last.pt", None), outputs=outs)
    _case(prog, "vocab-mismatch", run(good, model=_nmt_wrong_vocab), where=lambda ws: ("src_vocab.tsv", None),
          outputs=outs)
    _case(prog, "config-malformed", lambda ws: [*run(good)(ws), "--config", str(_bad_yaml(ws))], where=_yaml_where,
          outputs=outs)


# -------------------------------------------------------------------------------- nmt-evaluate
def _evaluate_cases() -> None:
    prog = "nmt-evaluate"
    out = lambda ws: ws.output("eval.json")  # noqa: E731
    outs = lambda ws: [out(ws)]  # noqa: E731
    hyp_ok = lambda ws: ws.file("eval.hyp", text(GOOD_TGT))  # noqa: E731
    ref_ok = lambda ws: ws.file("eval.ref", text(GOOD_TGT))  # noqa: E731

    def run(hyp, ref):
        return lambda ws: ["--hyp", str(hyp(ws)), "--ref", str(ref(ws)), "--json", str(out(ws))]

    _case(prog, "empty-hyp-and-ref",
          run(lambda ws: ws.file("eval.empty.hyp", ""), lambda ws: ws.file("eval.empty.ref", "")),
          where=lambda ws: ("eval.empty.hyp", None), outputs=outs)
    _case(prog, "count-mismatch", run(hyp_ok, lambda ws: ws.file("eval.ref3", SHORT)),
          where=lambda ws: ("eval.ref3", 4), outputs=outs)
    _case(prog, "count-mismatch-hyp-short", run(lambda ws: ws.file("eval.hyp3", SHORT), ref_ok),
          where=lambda ws: ("eval.hyp3", 4), outputs=outs)
    _case(prog, "hyp-empty-file", run(lambda ws: ws.file("eval.hyp.empty", ""), ref_ok),
          where=lambda ws: ("eval.hyp.empty", None), outputs=outs)
    for side in ("hyp", "ref"):
        label, content, line = _NON_UTF8
        name = f"eval.{side}.{label}"
        bad = lambda ws, name=name, content=content: ws.file(name, content)  # noqa: E731
        _case(prog, f"{side}-{label}", run(bad, ref_ok) if side == "hyp" else run(hyp_ok, bad),
              where=lambda ws, name=name, line=line: (name, line), outputs=outs)
    label, content, line = _EMPTY_LINE  # an empty hypothesis is a valid (bad) translation; an empty reference is not
    _case(prog, f"ref-{label}", run(hyp_ok, lambda ws: ws.file("eval.ref.empty-line", content)),
          where=lambda ws: ("eval.ref.empty-line", line), outputs=outs)
    _case(prog, "ref-missing", run(hyp_ok, lambda ws: ws.missing("nope.ref")), where=lambda ws: ("nope.ref", None),
          outputs=outs)
    _case(prog, "hyp-directory", run(lambda ws: ws.folder("adir"), ref_ok), where=lambda ws: ("adir", None),
          outputs=outs)
    _case(prog, "detok-out-is-hyp",
          lambda ws: ["--hyp", str(hyp_ok(ws)), "--ref", str(ref_ok(ws)), "--detokenize", "fr", "--detok-out",
                      str(hyp_ok(ws))], where=lambda ws: ("eval.hyp", None))
    _case(prog, "json-is-ref",
          lambda ws: ["--hyp", str(hyp_ok(ws)), "--ref", str(ref_ok(ws)), "--json", str(ref_ok(ws))],
          where=lambda ws: ("eval.ref", None))
    _case(prog, "config-malformed", lambda ws: [*run(hyp_ok, ref_ok)(ws), "--config", str(_bad_yaml(ws))],
          where=_yaml_where, outputs=outs)


# ---------------------------------------------------------------------------- nmt-significance
def _significance_cases() -> None:
    prog = "nmt-significance"
    out = lambda ws: ws.output("significance.json")  # noqa: E731
    outs = lambda ws: [out(ws)]  # noqa: E731
    ref_ok = lambda ws: ws.file("sig.ref", text(GOOD_TGT))  # noqa: E731
    run_ok = lambda ws: ws.file("sig.run", text(GOOD_TGT))  # noqa: E731

    def run(baseline_runs, system_runs, ref=ref_ok):
        return lambda ws: ["--ref", str(ref(ws)), "--system",
                           "Baseline=" + ",".join(str(r(ws)) for r in baseline_runs),
                           "+X=" + ",".join(str(r(ws)) for r in system_runs), "--trials", "20", "--json",
                           str(out(ws))]

    _case(prog, "run-short", run([run_ok, run_ok], [run_ok, lambda ws: ws.file("sig.run3", SHORT)]),
          where=lambda ws: ("sig.run3", 4), outputs=outs)
    label, content, line = _NON_UTF8
    _case(prog, f"run-{label}", run([lambda ws: ws.file(f"sig.run.{label}", content)], [run_ok]),
          where=lambda ws: (f"sig.run.{label}", line), outputs=outs)
    _case(prog, "runs-differ", run([run_ok, run_ok], [run_ok]), where=lambda ws: ("--system", None), outputs=outs)
    _case(prog, "no-system-to-test",
          lambda ws: ["--ref", str(ref_ok(ws)), "--system", f"Baseline={run_ok(ws)}", "--json", str(out(ws))],
          where=lambda ws: ("--system", None), outputs=outs)
    _case(prog, "ref-missing", run([run_ok], [run_ok], ref=lambda ws: ws.missing("nope.ref")),
          where=lambda ws: ("nope.ref", None), outputs=outs)
    _case(prog, "json-is-ref", lambda ws: [*run([run_ok], [run_ok])(ws)[:-1], str(ref_ok(ws))],
          where=lambda ws: ("sig.ref", None))
    _case(prog, "config-malformed", lambda ws: [*run([run_ok], [run_ok])(ws), "--config", str(_bad_yaml(ws))],
          where=_yaml_where, outputs=outs)


# ----------------------------------------------------------------------------------- nmt-train
def _data_dir(ws: Workspace, label: str, files: dict[str, str | bytes]) -> Path:
    """A copy of the workspace's prepared data folder with some files replaced."""
    dest = ws.inputs / f"data-{label}"
    if not dest.exists():
        shutil.copytree(ws.data, dest)
    for name, content in files.items():
        path = dest / name
        data = content.encode("utf-8") if isinstance(content, str) else content
        if not path.is_file() or path.read_bytes() != data:
            path.write_bytes(data)
    return dest


def _train_cases() -> None:
    prog = "nmt-train"
    out = lambda ws: ws.output("model")  # noqa: E731
    outs = lambda ws: [out(ws)]  # noqa: E731

    def run(data, *extra, out_dir=None):
        return lambda ws: ["--data-dir", str(data(ws)), "--out-dir", str(out_dir(ws) if out_dir else out(ws)),
                           "--preset", "tiny", "--max-updates", "1", "--progress", "false", "--threads", "1", *extra]

    def data_with(label, files):
        return lambda ws: _data_dir(ws, label, files)

    good_tgt = text(GOOD_TGT)
    for label, content, line in LINE_FAULTS:
        _case(prog, f"train-src-{label}", run(data_with(label, {"train.tok.en": content, "train.tok.fr": good_tgt})),
              where=lambda ws, line=line: ("train.tok.en", line), outputs=outs)
    _case(prog, "both-empty", run(data_with("both-empty", {"train.tok.en": "", "train.tok.fr": ""})),
          where=lambda ws: ("train.tok.en", None), outputs=outs)
    _case(prog, "misaligned", run(data_with("misaligned", {"train.tok.en": text(GOOD_SRC), "train.tok.fr": SHORT})),
          where=lambda ws: ("train.tok.fr", 4), outputs=outs)
    _case(prog, "dev-empty-file", run(data_with("dev-empty", {"val.tok.en": "", "val.tok.fr": ""})),
          where=lambda ws: ("val.tok.en", None), outputs=outs)
    _case(prog, "all-too-long", run(data_with("all-long", {"train.tok.en": text(GOOD_SRC), "train.tok.fr": good_tgt}),
                                    "--max-len", "1"),
          where=lambda ws: ("train.tok.en", None), outputs=outs)
    _case(prog, "vocab-malformed", run(data_with("bad-vocab", {"vocab.en.tsv": "<pad>\t0\n<unk>\t0\n<s>\n"})),
          where=lambda ws: ("vocab.en.tsv", 3), outputs=outs)
    _case(prog, "data-dir-missing", run(lambda ws: ws.missing("data")), where=lambda ws: ("data", None),
          outputs=outs)
    _case(prog, "train-src-directory", lambda ws: [*run(lambda ws: ws.data)(ws), "--train-src", str(ws.folder("adir"))],
          where=lambda ws: ("adir", None), outputs=outs)
    _case(prog, "config-malformed", lambda ws: [*run(lambda ws: ws.data)(ws), "--config", str(_bad_yaml(ws))],
          where=_yaml_where, outputs=outs)
    _case(prog, "out-dir-is-a-file", run(lambda ws: ws.data, out_dir=lambda ws: ws.file("a-file", "x\n")),
          where=lambda ws: ("a-file", None))
    _case(prog, "out-dir-holds-a-model",
          run(lambda ws: ws.data, out_dir=lambda ws: _copy_of(ws, ws.model, "model-trained", lambda d: None)),
          where=lambda ws: ("model-trained", None))
    # unusual but valid: read (a BOM and CRLF line ends are not tokens), or filtered with a count
    _case(prog, "crlf-bom", run(data_with("crlf", {"train.tok.en": CRLF_BOM, "train.tok.fr": good_tgt})), status=0)
    _case(prog, "long-line", run(data_with("long", {"train.tok.en": LONG_LINE, "train.tok.fr": good_tgt})), status=0)
    # the same pairs read as a stream (--stream-buffer): the same answers
    for fault, body, at in LINE_FAULTS:
        _case(prog, f"stream-train-src-{fault}",
              run(data_with(fault, {"train.tok.en": body, "train.tok.fr": good_tgt}), "--stream-buffer", "4"),
              where=lambda ws, at=at: ("train.tok.en", at), outputs=outs)
    _case(prog, "stream-misaligned", run(data_with("misaligned", {"train.tok.en": text(GOOD_SRC), "train.tok.fr": SHORT}),
                                         "--stream-buffer", "4"),
          where=lambda ws: ("train.tok.fr", 4), outputs=outs)
    _case(prog, "stream-all-too-long", run(data_with("all-long", {"train.tok.en": text(GOOD_SRC),
                                                                  "train.tok.fr": good_tgt}),
                                           "--max-len", "1", "--stream-buffer", "4"),
          where=lambda ws: ("train.tok.en", None), outputs=outs)
    _case(prog, "stream-crlf-bom", run(data_with("crlf", {"train.tok.en": CRLF_BOM, "train.tok.fr": good_tgt}),
                                       "--stream-buffer", "4"), status=0)


# -------------------------------------------------------------------------------- nmt-lm-train
def _lm_train_cases() -> None:
    prog = "nmt-lm-train"
    out = lambda ws: ws.output("lm")  # noqa: E731
    outs = lambda ws: [out(ws)]  # noqa: E731

    def run(train=None, valid=None, *extra, out_dir=None):
        def argv(ws):
            c = ws.lm_corpus
            return ["--train", str(train(ws) if train else c["train"]),
                    "--valid", str(valid(ws) if valid else c["valid"]),
                    "--arch", "lstm", "--num-layers", "1", "--emb-dim", "8", "--hidden-dim", "8", "--batch-size", "8",
                    "--max-epochs", "1", "--max-updates", "1", "--threads", "1", "--progress", "false",
                    "--out-dir", str(out_dir(ws) if out_dir else out(ws)), *extra]
        return argv

    for label, content, line in (_NON_UTF8, _EMPTY_FILE):
        name = f"lm.train.{label}"
        _case(prog, f"train-{label}", run(lambda ws, name=name, content=content: ws.file(name, content)),
              where=lambda ws, name=name, line=line: (name, line), outputs=outs)
    _case(prog, "valid-empty-file", run(None, lambda ws: ws.file("lm.valid.empty", "")),
          where=lambda ws: ("lm.valid.empty", None), outputs=outs)
    _case(prog, "both-empty", run(lambda ws: ws.file("lm.train.empty", ""), lambda ws: ws.file("lm.valid.empty", "")),
          where=lambda ws: ("lm.train.empty", None), outputs=outs)
    _case(prog, "train-missing", run(lambda ws: ws.missing("lm.train")), where=lambda ws: ("lm.train", None),
          outputs=outs)
    _case(prog, "train-directory", run(lambda ws: ws.folder("adir")), where=lambda ws: ("adir", None), outputs=outs)
    _case(prog, "vocab-malformed",
          lambda ws: [*run()(ws), "--vocab", str(ws.file("lm.bad.vocab", b"<pad>\t0\n<unk>\t\xff\n"))],
          where=lambda ws: ("lm.bad.vocab", 2), outputs=outs)
    _case(prog, "config-malformed", lambda ws: [*run()(ws), "--config", str(_bad_yaml(ws))], where=_yaml_where,
          outputs=outs)
    _case(prog, "out-dir-holds-a-model", run(out_dir=lambda ws: _copy_of(ws, ws.lm, "lm-trained", lambda d: None)),
          where=lambda ws: ("lm-trained", None))
    _case(prog, "vocab-is-train", lambda ws: [*run()(ws), "--vocab", str(ws.lm_corpus["train"])],
          where=lambda ws: ("lm.train.txt", 1), outputs=outs)
    label, content, _ = _EMPTY_LINE  # an empty line is a sentence of zero words for an LM: kept
    _case(prog, f"train-{label}", run(lambda ws: ws.file("lm.train.empty-line", content)), status=0)
    _case(prog, "crlf-bom", run(lambda ws: ws.file("lm.train.crlf", CRLF_BOM)), status=0)
    _case(prog, "long-line", run(lambda ws: ws.file("lm.train.long", LONG_LINE)), status=0)
    for regime in ("sentence", "stream"):  # the training text read from disk (--stream-buffer): the same answers
        flags = ("--regime", regime, "--stream-buffer", "4")
        for fault, body, at in (_NON_UTF8, _EMPTY_FILE):  # (own names: the lambdas above read `content` late)
            name = f"lm.train.{fault}"
            _case(prog, f"stream-{regime}-train-{fault}",
                  run(lambda ws, name=name, body=body: ws.file(name, body), None, *flags),
                  where=lambda ws, name=name, at=at: (name, at), outputs=outs)
        _case(prog, f"stream-{regime}-crlf-bom", run(lambda ws: ws.file("lm.train.crlf", CRLF_BOM), None, *flags),
              status=0)


# ---------------------------------------------------------------------- nmt-lm-eval / nmt-lm-score
def _lm_scoring_cases() -> None:
    for prog, out_flag in (("nmt-lm-eval", "--json"), ("nmt-lm-score", "--output")):
        out = lambda ws: ws.output("lm.out")  # noqa: E731
        outs = lambda ws: [out(ws)]  # noqa: E731
        good = lambda ws: ws.file("lm.text", text(GOOD_SRC))  # noqa: E731

        def run(txt, model=None, *extra, out_flag=out_flag, out=out):
            return lambda ws: ["--model", str(model(ws) if model else ws.lm), "--checkpoint", "last", "--threads",
                               "1", "--text", str(txt(ws)), out_flag, str(out(ws)), *extra]

        for label, content, line in (_NON_UTF8, _EMPTY_FILE):
            name = f"lm.text.{label}"
            _case(prog, f"text-{label}", run(lambda ws, name=name, content=content: ws.file(name, content)),
                  where=lambda ws, name=name, line=line: (name, line), outputs=outs)
        _case(prog, "text-missing", run(lambda ws: ws.missing("nope.txt")), where=lambda ws: ("nope.txt", None),
              outputs=outs)
        _case(prog, "text-directory", run(lambda ws: ws.folder("adir")), where=lambda ws: ("adir", None),
              outputs=outs)
        _case(prog, "truncated-checkpoint", run(good, _lm_truncated), where=lambda ws: ("checkpoint_last.pt", None),
              outputs=outs)
        _case(prog, "vocab-mismatch", lambda ws, run=run: [*run(good)(ws), "--vocab", str(_other_vocab(ws))],
              where=lambda ws: ("other.vocab.tsv", None), outputs=outs)
        _case(prog, "model-missing", run(good, lambda ws: ws.missing("lm")), where=lambda ws: ("lm", None),
              outputs=outs)
        _case(prog, "output-is-input",
              lambda ws, out_flag=out_flag, run=run: [*run(good)(ws)[:-2], out_flag, str(good(ws))],
              where=lambda ws: ("lm.text", None))
        _case(prog, "config-malformed", lambda ws, run=run: [*run(good)(ws), "--config", str(_bad_yaml(ws))],
              where=_yaml_where, outputs=outs)


# --------------------------------------------------------------------------- nmt-lm-attention
def _lm_attention_cases() -> None:
    prog = "nmt-lm-attention"
    out = lambda ws: ws.output("attention")  # noqa: E731
    outs = lambda ws: [out(ws)]  # noqa: E731

    def run(txt, model=None):
        return lambda ws: ["--model", str(model(ws) if model else ws.lm), "--text", str(txt(ws)), "--threads", "1",
                           "--out-dir", str(out(ws))]

    for label, content, line in (_NON_UTF8, _EMPTY_FILE):
        name = f"attn.text.{label}"
        _case(prog, f"text-{label}", run(lambda ws, name=name, content=content: ws.file(name, content)),
              where=lambda ws, name=name, line=line: (name, line), outputs=outs)
    _case(prog, "text-missing", run(lambda ws: ws.missing("nope.txt")), where=lambda ws: ("nope.txt", None),
          outputs=outs)
    _case(prog, "text-directory", run(lambda ws: ws.folder("adir")), where=lambda ws: ("adir", None), outputs=outs)
    good = lambda ws: ws.file("lm.text", text(GOOD_SRC))  # noqa: E731
    _case(prog, "truncated-checkpoint", run(good, _lm_truncated), where=lambda ws: ("checkpoint_last.pt", None),
          outputs=outs)
    _case(prog, "not-an-rmn", run(good), where=lambda ws: ("checkpoint_best.pt", None), outputs=outs)
    _case(prog, "config-malformed", lambda ws: [*run(good)(ws), "--config", str(_bad_yaml(ws))], where=_yaml_where,
          outputs=outs)


# -------------------------------------------------------------------------------- nmt-prepare
def _prepare_cases() -> None:
    prog = "nmt-prepare"
    out = lambda ws: ws.output("data")  # noqa: E731
    _case(prog, "config-malformed", lambda ws: ["--out-dir", str(out(ws)), "--config", str(_bad_yaml(ws))],
          where=_yaml_where, outputs=lambda ws: [out(ws)])


# ------------------------------------------------------------------------------- nmt-truecase
def _truecase_cases() -> None:
    prog = "nmt-truecase"
    out = lambda ws: ws.output("tc.out")  # noqa: E731
    outs = lambda ws: [out(ws)]  # noqa: E731
    good = lambda ws: ws.file("tc.in", text(GOOD_SRC))  # noqa: E731
    model = lambda ws: ws.file("tc.model", "s1 (2/3) S1 (1)\ns2 (1/1)\n")  # noqa: E731
    apply = lambda inp, mdl=model: lambda ws: ["--model", str(mdl(ws)), "--input", str(inp(ws)),  # noqa: E731
                                              "--output", str(out(ws))]
    train = lambda inp: lambda ws: ["--train", str(inp(ws)), "--model", str(out(ws))]  # noqa: E731
    _NAME, content, line = _NON_UTF8
    bad = lambda ws: ws.file("tc.in.non-utf8", content)  # noqa: E731
    _case(prog, "input-non-utf8", apply(bad), where=lambda ws: ("tc.in.non-utf8", line), outputs=outs)
    _case(prog, "train-non-utf8", train(bad), where=lambda ws: ("tc.in.non-utf8", line), outputs=outs)
    _case(prog, "train-empty-file", train(lambda ws: ws.file("tc.in.empty", "")),
          where=lambda ws: ("tc.in.empty", None), outputs=outs)
    _case(prog, "model-malformed", apply(good, lambda ws: ws.file("tc.model.bad", "s1 (2/3) S1 (1)\ns2 (one)\n")),
          where=lambda ws: ("tc.model.bad", 2), outputs=outs)
    _case(prog, "model-missing", apply(good, lambda ws: ws.missing("nope.model")),
          where=lambda ws: ("nope.model", None), outputs=outs)
    _case(prog, "output-is-input", lambda ws: [*apply(good)(ws)[:-1], str(good(ws))], where=lambda ws: ("tc.in", None))
    _case(prog, "config-malformed", lambda ws: [*apply(good)(ws), "--config", str(_bad_yaml(ws))],
          where=_yaml_where, outputs=outs)


# -------------------------------------------------------------------- nmt-average-checkpoints
def _average_cases() -> None:
    prog = "nmt-average-checkpoints"
    out = lambda ws: ws.output("avg.pt")  # noqa: E731
    outs = lambda ws: [out(ws)]  # noqa: E731
    last = lambda ws: ws.model / "checkpoint_last.pt"  # noqa: E731
    second = lambda ws: _copy_of(ws, ws.model, "model-copy", lambda d: None) / "checkpoint_last.pt"  # noqa: E731
    avg = lambda *inputs: lambda ws: ["--inputs", *(str(i(ws)) for i in inputs), "--output", str(out(ws))]  # noqa: E731
    _case(prog, "checkpoint-truncated", avg(last, lambda ws: _nmt_truncated(ws) / "checkpoint_last.pt"),
          where=lambda ws: ("checkpoint_last.pt", None), outputs=outs)
    _case(prog, "checkpoint-missing", avg(last, lambda ws: ws.missing("nope.pt")), where=lambda ws: ("nope.pt", None),
          outputs=outs)
    _case(prog, "not-the-same-model", avg(last, lambda ws: ws.lm / "checkpoint_last.pt"),
          where=lambda ws: ("checkpoint_last.pt", None), outputs=outs)
    _case(prog, "one-input", avg(last), where=lambda ws: ("--inputs", None), outputs=outs)
    _case(prog, "output-is-input", lambda ws: [*avg(last, second)(ws)[:-1], str(second(ws))],
          where=lambda ws: ("checkpoint_last.pt", None))
    _case(prog, "config-malformed", lambda ws: [*avg(last, second)(ws), "--config", str(_bad_yaml(ws))],
          where=_yaml_where, outputs=outs)


_score_cases()
_translate_cases()
_evaluate_cases()
_significance_cases()
_train_cases()
_lm_train_cases()
_lm_scoring_cases()
_lm_attention_cases()
_prepare_cases()
_truecase_cases()
_average_cases()
