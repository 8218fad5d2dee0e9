"""Word vocabularies (top-K by frequency) and SentencePiece models, same surface.

Both reserve the same ids (:mod:`nmt.data.special`): ``<pad>`` 0, ``<unk>`` 1, ``<s>`` 2, ``</s>`` 3.
"""
from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import sentencepiece as spm

from nmt.core.io import DataError, atomic_write, iter_lines
from nmt.data.special import BOS, BOS_TOKEN, EOS, EOS_TOKEN, PAD, PAD_TOKEN, SPECIALS, UNK, UNK_TOKEN

PathLike = str | os.PathLike[str]


def _fingerprint(tokens: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(tokens).encode("utf-8")).hexdigest()[:16]


class Vocabulary:
    """Token ↔ id map with the four special symbols first; unknown tokens map to ``<unk>``."""

    def __init__(self, tokens: Sequence[str], counts: Sequence[int] | None = None) -> None:
        """``tokens`` must start with the specials in order and hold no duplicates."""
        if tuple(tokens[:4]) != SPECIALS:
            raise ValueError(f"a vocabulary must start with {SPECIALS}, got {tuple(tokens[:4])}")
        self._tokens = list(tokens)
        self._index = {tok: i for i, tok in enumerate(self._tokens)}
        if len(self._index) != len(self._tokens):
            dupes = sorted(t for t, c in Counter(self._tokens).items() if c > 1)
            raise ValueError(f"duplicate tokens in vocabulary: {dupes[:10]}")
        self.counts = list(counts) if counts is not None else [0] * len(self._tokens)

    @classmethod
    def build(cls, token_lists_or_counter: Iterable[Sequence[str]] | Mapping[str, int],
              max_size: int | None, min_count: int = 1) -> Vocabulary:
        """The ``max_size`` most frequent tokens seen at least ``min_count`` times.

        ``max_size`` counts regular tokens only (the 4 specials come on top;
        ``None`` = no limit). Ties in count are ordered by token string, so the
        result is deterministic. Specials found in the text (e.g. PTB's
        ``<unk>``) keep their reserved ids and only add to their count.
        """
        if isinstance(token_lists_or_counter, Mapping):
            counter = Counter(token_lists_or_counter)
        else:
            counter = Counter()
            for tokens in token_lists_or_counter:
                counter.update(tokens)
        for tok in counter:
            if not tok or any(ch.isspace() for ch in tok):
                raise ValueError(f"token {tok!r} is empty or contains whitespace")
        regular = [(tok, n) for tok, n in counter.items() if tok not in SPECIALS and n >= min_count]
        regular.sort(key=lambda item: (-item[1], item[0]))
        if max_size is not None:
            regular = regular[:max_size]
        tokens = list(SPECIALS) + [tok for tok, _ in regular]
        counts = [counter.get(s, 0) for s in SPECIALS] + [n for _, n in regular]
        return cls(tokens, counts)

    def __len__(self) -> int:
        return len(self._tokens)

    def __contains__(self, token: object) -> bool:
        return token in self._index

    def token(self, idx: int) -> str:
        """The token with id ``idx`` (IndexError if out of range)."""
        if not 0 <= idx < len(self._tokens):
            raise IndexError(f"id {idx} out of range for a vocabulary of {len(self._tokens)}")
        return self._tokens[idx]

    def index(self, token: str) -> int:
        """The id of ``token``, or the ``<unk>`` id if it is not in the vocabulary."""
        return self._index.get(token, UNK)

    @property
    def tokens(self) -> list[str]:
        return list(self._tokens)

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """Ids of ``tokens``; unknown tokens → ``<unk>`` id. No ``<s>``/``</s>`` is added."""
        get = self._index.get
        return [get(tok, UNK) for tok in tokens]

    def decode(self, ids: Iterable[int], strip_special: bool = True) -> list[str]:
        """Tokens of ``ids``; ``strip_special`` drops ``<pad>``, ``<s>``, ``</s>`` (``<unk>`` stays)."""
        skip = {PAD, BOS, EOS} if strip_special else set()
        return [self.token(int(i)) for i in ids if int(i) not in skip]

    def unk_count(self, tokens: Iterable[str]) -> int:
        """How many of ``tokens`` are not in the vocabulary."""
        return sum(tok not in self._index for tok in tokens)

    def fingerprint(self) -> str:
        """Short sha256 of the token list, to detect model/vocabulary mismatches."""
        return _fingerprint(self._tokens)

    def save(self, path: PathLike) -> None:
        """Write ``token<TAB>count`` per line, specials first (atomically)."""
        with atomic_write(path) as fh:
            for tok, n in zip(self._tokens, self.counts):
                fh.write(f"{tok}\t{n}\n")

    @classmethod
    def load(cls, path: PathLike) -> Vocabulary:
        """Read a file written by :meth:`save`; malformed lines raise :class:`DataError`."""
        tokens: list[str] = []
        counts: list[int] = []
        seen: dict[str, int] = {}
        for line_no, line in enumerate(iter_lines(path), start=1):
            fields = line.split("\t")
            if len(fields) != 2 or not fields[0] or any(ch.isspace() for ch in fields[0]):
                raise DataError(path, line_no, f"expected 'token<TAB>count', got {line!r}")
            tok, count_text = fields
            try:
                count = int(count_text)
            except ValueError:
                count = -1
            if count < 0:
                raise DataError(path, line_no, f"count {count_text!r} is not a non-negative integer")
            if tok in seen:
                raise DataError(path, line_no, f"duplicate token {tok!r} (first on line {seen[tok]})")
            if line_no <= len(SPECIALS) and tok != SPECIALS[line_no - 1]:
                raise DataError(path, line_no, f"expected special symbol {SPECIALS[line_no - 1]!r}, got {tok!r}")
            seen[tok] = line_no
            tokens.append(tok)
            counts.append(count)
        if len(tokens) < len(SPECIALS):
            raise DataError(path, len(tokens) + 1,
                            f"missing special symbol {SPECIALS[len(tokens)]!r} (file ends early)")
        return cls(tokens, counts)

    def __repr__(self) -> str:
        return f"Vocabulary(size={len(self)}, fingerprint={self.fingerprint()})"


class SentencePieceVocab:
    """A SentencePiece model with the :class:`Vocabulary` surface.

    Unlike :class:`Vocabulary`, :meth:`encode` takes a raw (untokenized)
    string and :meth:`decode` returns a string.
    """

    def __init__(self, model_path: PathLike) -> None:
        self.path = Path(model_path)
        self._proto = self.path.read_bytes()
        self._sp = spm.SentencePieceProcessor(model_proto=self._proto)
        ids = (self._sp.pad_id(), self._sp.unk_id(), self._sp.bos_id(), self._sp.eos_id())
        if ids != (PAD, UNK, BOS, EOS):
            raise ValueError(f"{self.path}: SentencePiece model has pad/unk/bos/eos ids {ids}, "
                             f"expected {(PAD, UNK, BOS, EOS)}; retrain with SentencePieceVocab.train")

    @classmethod
    def train(cls, text_files: Sequence[PathLike], model_prefix: PathLike, vocab_size: int,
              model_type: str = "unigram") -> SentencePieceVocab:
        """Train ``<model_prefix>.model`` on plain-text files (one sentence per line)."""
        prefix = Path(model_prefix)
        prefix.parent.mkdir(parents=True, exist_ok=True)
        try:
            spm.SentencePieceTrainer.train(
                input=",".join(str(f) for f in text_files), model_prefix=str(prefix),
                vocab_size=vocab_size, model_type=model_type, character_coverage=1.0,
                pad_id=PAD, unk_id=UNK, bos_id=BOS, eos_id=EOS,
                pad_piece=PAD_TOKEN, unk_piece=UNK_TOKEN, bos_piece=BOS_TOKEN, eos_piece=EOS_TOKEN,
                input_sentence_size=2_000_000, shuffle_input_sentence=True,
                num_threads=1, minloglevel=2)
        except RuntimeError as err:
            raise ValueError(f"SentencePiece training on {[str(f) for f in text_files]} failed: {err}") from err
        return cls(f"{prefix}.model")

    def __len__(self) -> int:
        return self._sp.get_piece_size()

    def __contains__(self, piece: object) -> bool:
        return isinstance(piece, str) and (self._sp.piece_to_id(piece) != UNK or piece == UNK_TOKEN)

    def token(self, idx: int) -> str:
        if not 0 <= idx < len(self):
            raise IndexError(f"id {idx} out of range for a vocabulary of {len(self)}")
        return self._sp.id_to_piece(idx)

    def index(self, piece: str) -> int:
        return self._sp.piece_to_id(piece)

    def pieces(self, text: str) -> list[str]:
        """The pieces of a raw string."""
        return self._sp.encode(text, out_type=str)

    def encode(self, text: str) -> list[int]:
        """Ids of a raw (untokenized) string. No ``<s>``/``</s>`` is added."""
        return self._sp.encode(text, out_type=int)

    def decode(self, ids: Iterable[int], strip_special: bool = True) -> str:
        """The text of ``ids``; ``strip_special`` drops ``<pad>``, ``<s>``, ``</s>``."""
        skip = {PAD, BOS, EOS} if strip_special else set()
        return self._sp.decode([int(i) for i in ids if int(i) not in skip])

    def unk_count(self, text: str) -> int:
        """How many pieces of a raw string are ``<unk>``."""
        return self.encode(text).count(UNK)

    def fingerprint(self) -> str:
        """Short sha256 of the piece list."""
        return _fingerprint(self._sp.id_to_piece(i) for i in range(len(self)))

    def save(self, path: PathLike) -> None:
        """Write the ``.model`` file (atomically)."""
        with atomic_write(path, "wb") as fh:
            fh.write(self._proto)

    @classmethod
    def load(cls, path: PathLike) -> SentencePieceVocab:
        return cls(path)

    def __repr__(self) -> str:
        return f"SentencePieceVocab({str(self.path)!r}, size={len(self)})"


def load_vocab(path: PathLike) -> Vocabulary | SentencePieceVocab:
    """Load by suffix: ``.model`` → :class:`SentencePieceVocab`, else :class:`Vocabulary`."""
    if str(path).endswith(".model"):
        return SentencePieceVocab.load(path)
    return Vocabulary.load(path)
