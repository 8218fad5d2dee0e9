"""The helpers of the smt-rescore and smt-rerank tests: training tiny models, a toy phrase table, running and
reading, reference scores (the ``setup`` fixture that uses them: conftest.py here)."""
from __future__ import annotations

import gzip
import json
import math
import random
import sys
from pathlib import Path

from nmt.core.formats.phrase_table import write_phrase_table
from smt_features.neural.rescore import rescore_table
from smt_features.neural.rescore_config import RescoreConfig

BIN = Path(sys.executable).parent
FLOOR = math.exp(-100)


# -- fixtures -----------------------------------------------------------------------------------------
def train_model(data: Path, out: Path, src: str, tgt: str, *extra: str) -> Path:
    from nmt.cli.train import cli_main as train_main

    rc = train_main(["--data-dir", str(data), "--out-dir", str(out), "--preset", "tiny", "--src-lang", src,
                     "--tgt-lang", tgt, "--max-updates", "2", "--progress", "false", "--threads", "1", *extra])
    assert rc == 0
    return out


def toy_table(data: Path, path: Path, seed: int = 0) -> Path:
    """A Moses table of the toy corpus's n-grams (up to 4 words), plus pairs with unknown words."""
    rng = random.Random(seed)
    src_lines = (data / "train.tok.en").read_text(encoding="utf-8").split("\n")
    tgt_lines = (data / "train.tok.fr").read_text(encoding="utf-8").split("\n")
    pairs = set()
    for s, t in zip(src_lines, tgt_lines):
        sw, tw = s.split(), t.split()
        for n in range(1, 5):
            for i in range(len(sw) - n + 1):
                pairs.add((tuple(sw[i:i + n]), tuple(tw[i:i + n])))
                if n > 1 and rng.random() < 0.3:  # a target of another length: varied lengths per source
                    pairs.add((tuple(sw[i:i + n]), tuple(tw[i:i + n - 1])))
    pairs |= {(("s1", "zz"), ("t1", "qq")), (("ww",), ("t3",)), (("s2",), ("yy", "xx", "t2"))}
    entries = []
    for src, tgt in pairs:
        k = min(len(src), len(tgt))
        scores = tuple(round(rng.uniform(0.01, 1.0), 4) for _ in range(4))
        entries.append((src, tgt, scores, tuple((i, i) for i in range(k)), (float(rng.randint(1, 9)),) * 3))
    write_phrase_table(entries, path)
    return path


def run_rescore(table: Path, model: Path, output: Path, **kw) -> dict:
    kw.setdefault("threads", 1)
    kw.setdefault("progress", False)
    kw.setdefault("floor", FLOOR)
    rescore_table(RescoreConfig(table=str(table), model=str(model), output=str(output), **kw))
    return json.loads(Path(f"{output}.rescore.json").read_text(encoding="utf-8"))


def table_lines(path: Path) -> list[bytes]:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as fh:
        return fh.read().split(b"\n")


def strip_appended(out_line: bytes, k: int) -> tuple[bytes, list[float]]:
    """The line without its last ``k`` scores (and the values removed)."""
    first = out_line.find(b"|||")
    second = out_line.find(b"|||", first + 3)
    third = out_line.find(b"|||", second + 3)
    end = len(out_line) if third < 0 else third
    field = out_line[second + 3:end]
    body = field.rstrip()
    toks = body.split(b" ")
    new = toks[-k:]
    kept = body[:len(body) - len(b" ".join(new)) - 1]
    return out_line[:second + 3] + kept + field[len(body):] + out_line[end:], [float(x) for x in new]


def teacher_forced_log_probs(model, src_vocab, tgt_vocab, srcs, tgts) -> list[float]:
    """Reference ln p(tgt | src) per pair: the model's own teacher-forced pass, one padded batch."""
    import torch

    from nmt.data.batching import pair_batch

    batch = pair_batch([src_vocab.encode(list(s)) for s in srcs], [tgt_vocab.encode(list(t)) for t in tgts])
    with torch.no_grad():
        return model.eval().pair_log_probs(batch["src"], batch["tgt_in"], batch["tgt_out"]).tolist()


class Reference:
    """Teacher-forced reference scores (the model's own forward pass), shaped like ``PairScore``."""

    def __init__(self, loaded):
        self.m = loaded

    def score_pairs(self, srcs, tgts):
        from types import SimpleNamespace

        m = self.m
        lps = teacher_forced_log_probs(m.model, m.src_vocab, m.tgt_vocab, srcs, tgts)
        return [SimpleNamespace(log_prob=lp, src_unk=m.src_vocab.unk_count(list(s)),
                                tgt_unk=m.tgt_vocab.unk_count(list(t))) for lp, s, t in zip(lps, srcs, tgts)]


def reference_scorer(model_dir: Path):
    from nmt.translation.model_io import load_translation_model

    m = load_translation_model(model_dir, which="last")
    return Reference(m), m


def bad_table(setup, tmp_path: Path, bad: dict[int, bytes]) -> tuple[Path, list[bytes]]:
    lines = table_lines(setup["table"])[:40]
    for i, text in bad.items():
        lines[i - 1] = text
    path = tmp_path / "bad.gz"
    with gzip.open(path, "wb") as fh:
        fh.write(b"\n".join(lines) + b"\n")
    return path, lines


BAD_LINES = {
    5: b"s1 s2 ||| t1 t2 ||| 0.5 0.5 0.5 ||| 0-0 ||| 1 1 1 ||| |||",  # 3 scores, others have 4
    9: b"s1 ||| t1 ||| 0.5 0.5 0.5 0.5",  # 3 fields, others have 7
    12: b" ||| t1 ||| 0.5 0.5 0.5 0.5 ||| ||| 1 1 1 ||| |||",  # empty source phrase
    20: b"s1 \xff ||| t1 ||| 0.5 0.5 0.5 0.5 ||| 0-0 ||| 1 1 1 ||| |||",  # not UTF-8
}
