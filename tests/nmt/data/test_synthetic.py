"""The synthetic corpus generator and the combined-corpus split: seeded, statistically right, streamed."""
from __future__ import annotations

import math
import tracemalloc
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from nmt.cli.synthetic import cli_main
from nmt.data.combine_corpus import split
from nmt.data.synthetic import Lexicon, SyntheticConfig, generate, spell, zipf_slope


def _cfg(**kw: object) -> SyntheticConfig:
    base: dict[str, object] = {"out_prefix": "unused", "pairs": 2000, "seed": 5, "vocab": 5000}
    base.update(kw)
    return SyntheticConfig(**base)  # type: ignore[arg-type]


def test_same_seed_same_files_other_seed_other_files(tmp_path: Path) -> None:
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        assert cli_main(["--out-prefix", str(tmp_path / name), "--pairs", "300", "--seed", str(seed),
                         "--alignment", "--vocab", "2000"]) == 0
    for ext in ("en", "fr", "align"):
        assert (tmp_path / f"a.{ext}").read_bytes() == (tmp_path / f"b.{ext}").read_bytes()
    assert (tmp_path / "a.en").read_bytes() != (tmp_path / "c.en").read_bytes()
    assert len((tmp_path / "a.en").read_text(encoding="utf-8").splitlines()) == 300
    # the library stream too: same settings (chunk size included), same pairs
    assert list(generate(_cfg(pairs=50, chunk=7))) == list(generate(_cfg(pairs=50, chunk=7)))


def test_lengths_and_zipf_within_tolerance() -> None:
    pairs = list(generate(_cfg()))
    src_len = [len(s.split()) for s, _, _ in pairs]
    logs = [math.log(n) for n in src_len]
    mu = sum(logs) / len(logs)
    sd = math.sqrt(sum((x - mu) ** 2 for x in logs) / len(logs))
    assert abs(mu - 1.842) < 0.05 and abs(sd - 0.454) < 0.05, (mu, sd)
    src = Counter(w for s, _, _ in pairs for w in s.split())
    tgt = Counter(w for _, t, _ in pairs for w in t.split())
    assert abs(zipf_slope(list(src.values())) + 1.0) < 0.15
    assert abs(zipf_slope(list(tgt.values())) + 1.0) < 0.25  # 1-to-2 and 2-to-1 links bend it a little
    steeper = Counter(w for s, _, _ in generate(_cfg(zipf=1.4)) for w in s.split())
    assert abs(zipf_slope(list(steeper.values())) + 1.4) < 0.15


def test_gold_alignment_follows_the_lexicon() -> None:
    cfg = _cfg(pairs=400)
    lex = Lexicon(cfg)
    src_word = {w: r for r, w in enumerate(lex.src)}
    tgt_word = {w: r for r, w in enumerate(lex.tgt)}
    kinds: Counter[str] = Counter()
    swaps = 0
    for s, t, a in generate(cfg):
        sw, tw = s.split(), t.split()
        links = [tuple(map(int, x.split("-"))) for x in a.split()]
        assert {i for i, _ in links} == set(range(len(sw))) and {j for _, j in links} == set(range(len(tw)))
        for i, j in links:
            r, q = src_word[sw[i]], tgt_word[tw[j]]
            assert q == r or (r < cfg.particles) or (lex.doubles[r] and q == lex.second[r])
        per_src = Counter(i for i, _ in links)
        per_tgt = Counter(j for _, j in links)
        kinds.update("1-2" for n in per_src.values() if n == 2)
        kinds.update("2-1" for n in per_tgt.values() if n == 2)
        swaps += sum(1 for (i1, j1), (i2, j2) in zip(links, links[1:]) if i2 > i1 and j2 < j1)
    assert kinds["1-2"] > 0 and kinds["2-1"] > 0 and swaps > 0


def test_streamed_memory_does_not_grow_with_the_corpus() -> None:
    cfg = _cfg(pairs=4000, chunk=500)
    lex = Lexicon(cfg)
    assert isinstance(generate(cfg, lex), Iterator)

    def peak(pairs: int) -> int:
        tracemalloc.start()
        for _ in generate(_cfg(pairs=pairs, chunk=200), lex):
            pass
        top = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return top

    small, large = peak(400), peak(3200)  # 2 chunks vs 16
    assert large < 1.5 * small, (small, large)


def test_spellings_are_distinct_and_bad_settings_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    words = [spell(r, ["b", "d"], ["a", "o"]) for r in range(200)]
    assert len(set(words)) == 200 and words[:4] == ["ba", "bo", "da", "do"]
    assert cli_main(["--out-prefix", str(tmp_path / "x"), "--swap", "1.5"]) == 2
    assert "--swap must be a rate" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_held_out_sentences_never_in_train() -> None:
    pairs = [("s", f"e{i % 40}", f"f{i % 50}") for i in range(300)] + [("s", "x", "y")]
    dev, test, train, left_out = split(pairs, 5, 5, seed=1)
    assert len(dev) == 5 and len(test) == 5 and not set(dev) & set(test)
    held_en = {pairs[i][1] for i in dev + test}
    held_fr = {pairs[i][2] for i in dev + test}
    assert len(held_en) == 10 and len(held_fr) == 10  # no duplicate sentence inside dev + test
    assert all(pairs[i][1] not in held_en and pairs[i][2] not in held_fr for i in train)
    assert len(dev) + len(test) + len(train) + left_out == len(pairs)
    assert split(pairs, 5, 5, seed=1) == (dev, test, train, left_out)
