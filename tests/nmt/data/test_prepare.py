"""nmt-prepare on a tiny hand-written corpus and on the first 200 pairs of real Multi30k."""
from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
import yaml

from nmt.data import corpora
from nmt.core.io import DataError, read_lines
from nmt.cli.prepare import cli_main
from nmt.data.prepare import PrepareConfig, prepare_parallel
from nmt.data.vocab import Vocabulary, load_vocab
from tests import ROOT, TEST_DATA

TINY = TEST_DATA / "tiny"
SHARED = ROOT / ".." / "shared" / "data"


def test_prepare_tiny_corpus(tiny_root: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    cfg = PrepareConfig(out_dir=str(out), max_len=12, src_vocab_size=5, tgt_vocab_size=100)
    stats = prepare_parallel(cfg)
    train = stats["splits"]["train"]
    assert train["pairs_read"] == 8 and train["kept"] == 6
    assert train["dropped"] == {"empty": 1, "too_short": 0, "too_long": 1}
    assert json.loads((out / "prepare.json").read_text(encoding="utf-8")) == stats
    for split, n in (("train", 6), ("val", 2), ("test_2016_flickr", 1), ("test_2017_flickr", 1)):
        for lang in ("en", "fr"):
            assert len(read_lines(out / f"{split}.{lang}")) == n
            assert len(read_lines(out / f"{split}.tok.{lang}")) == n
    assert read_lines(out / "train.tok.en")[3].split()[4] == "&#124;"
    assert read_lines(out / "train.fr")[2] == "L'enseignant des enfants lit un livre."
    src_vocab = load_vocab(out / "vocab.en.tsv")
    assert isinstance(src_vocab, Vocabulary) and len(src_vocab) == 4 + 5
    assert stats["vocab"]["en"] == {"file": "vocab.en.tsv", "size": 9, "fingerprint": src_vocab.fingerprint()}
    val_fr_tokens = 6 + 4
    assert stats["splits"]["val"]["tokens"]["fr"] == val_fr_tokens
    # "chien" occurs only in the dropped long training pair
    assert stats["dev_oov_rate"]["fr"] == pytest.approx(1 / val_fr_tokens, abs=1e-6)
    assert yaml.safe_load((out / "config.yaml").read_text(encoding="utf-8"))["max_len"] == 12
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]


def test_prepare_sentencepiece_and_cli(tiny_root: Path, tmp_path: Path) -> None:
    out = tmp_path / "sp"
    assert cli_main(["--out-dir", str(out), "--tokenizer", "sentencepiece", "--sp-vocab-size", "60",
                     "--test-splits", "test_2016_flickr", "--max-train-pairs", "7"]) == 0
    stats = json.loads((out / "prepare.json").read_text(encoding="utf-8"))
    assert stats["splits"]["train"]["pairs_read"] == 7
    assert (out / "sp.en.model").is_file() and stats["vocab"]["fr"]["size"] == 60
    assert "▁" in read_lines(out / "val.tok.fr")[0]
    assert not (out / "test_2017_flickr.en").exists()


def test_prepare_reports_bad_input(tiny_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    val_fr = tiny_root / "multi30k" / "val.fr.gz"
    val_fr.write_bytes(gzip.compress(b"Un chien.\n"))
    with pytest.raises(DataError, match="val.fr.gz:2: .*val.en.gz has 2 lines.*val.fr.gz has 1 lines"):
        prepare_parallel(PrepareConfig(out_dir=str(tmp_path / "o")))
    train_en = tiny_root / "multi30k" / "train.en.gz"
    train_en.write_bytes(gzip.compress((TINY / "train.en").read_bytes() + b"extra\n"))
    with pytest.raises(DataError, match="train.en.gz has 9 lines.*train.fr.gz has 8 lines"):
        prepare_parallel(PrepareConfig(out_dir=str(tmp_path / "o"), max_train_pairs=2))
    assert cli_main(["--out-dir", str(tmp_path / "o2"), "--tokenizer", "bpe"]) == 2   # bad input: exit 2
    assert "--tokenizer: invalid choice: 'bpe'" in capsys.readouterr().err   # argparse's choices (nmt.core.config)


@pytest.mark.skipif(not (SHARED / "multi30k" / "train.en.gz").is_file(), reason="shared data absent")
def test_prepare_real_multi30k_first_200(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MT_DATA", str(SHARED))
    monkeypatch.setattr(corpora, "_urlopen", lambda url: pytest.fail(f"network used: {url}"))
    out = tmp_path / "m30k"
    stats = prepare_parallel(PrepareConfig(out_dir=str(out), max_train_pairs=200, test_splits=[]))
    assert stats["splits"]["train"]["pairs_read"] == 200
    assert stats["splits"]["train"]["kept"] == 200
    assert stats["splits"]["val"]["pairs"] == 1014
    assert 0 < stats["dev_oov_rate"]["fr"] < 0.6
    assert read_lines(out / "train.en")[0] == "Two young, White males are outside near many bushes."
    assert read_lines(out / "train.tok.en")[0].startswith("Two young , White males")
    shutil.rmtree(out)


def _outputs(folder: Path) -> dict[str, bytes]:
    skip = {"config.yaml", "prepare.json"}
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.name not in skip}


def _plain_corpus(folder: Path) -> Path:
    """tests/data/tiny as PREFIX.LANG files: train plain, val gzipped, test_2016_flickr plain."""
    folder.mkdir()
    for name, source, gz in (("train", "train", False), ("val", "val", True), ("test_2016_flickr", "test", False)):
        for lang in ("en", "fr"):
            data = (TINY / f"{source}.{lang}").read_bytes()
            target = folder / f"{name}.{lang}{'.gz' if gz else ''}"
            target.write_bytes(gzip.compress(data) if gz else data)
    return folder


def test_plain_files_match_the_registry_and_any_worker_count(tiny_root: Path, tmp_path: Path) -> None:
    data = _plain_corpus(tmp_path / "plain")
    common = ["--max-len", "12", "--src-vocab-size", "5"]
    assert cli_main(["--out-dir", str(tmp_path / "reg"), "--test-splits", "test_2016_flickr", *common]) == 0
    runs = {}
    for workers in ("1", "2"):
        out = tmp_path / f"w{workers}"
        assert cli_main(["--train", str(data / "train"), "--dev", str(data / "val"), "--test",
                         str(data / "test_2016_flickr"), "--src", "en", "--tgt", "fr", "--out-dir", str(out),
                         "--workers", workers, *common]) == 0
        runs[workers] = _outputs(out)
    assert runs["1"] == runs["2"] == _outputs(tmp_path / "reg")
    assert "train.tok.fr" in runs["1"] and "vocab.en.tsv" in runs["1"]
    stats = json.loads((tmp_path / "w2" / "prepare.json").read_text(encoding="utf-8"))
    assert stats["splits"]["train"]["kept"] == 6 and stats["inputs"]["val"]["fr"].endswith("val.fr.gz")
    assert yaml.safe_load((tmp_path / "w2" / "config.yaml").read_text(encoding="utf-8"))["workers"] == 2
    assert "workers" not in yaml.safe_load((tmp_path / "reg" / "config.yaml").read_text(encoding="utf-8"))


def test_max_eval_pairs_keeps_the_first_dev_and_test_pairs_only(tmp_path: Path, capsys) -> None:
    data = _plain_corpus(tmp_path / "plain")
    common = ["--train", str(data / "train"), "--dev", str(data / "val"), "--test", str(data / "test_2016_flickr"),
              "--src", "en", "--tgt", "fr", "--max-len", "12"]
    assert cli_main([*common, "--out-dir", str(tmp_path / "all")]) == 0
    assert cli_main([*common, "--out-dir", str(tmp_path / "cut"), "--max-eval-pairs", "1"]) == 0
    whole, cut = _outputs(tmp_path / "all"), _outputs(tmp_path / "cut")
    assert whole.keys() == cut.keys()
    for name in whole:
        if name.startswith("val."):  # the dev split: its first pair, the same text and tokens
            assert len(whole[name].splitlines()) == 2 and cut[name] == whole[name].splitlines(keepends=True)[0]
        else:  # training split, vocabularies, the 1-pair test split: unchanged
            assert cut[name] == whole[name], name
    stats = json.loads((tmp_path / "cut" / "prepare.json").read_text(encoding="utf-8"))
    assert stats["splits"]["val"]["pairs"] == 1 and stats["splits"]["train"]["kept"] == 6
    assert yaml.safe_load((tmp_path / "cut" / "config.yaml").read_text(encoding="utf-8"))["max_eval_pairs"] == 1
    # the dev files' alignment is still checked whole, though only the first pair is read
    (data / "val.fr.gz").write_bytes(gzip.compress(b"Un chien.\n"))
    assert cli_main([*common, "--out-dir", str(tmp_path / "bad"), "--max-eval-pairs", "1"]) == 2
    assert "val.en.gz has 2 lines" in capsys.readouterr().err and not (tmp_path / "bad").exists()
    assert cli_main([*common, "--out-dir", str(tmp_path / "zero"), "--max-eval-pairs", "0"]) == 2
    assert "--max-eval-pairs must be >= 1" in capsys.readouterr().err


def test_corpus_declaration_file(tmp_path: Path) -> None:
    _plain_corpus(tmp_path / "files")
    decl = tmp_path / "corpus.yaml"
    decl.write_text("name: mine\nfolder: files\nlanguages: [en, fr]\n"
                    "splits:\n  train: train\n  val: val\n  test: {en: test_2016_flickr.en, fr: test_2016_flickr.fr}\n",
                    encoding="utf-8")
    out = tmp_path / "out"
    stats = prepare_parallel(PrepareConfig(corpus=str(decl), test_splits=["test"], out_dir=str(out), max_len=12))
    assert stats["splits"]["train"]["kept"] == 6 and stats["splits"]["val"]["pairs"] == 2
    assert read_lines(out / "test.fr") == read_lines(TINY / "test.fr")


def test_sentencepiece_on_a_sample(tmp_path: Path) -> None:
    data = _plain_corpus(tmp_path / "plain")
    out = tmp_path / "sp"
    assert cli_main(["--train", str(data / "train"), "--out-dir", str(out), "--tokenizer", "sentencepiece",
                     "--sp-vocab-size", "40", "--sp-sample-lines", "5"]) == 0
    stats = json.loads((out / "prepare.json").read_text(encoding="utf-8"))
    assert (out / "sp.fr.model").is_file() and stats["splits"]["train"]["pairs_read"] == 8
    assert len(read_lines(out / "train.tok.en")) == stats["splits"]["train"]["kept"] > 0


def test_plain_files_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _plain_corpus(tmp_path / "plain")
    out = tmp_path / "out"
    (data / "bad.en").write_bytes(b"One.\nTwo.\nTh\xffree.\n")
    (data / "bad.fr").write_bytes(b"Un.\nDeux.\nTrois.\n")
    assert cli_main(["--train", str(data / "bad"), "--out-dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"nmt-prepare: {data / 'bad.en'}:3: invalid UTF-8" in err and "Traceback" not in err
    assert not out.exists() or not list(out.iterdir())
    assert cli_main(["--train", str(data / "train"), "--dev", str(data / "nope"), "--out-dir", str(out)]) == 2
    assert f"{data / 'nope.en'}: not found (nor {data / 'nope.en.gz'})" in capsys.readouterr().err
    assert cli_main(["--train", str(data / "train"), "--test", str(data / "val"), str(tmp_path / "val"),
                     "--out-dir", str(out)]) == 2
    assert "must differ: ['val']" in capsys.readouterr().err
    assert cli_main(["--dev", str(data / "val"), "--out-dir", str(out)]) == 2
    assert not out.exists() or not list(out.iterdir())
    assert cli_main(["--train", str(data / "train"), "--max-len", "1", "--out-dir", str(out)]) == 2
    assert "no training pairs left in" in capsys.readouterr().err
    assert not out.exists() or not list(out.iterdir())  # the streamed train files were dropped
