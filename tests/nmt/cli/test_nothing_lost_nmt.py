"""The nmt-* commands lose nothing: an output that is an input is refused before anything is written,
a training folder that holds a model is continued only with --resume and replaced only with --overwrite,
and text that is unusual but valid (CRLF line ends, a byte order mark, a 5,000-token line, stdin) is read
as it should be. The bad-input probe (tests/probe/cases_nmt.py) covers the refusals' messages; these
tests check the results of what is accepted."""
from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.refusal import refused
from tests.toy_corpus import make_toy_data

from nmt.training.checkpoint import load_checkpoint
from nmt.cli.evaluate import cli_main as evaluate_main
from nmt.cli.lm_score import cli_main as lm_score_main
from nmt.cli.lm_train import cli_main as lm_train_main
from nmt.cli.score import cli_main as score_main
from nmt.cli.train import cli_main as train_main
from nmt.cli.translate import cli_main as translate_main
from nmt.core.io import read_lines

BIN = Path(sys.executable).parent
SRC = ["s1 s2 s3", "s4 s5", "s6 s7 s8", "s9 s10"]
TGT = ["t1 t2 t3", "t4 t5", "t6 t7 t8", "t9 t10"]


def lf(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def crlf_bom(lines: list[str]) -> bytes:
    return ("\ufeff" + "".join(line + "\r\n" for line in lines)).encode("utf-8")


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def folder_digest(folder: Path) -> dict[str, str]:
    return {p.name: sha(p) for p in sorted(folder.iterdir()) if p.is_file()}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return make_toy_data(tmp_path_factory.mktemp("data") / "data", n_train=80, n_dev=10)


def _train_args(data: Path, out: Path, *extra: str) -> list[str]:
    return ["--data-dir", str(data), "--out-dir", str(out), "--preset", "tiny", "--progress", "false",
            "--threads", "1", *extra]


@pytest.fixture(scope="module")
def model(data: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("model") / "model"
    assert train_main(_train_args(data, out, "--max-updates", "2")) == 0
    return out


LM_WORDS = [f"w{i}" for i in range(8)]


@pytest.fixture(scope="module")
def lm_corpus(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("lm-data")
    lines = [" ".join(LM_WORDS[(i + k) % len(LM_WORDS)] for k in range(2 + i % 5)) for i in range(50)]
    paths = {}
    for split, part in (("train", lines[:40]), ("valid", lines[40:])):
        paths[split] = root / f"{split}.txt"
        paths[split].write_text(lf(part), encoding="utf-8")
    return paths


def _lm_args(corpus: dict[str, Path], out: Path, *extra: str) -> list[str]:
    return ["--train", str(corpus["train"]), "--valid", str(corpus["valid"]), "--arch", "lstm", "--num-layers", "1",
            "--emb-dim", "8", "--hidden-dim", "8", "--batch-size", "8", "--max-epochs", "1", "--threads", "1",
            "--progress", "false", "--out-dir", str(out), *extra]


@pytest.fixture(scope="module")
def lm(lm_corpus: dict[str, Path], tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("lm") / "lm"
    assert lm_train_main(_lm_args(lm_corpus, out)) == 0
    return out


# ------------------------------------------------------------------------------ output = input
def test_score_output_equal_to_an_input_is_refused(model: Path, tmp_path: Path, capsys) -> None:
    src, tgt = tmp_path / "s.txt", tmp_path / "t.txt"
    src.write_text(lf(SRC), encoding="utf-8")
    tgt.write_text(lf(TGT), encoding="utf-8")
    before = sha(tgt), sha(src)
    for victim in (tgt, src):
        status = score_main(["--model", str(model), "--src", str(src), "--tgt", str(tgt), "--output", str(victim)])
        refused(capsys, None, status, str(victim), "refusing to overwrite an input")
    assert (sha(tgt), sha(src)) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.txt", "t.txt"]  # no temp file either


def test_translate_output_equal_to_input_is_refused(model: Path, tmp_path: Path, capsys) -> None:
    inp = tmp_path / "in.txt"
    inp.write_text(lf(SRC), encoding="utf-8")
    before = sha(inp)
    # also through another spelling of the same path
    for out in (inp, tmp_path / "." / "in.txt"):
        status = translate_main(["--model", str(model), "--input", str(inp), "--output", str(out), "--tokenized",
                                 "true", "--beam-size", "2", "--threads", "1"])
        refused(capsys, None, status, "--output is the same file as --input")
    assert sha(inp) == before


def test_evaluate_outputs_equal_to_inputs_are_refused(tmp_path: Path, capsys) -> None:
    hyp, ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hyp.write_text("Un chien , un chat &amp; un oiseau .\n", encoding="utf-8")
    ref.write_text("Un chien, un chat & un oiseau.\n", encoding="utf-8")
    before = sha(hyp), sha(ref)
    refused(capsys, None, evaluate_main(["--hyp", str(hyp), "--ref", str(ref), "--detokenize", "fr", "--detok-out",
                                   str(hyp)]), "--detok-out is the same file as --hyp")
    refused(capsys, None, evaluate_main(["--hyp", str(hyp), "--ref", str(ref), "--json", str(ref)]),
            "--json is the same file as --ref")
    assert (sha(hyp), sha(ref)) == before
    # a different --detok-out is written, and only once the evaluation succeeded
    detok = tmp_path / "detok.txt"
    short_ref = tmp_path / "ref0.txt"
    short_ref.write_text("", encoding="utf-8")
    refused(capsys, None, evaluate_main(["--hyp", str(hyp), "--ref", str(short_ref), "--detokenize", "fr", "--detok-out",
                                   str(detok)]), f"{short_ref}:1:", "1 hypotheses", "0 references")
    assert not detok.exists()
    assert evaluate_main(["--hyp", str(hyp), "--ref", str(ref), "--detokenize", "fr", "--detok-out", str(detok)]) == 0
    assert read_lines(detok) == ["Un chien, un chat & un oiseau."]


def test_evaluate_count_mismatch_names_both_files(tmp_path: Path, capsys) -> None:
    hyp, ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hyp.write_text(lf(TGT), encoding="utf-8")
    ref.write_text(lf(TGT[:2]), encoding="utf-8")
    refused(capsys, None, evaluate_main(["--hyp", str(hyp), "--ref", str(ref)]), f"{ref}:3:", str(hyp), "4 hypotheses",
            "2 references")
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    refused(capsys, None, evaluate_main(["--hyp", str(empty), "--ref", str(empty)]), f"{empty}: empty file")


def test_lm_score_output_equal_to_text_is_refused(lm: Path, lm_corpus, capsys) -> None:
    text = lm_corpus["valid"]
    before = sha(text)
    refused(capsys, None, lm_score_main(["--model", str(lm), "--text", str(text), "--output", str(text)]),
            "--output is the same file as --text")
    assert sha(text) == before


# ------------------------------------------------------------------------- training folders
def test_train_refuses_a_trained_out_dir_without_resume_or_overwrite(data: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "m"
    assert train_main(_train_args(data, out, "--max-epochs", "1")) == 0  # writes checkpoint_best.pt too
    assert (out / "checkpoint_best.pt").exists()
    old = folder_digest(out)
    capsys.readouterr()
    refused(capsys, None, train_main(_train_args(data, out, "--max-updates", "1")), str(out), "holds a trained model",
            "--resume", "--overwrite")
    refused(capsys, None, train_main(_train_args(data, out, "--max-updates", "1", "--resume", "--overwrite")), "not both")
    # --overwrite with bad data: refused before the old run is touched
    bad = tmp_path / "bad-data"
    make_toy_data(bad, n_train=8, n_dev=2)
    (bad / "train.tok.en").write_bytes(b"s1 \xff\n" * 8)
    refused(capsys, None, train_main(_train_args(bad, out, "--max-updates", "1", "--overwrite")), "train.tok.en:1:")
    assert folder_digest(out) == old
    # --overwrite: the old run's files are gone, nothing of it is mixed into the new one
    assert train_main(_train_args(data, out, "--max-updates", "1", "--overwrite")) == 0
    assert "--overwrite: removed" in capsys.readouterr().err
    assert not (out / "checkpoint_best.pt").exists()
    history = json.loads((out / "history.json").read_text())
    assert not [h for h in history if "dev_loss" in h]  # the old run evaluated at its epoch end; this one did not
    assert load_checkpoint(out / "checkpoint_last.pt")["train_state"]["step"] == 1
    assert (out / "train.log").read_text().count("training finished") == 1
    # --resume continues the run that is there
    assert train_main(_train_args(data, out, "--max-updates", "2", "--resume")) == 0
    assert load_checkpoint(out / "checkpoint_last.pt")["train_state"]["step"] == 2


def test_train_refusals_leave_no_out_dir(data: Path, tmp_path: Path, capsys) -> None:
    bad = tmp_path / "data"
    make_toy_data(bad, n_train=8, n_dev=2)
    for name in ("train.tok.en", "train.tok.fr"):
        (bad / name).write_text("", encoding="utf-8")
    out = tmp_path / "m"
    refused(capsys, None, train_main(_train_args(bad, out)), "train.tok.en: empty file", "no training pairs")
    assert not out.exists()
    make_toy_data(bad, n_train=8, n_dev=2)
    refused(capsys, None, train_main(_train_args(bad, out, "--max-len", "1")), "train.tok.en:", "more than --max-len 1")
    assert not out.exists()


def test_train_drops_a_long_line_and_says_so(data: Path, tmp_path: Path, capsys) -> None:
    long_data = tmp_path / "data"
    make_toy_data(long_data, n_train=20, n_dev=2)
    lines = read_lines(long_data / "train.tok.en")
    lines[3] = " ".join(["w"] * 5000)
    (long_data / "train.tok.en").write_text(lf(lines), encoding="utf-8")
    assert train_main(_train_args(long_data, tmp_path / "m", "--max-updates", "1")) == 0
    assert "19 training pairs (1 dropped by --max-len 80)" in capsys.readouterr().err


def test_lm_train_refuses_a_trained_out_dir_without_resume_or_overwrite(lm_corpus, tmp_path: Path, capsys) -> None:
    out = tmp_path / "lm"
    assert lm_train_main(_lm_args(lm_corpus, out)) == 0
    old = folder_digest(out)
    capsys.readouterr()
    refused(capsys, None, lm_train_main(_lm_args(lm_corpus, out, "--max-updates", "1")), "holds a trained model")
    assert folder_digest(out) == old
    assert lm_train_main(_lm_args(lm_corpus, out, "--max-updates", "1", "--overwrite")) == 0
    assert not (out / "checkpoint_best.pt").exists()  # the old run's best is gone (this run never evaluated)
    assert not [h for h in json.loads((out / "history.json").read_text()) if "dev_loss" in h]
    assert load_checkpoint(out / "checkpoint_last.pt")["train_state"]["step"] == 1


# --------------------------------------------------------------------- CRLF, BOM, long lines
def test_crlf_bom_input_is_read_like_lf(model: Path, lm: Path, tmp_path: Path, capsys) -> None:
    plain, dos = tmp_path / "plain", tmp_path / "dos"
    for folder, write in ((plain, lambda p, lines: p.write_text(lf(lines), encoding="utf-8")),
                          (dos, lambda p, lines: p.write_bytes(crlf_bom(lines)))):
        folder.mkdir()
        write(folder / "src", SRC)
        write(folder / "tgt", TGT)
        write(folder / "lm", [" ".join(LM_WORDS[:3]), " ".join(LM_WORDS[2:6])])
    results = {}
    for folder in (plain, dos):
        assert score_main(["--model", str(model), "--src", str(folder / "src"), "--tgt", str(folder / "tgt"),
                           "--output", str(folder / "scores")]) == 0
        assert translate_main(["--model", str(model), "--input", str(folder / "src"), "--output", str(folder / "hyp"),
                               "--tokenized", "true", "--beam-size", "2", "--threads", "1"]) == 0
        assert evaluate_main(["--hyp", str(folder / "src"), "--ref", str(folder / "src"),
                              "--json", str(folder / "eval.json")]) == 0
        assert lm_score_main(["--model", str(lm), "--text", str(folder / "lm"), "--output",
                              str(folder / "lm.scores")]) == 0
        results[folder.name] = [(folder / name).read_bytes() for name in ("scores", "hyp", "eval.json", "lm.scores")]
    assert results["dos"] == results["plain"]
    assert json.loads((dos / "eval.json").read_text())["chrf"] == pytest.approx(100.0)


def test_crlf_bom_training_text_gives_the_same_tokens(tmp_path: Path) -> None:
    from nmt.translation.data import read_tokenized_pairs

    (tmp_path / "s").write_bytes(crlf_bom(SRC))
    (tmp_path / "t").write_bytes(crlf_bom(TGT))
    assert read_tokenized_pairs(str(tmp_path / "s"), str(tmp_path / "t")) == [(s.split(), t.split())
                                                                             for s, t in zip(SRC, TGT)]


def test_long_lines_are_scored(model: Path, lm: Path, tmp_path: Path) -> None:
    src, tgt, text = tmp_path / "src", tmp_path / "tgt", tmp_path / "text"
    src.write_text(lf([SRC[0], " ".join(["s1"] * 5000)]), encoding="utf-8")
    tgt.write_text(lf([TGT[0], " ".join(["t1"] * 5000)]), encoding="utf-8")
    text.write_text(lf([" ".join(LM_WORDS), " ".join(["w1"] * 5000)]), encoding="utf-8")
    assert score_main(["--model", str(model), "--src", str(src), "--tgt", str(tgt), "--output",
                       str(tmp_path / "scores")]) == 0
    scores = [float(v) for v in read_lines(tmp_path / "scores")]
    assert len(scores) == 2 and scores[1] < scores[0] < 0
    assert lm_score_main(["--model", str(lm), "--text", str(text), "--output", str(tmp_path / "lm.scores")]) == 0
    assert len(read_lines(tmp_path / "lm.scores")) == 2


def test_translate_refuses_a_long_line_by_its_number(model: Path, tmp_path: Path, capsys) -> None:
    inp = tmp_path / "in"
    inp.write_text(lf([SRC[0], " ".join(["s1"] * 20)]), encoding="utf-8")
    out = tmp_path / "out"
    refused(capsys, None, translate_main(["--model", str(model), "--input", str(inp), "--output", str(out), "--tokenized",
                                    "true", "--max-input-len", "10"]), f"{inp}:2:", "20 tokens")
    assert not out.exists()
    assert translate_main(["--model", str(model), "--input", str(inp), "--output", str(out), "--tokenized", "true",
                           "--max-input-len", "0", "--beam-size", "2", "--threads", "1"]) == 0
    assert len(read_lines(out, allow_empty=True)) == 2


# ----------------------------------------------------------------------------- stdin, stdout
def test_dash_reads_stdin_and_writes_stdout(model: Path, lm: Path, tmp_path: Path, capsys) -> None:
    exe = BIN / "nmt-translate"
    if not exe.exists():
        pytest.skip(f"{exe} not installed (pip install -e .)")
    (tmp_path / "src").write_text(lf(SRC), encoding="utf-8")
    assert translate_main(["--model", str(model), "--input", str(tmp_path / "src"), "--output",
                           str(tmp_path / "hyp"), "--tokenized", "true", "--beam-size", "2", "--threads", "1"]) == 0
    proc = subprocess.run([str(exe), "--model", str(model), "--input", "-", "--output", "-", "--tokenized", "true",
                           "--beam-size", "2", "--threads", "1"], input=crlf_bom(SRC), capture_output=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == (tmp_path / "hyp").read_bytes()
    empty = subprocess.run([str(exe), "--model", str(model), "--input", "-", "--tokenized", "true"], input=b"",
                           capture_output=True, timeout=300)
    assert empty.returncode == 2 and b"empty input" in empty.stderr and b"Traceback" not in empty.stderr
    capsys.readouterr()
    (tmp_path / "tgt").write_text(lf(TGT), encoding="utf-8")
    assert score_main(["--model", str(model), "--src", str(tmp_path / "src"), "--tgt", str(tmp_path / "tgt")]) == 0
    assert len(capsys.readouterr().out.split()) == len(SRC)
    assert lm_score_main(["--model", str(lm), "--text", str(tmp_path / "src"), "--output", "-"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == len(SRC)


# -------------------------------------------------------------------------------- nmt-prepare
@pytest.fixture
def multi30k_dir(tiny_root: Path) -> Path:
    return tiny_root / "multi30k"


@pytest.mark.parametrize("fault, content, where", [
    ("non-utf8", b"A dog.\nA \xff cat.\n", "test_2017_flickr.fr.gz:2:"),
    ("empty-line", b"A dog.\n\n", "test_2017_flickr.fr.gz:2:"),
    ("misaligned", b"A dog.\n", "test_2017_flickr.fr.gz:2:"),
    ("empty-file", b"", "test_2017_flickr.fr.gz:1:"),
])
def test_prepare_reports_bad_split_before_writing(multi30k_dir: Path, tmp_path: Path, capsys, fault, content,
                                                  where) -> None:
    from nmt.cli.prepare import cli_main as prepare_main

    (multi30k_dir / "test_2016_flickr.en.gz").write_bytes(gzip.compress(b"A dog.\nA cat.\n"))
    (multi30k_dir / "test_2016_flickr.fr.gz").write_bytes(gzip.compress(b"Un chien.\nUn chat.\n"))
    (multi30k_dir / "test_2017_flickr.en.gz").write_bytes(gzip.compress(b"A dog.\nA cat.\n"))
    (multi30k_dir / "test_2017_flickr.fr.gz").write_bytes(gzip.compress(content))
    out = tmp_path / "out"
    refused(capsys, None, prepare_main(["--out-dir", str(out)]), where)
    assert not out.exists()  # the last split is bad: nothing of the others was written


def test_prepare_both_sides_empty(multi30k_dir: Path, tmp_path: Path, capsys) -> None:
    from nmt.cli.prepare import cli_main as prepare_main

    for lang in ("en", "fr"):
        (multi30k_dir / f"val.{lang}.gz").write_bytes(gzip.compress(b""))
    out = tmp_path / "out"
    refused(capsys, None, prepare_main(["--out-dir", str(out)]), "val.en.gz", "empty (no val pairs)")
    assert not out.exists()
