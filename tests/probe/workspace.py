"""The probe's files: tiny good inputs (a trained model, an LM, a table, a moses.ini) and faults."""
from __future__ import annotations

import gzip
import shutil
from functools import cached_property
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
DECODER_DATA = TESTS / "data" / "decoder"

LM_WORDS = [f"w{i}" for i in range(8)]


class Workspace:
    """One folder: ``in/`` holds good and faulty inputs (built lazily, reused by every case),
    ``out/`` is emptied before each case and is where commands are told to write."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.inputs = self.root / "in"
        self.out = self.root / "out"
        self.inputs.mkdir(parents=True, exist_ok=True)
        self.out.mkdir(parents=True, exist_ok=True)

    # ------------------------------------------------------------------ faults
    def file(self, name: str, content: str | bytes) -> Path:
        """An input file with exactly ``content`` (``.gz`` names are gzip-compressed)."""
        path = self.inputs / name
        data = content.encode("utf-8") if isinstance(content, str) else content
        if name.endswith(".gz"):
            data = gzip.compress(data, mtime=0)
        if not path.is_file() or path.read_bytes() != data:  # (re)written if a faulty run damaged it
            path.write_bytes(data)
        return path

    def truncated_gz(self, name: str, text: str) -> Path:
        """A gzip file cut in the middle of its stream."""
        path = self.inputs / name
        if not path.exists():
            whole = gzip.compress(text.encode("utf-8"), mtime=0)
            path.write_bytes(whole[: len(whole) // 2])
        return path

    def folder(self, name: str) -> Path:
        path = self.inputs / name
        path.mkdir(exist_ok=True)
        return path

    def missing(self, name: str) -> Path:
        return self.inputs / "no-such-dir" / name

    def output(self, name: str) -> Path:
        return self.out / name

    def reset_outputs(self) -> None:
        shutil.rmtree(self.out, ignore_errors=True)
        self.out.mkdir(parents=True)

    def input_files(self) -> list[Path]:
        return [p for p in self.inputs.rglob("*") if p.is_file()]

    def temp_leftovers(self) -> list[Path]:
        return [p for p in self.root.rglob(".*.tmp")]

    # ------------------------------------------------------------ good inputs
    @cached_property
    def data(self) -> Path:
        """The toy parallel corpus of ``tests/toy_corpus.py`` (``train.tok.en`` … and vocabularies)."""
        from tests.toy_corpus import make_toy_data

        return make_toy_data(self.inputs / "data", n_train=80, n_dev=10)

    @cached_property
    def model(self) -> Path:
        """A tiny encoder–decoder trained for two updates (a real ``nmt-train`` folder)."""
        from nmt.cli.train import cli_main

        out = self.inputs / "model"
        if not (out / "checkpoint_last.pt").exists():
            rc = cli_main(["--data-dir", str(self.data), "--out-dir", str(out), "--preset", "tiny",
                           "--max-updates", "2", "--progress", "false", "--threads", "1"])
            assert rc == 0, "probe workspace: nmt-train failed"
        return out

    @cached_property
    def lm_corpus(self) -> dict[str, Path]:
        lines = [" ".join(LM_WORDS[(i + k) % len(LM_WORDS)] for k in range(2 + i % 5)) for i in range(60)]
        paths = {}
        for split, part in (("train", lines[:40]), ("valid", lines[40:50]), ("test", lines[50:])):
            paths[split] = self.file(f"lm.{split}.txt", "\n".join(part) + "\n")
        return paths

    @cached_property
    def lm(self) -> Path:
        """A tiny LSTM LM trained for one epoch (a real ``nmt-lm-train`` folder)."""
        from nmt.cli.lm_train import cli_main

        out = self.inputs / "lm"
        if not (out / "checkpoint_last.pt").exists():
            c = self.lm_corpus
            rc = cli_main(["--train", str(c["train"]), "--valid", str(c["valid"]), "--test", str(c["test"]),
                           "--arch", "lstm", "--num-layers", "1", "--emb-dim", "8", "--hidden-dim", "8",
                           "--out-dir", str(out), "--threads", "1", "--progress", "false", "--max-epochs", "1",
                           "--batch-size", "8"])
            assert rc == 0, "probe workspace: nmt-lm-train failed"
        return out

    @cached_property
    def table(self) -> Path:
        """The decoder tests' hand-made Moses phrase table (4 scores per line)."""
        path = self.inputs / "toy.phrase-table"
        if not path.exists():
            shutil.copyfile(DECODER_DATA / "toy.phrase-table", path)
        return path

    @cached_property
    def table_gz(self) -> Path:
        path = self.inputs / "toy.phrase-table.gz"
        if not path.exists():
            path.write_bytes(gzip.compress(self.table.read_bytes(), mtime=0))
        return path

    @cached_property
    def arpa(self) -> Path:
        path = self.inputs / "toy.arpa"
        if not path.exists():
            shutil.copyfile(DECODER_DATA / "toy.arpa", path)
        return path

    @cached_property
    def moses_ini(self) -> Path:
        from smt_features.model.moses_ini_build import default_config

        path = self.inputs / "moses.ini"
        if not path.exists():
            default_config(str(self.table), str(self.arpa), lm_order=2).write(path)
        return path

    @cached_property
    def decode_input(self) -> Path:
        return self.file("decode.in", "a b\nb c a b\n")

    @cached_property
    def decode_ref(self) -> Path:
        return self.file("decode.ref", "x y\ny z x y\n")

    @cached_property
    def nbest(self) -> Path:
        """A Moses n-best list for :attr:`decode_input` written by ``smt-decode``."""
        from smt_features.cli.decode import cli_main

        path = self.inputs / "decode.nbest"
        if not path.exists():
            one_best = self.inputs / "decode.1best"
            rc = cli_main(["--moses-ini", str(self.moses_ini), "--input", str(self.decode_input), "--output",
                           str(one_best), "--n-best-list", str(path), "3", "--progress", "false"])
            assert rc == 0, "probe workspace: smt-decode failed"
        return path
