"""A seeded, streamed synthetic parallel corpus with Zipfian words, real-like lengths and a known alignment.

Built to show the pipeline at sizes the real data here cannot reach (1M, 3M pairs). Model:

* source length ~ round(LogNormal(mu, sigma)), clipped to [1, max_len]; the defaults are the fit of the
  whitespace-token lengths of Multi30k train + Tatoeba fra-eng English (196,130 sentences:
  mean ln-length 1.842, s.d. 0.454; French 1.916, 0.460);
* source words ~ Zipf(s) over ``vocab`` ranks (p(r) ∝ r^-s, default s = 1.0, as natural text);
* a fixed lexicon: source rank r → target rank r (so the target side is Zipfian too), spelt with another
  syllable inventory; a fixed set of source words (``one_to_two`` of the vocabulary, chosen by a seeded
  hash) translate into two target words (the word + one of the 20 most frequent target words); the
  ``particles`` most frequent source ranks after another word are absorbed into it at rate ``two_to_one``
  (a 2-to-1 link, the particle has no target word of its own); adjacent target blocks are swapped at rate
  ``swap`` (local reordering, as adjective–noun order between English and French).

The gold alignment (Pharaoh ``i-j``, source–target, 0-based) follows from the construction. Memory is
constant in the number of pairs: the generator yields one chunk of sentences at a time and keeps only the
vocabulary tables (O(vocab)).
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from nmt.core import config as C
from nmt.core.io import atomic_write
from nmt.core.errors import UsageError

_SRC_ONSETS = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "th", "sh", "ch"]
_SRC_VOWELS = ["a", "e", "i", "o", "u", "ay"]
_TGT_ONSETS = ["b", "c", "d", "f", "g", "j", "l", "m", "n", "p", "qu", "r", "s", "t", "v", "gn", "ch", "x"]
_TGT_VOWELS = ["a", "é", "i", "o", "ou", "eu", "è"]


@dataclass
class SyntheticConfig:
    out_prefix: str = C.field("", help="writes OUT_PREFIX.SRC and OUT_PREFIX.TGT (+ .align with --alignment)",
                              required=True)
    pairs: int = C.field(1000, help="number of sentence pairs")
    seed: int = C.field(1, help="random seed (same seed and settings: byte-identical files)")
    src_lang: str = C.field("en", help="source file suffix")
    tgt_lang: str = C.field("fr", help="target file suffix")
    gzip: bool = C.field(False, help="write .gz files (OUT_PREFIX.SRC.gz, ...)")
    alignment: bool = C.field(False, help="also write the gold alignment OUT_PREFIX.align (Pharaoh i-j)")
    vocab: int = C.field(50000, help="source vocabulary size (ranks of the Zipf law)")
    zipf: float = C.field(1.0, help="Zipf exponent s: p(rank r) proportional to r^-s")
    len_mu: float = C.field(1.842, help="mean of ln(source length) (fit to Multi30k + Tatoeba English)")
    len_sigma: float = C.field(0.454, help="s.d. of ln(source length)")
    max_len: int = C.field(80, help="longest source sentence (words)")
    one_to_two: float = C.field(0.1, help="share of source words whose translation is two target words")
    two_to_one: float = C.field(0.5, help="rate at which a particle after a word joins it (2-to-1 link)")
    particles: int = C.field(10, help="the most frequent source ranks that act as particles")
    swap: float = C.field(0.15, help="rate of swapping two adjacent target blocks (local reordering)")
    chunk: int = C.field(10000, help="sentences drawn per chunk: the memory bound (part of the seeded stream: keep it to reproduce)")


def spell(rank: int, onsets: list[str], vowels: list[str]) -> str:
    """The word for a 0-based rank: its digits in base len(onsets)·len(vowels) as syllables (short = frequent)."""
    base = len(onsets) * len(vowels)
    parts = []
    n = rank
    while True:
        n, d = divmod(n, base)
        parts.append(onsets[d // len(vowels)] + vowels[d % len(vowels)])
        if n == 0:
            break
        n -= 1  # bijective numbering: every rank gets a distinct spelling
    return "".join(reversed(parts))


def check(cfg: SyntheticConfig) -> None:
    """Refuse settings that make no corpus (UsageError: exit 2)."""
    if cfg.pairs < 0 or cfg.vocab < 30 or cfg.max_len < 1 or cfg.chunk < 1:
        raise UsageError("need --pairs >= 0, --vocab >= 30, --max-len >= 1, --chunk >= 1")
    for name in ("one_to_two", "two_to_one", "swap"):
        if not 0.0 <= getattr(cfg, name) <= 1.0:
            raise UsageError(f"--{name.replace('_', '-')} must be a rate in [0, 1]")
    if cfg.zipf <= 0 or cfg.len_sigma < 0:
        raise UsageError("need --zipf > 0 and --len-sigma >= 0")
    if not 0 <= cfg.particles < cfg.vocab // 2:
        raise UsageError("--particles must be in [0, vocab/2)")


class Lexicon:
    """The fixed tables of one configuration: word spellings, Zipf CDF, which words are 1-to-2."""

    def __init__(self, cfg: SyntheticConfig) -> None:
        self.src = [spell(r, _SRC_ONSETS, _SRC_VOWELS) for r in range(cfg.vocab)]
        self.tgt = [spell(r, _TGT_ONSETS, _TGT_VOWELS) for r in range(cfg.vocab)]
        weights = np.arange(1, cfg.vocab + 1, dtype=np.float64) ** -cfg.zipf
        self.cdf = np.cumsum(weights / weights.sum())
        self.cdf[-1] = 1.0
        fixed = np.random.default_rng([cfg.seed, 7])  # the lexicon does not depend on the chunking
        self.doubles = fixed.random(cfg.vocab) < cfg.one_to_two
        self.doubles[: cfg.particles] = False
        self.second = fixed.integers(0, 20, size=cfg.vocab)  # the extra target word of a 1-to-2 entry


def _sentence(ranks: list[int], coins: list[float], lex: Lexicon, cfg: SyntheticConfig
              ) -> tuple[str, str, str]:
    """One pair from source ranks and uniform coins (3 per word): source, target, gold alignment."""
    blocks: list[tuple[list[int], list[int]]] = []  # (source positions, target ranks) per block
    for i, r in enumerate(ranks):
        if r < cfg.particles and blocks and coins[3 * i] < cfg.two_to_one:
            blocks[-1][0].append(i)  # 2-to-1: the particle joins the previous word's block
            continue
        tgt = [r, int(lex.second[r])] if lex.doubles[r] else [r]
        blocks.append(([i], tgt))
    k = 0
    while k + 1 < len(blocks):  # local reordering: swap adjacent blocks
        if coins[3 * blocks[k][0][0] + 1] < cfg.swap:
            blocks[k], blocks[k + 1] = blocks[k + 1], blocks[k]
            k += 2
        else:
            k += 1
    words: list[str] = []
    links: list[tuple[int, int]] = []
    for src_pos, tgt in blocks:
        for t in tgt:
            links.extend((i, len(words)) for i in src_pos)
            words.append(lex.tgt[t])
    links.sort()
    return (" ".join(lex.src[r] for r in ranks), " ".join(words),
            " ".join(f"{i}-{j}" for i, j in links))


def generate(cfg: SyntheticConfig, lex: Lexicon | None = None) -> Iterator[tuple[str, str, str]]:
    """Yield ``cfg.pairs`` (source, target, alignment) triples, ``cfg.chunk`` sentences drawn at a time."""
    check(cfg)
    lex = lex or Lexicon(cfg)
    rng = np.random.default_rng(cfg.seed)
    left = cfg.pairs
    while left > 0:
        n = min(cfg.chunk, left)
        left -= n
        lengths = np.clip(np.rint(rng.lognormal(cfg.len_mu, cfg.len_sigma, size=n)), 1, cfg.max_len)
        lengths = lengths.astype(np.int64)
        total = int(lengths.sum())
        ranks = np.searchsorted(lex.cdf, rng.random(total), side="right").tolist()
        coins = rng.random(3 * total).tolist()
        start = 0
        for length in lengths.tolist():
            yield _sentence(ranks[start:start + length], coins[3 * start:3 * (start + length)], lex, cfg)
            start += length


def output_paths(cfg: SyntheticConfig) -> dict[str, Path]:
    """The files a run writes, by role (src, tgt and, with --alignment, align)."""
    gz = ".gz" if cfg.gzip else ""
    paths = {"src": Path(f"{cfg.out_prefix}.{cfg.src_lang}{gz}"), "tgt": Path(f"{cfg.out_prefix}.{cfg.tgt_lang}{gz}")}
    if cfg.alignment:
        paths["align"] = Path(f"{cfg.out_prefix}.align{gz}")
    if len(set(paths.values())) != len(paths):
        raise UsageError("--src-lang, --tgt-lang and 'align' must differ")
    return paths


def write_corpus(cfg: SyntheticConfig, progress: bool = True) -> dict[str, Path]:
    """Stream the corpus into its files, each written atomically (nothing partial left on an error)."""
    check(cfg)
    paths = output_paths(cfg)
    with ExitStack() as stack:
        handles = {k: stack.enter_context(atomic_write(p, compresslevel=1)) for k, p in paths.items()}
        src, tgt, ali = handles["src"], handles["tgt"], handles.get("align")
        for s, t, a in tqdm(generate(cfg), total=cfg.pairs, disable=not progress, unit=" pairs",
                            mininterval=2.0, desc="synthetic"):
            src.write(s + "\n")
            tgt.write(t + "\n")
            if ali is not None:
                ali.write(a + "\n")
    return paths


def zipf_slope(counts: list[int], top: int = 200) -> float:
    """Least-squares slope of ln(frequency) on ln(rank) over the ``top`` ranks: ≈ -s for a Zipf(s) sample."""
    freqs = sorted((c for c in counts if c > 0), reverse=True)[:top]
    xs = [math.log(r) for r in range(1, len(freqs) + 1)]
    ys = [math.log(f) for f in freqs]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
