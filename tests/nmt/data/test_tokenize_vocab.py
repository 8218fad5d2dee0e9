"""Moses tokenization with escaping, word vocabularies and SentencePiece models."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from nmt.core.io import DataError
from nmt.data.tokenize import MosesTokenizer, unescape_moses
from nmt.data.special import BOS_TOKEN, EOS_TOKEN, PAD_TOKEN, UNK, UNK_TOKEN
from nmt.data.vocab import SentencePieceVocab, Vocabulary, load_vocab


def test_pipe_and_brackets_are_escaped() -> None:
    tokens = MosesTokenizer("en").tokenize('fish | chips <b> & "x" [y]')
    assert "&#124;" in tokens and "|" not in tokens
    assert {"&lt;", "&gt;", "&amp;", "&quot;", "&#91;", "&#93;"} <= set(tokens)
    assert "|" in MosesTokenizer("en", escape=False).tokenize("fish | chips")


def test_french_apostrophe_round_trip() -> None:
    tok = MosesTokenizer("fr")
    sentence = "L'enseignant n'a pas lu le livre | aujourd'hui."
    tokens = tok.tokenize(sentence)
    assert tokens[:2] == ["L&apos;", "enseignant"]
    assert all(not any(ch.isspace() for ch in t) for t in tokens)
    assert tok.detokenize(tokens) == sentence


def test_lowercase_and_unescape_helper() -> None:
    assert MosesTokenizer("en", lowercase=True).tokenize("The Cat.") == ["the", "cat", "."]
    assert unescape_moses("l&apos; homme &#124; &amp;lt;") == "l' homme | &lt;"


def test_vocab_is_deterministic_and_capped() -> None:
    sentences = [["b", "a", "c"], ["a", "b", "d"], ["e", "a"], ["<unk>"]]
    first = Vocabulary.build(sentences, max_size=3)
    second = Vocabulary.build(Counter(t for s in reversed(sentences) for t in s), max_size=3)
    assert first.tokens == second.tokens == [PAD_TOKEN, UNK_TOKEN, "<s>", "</s>", "a", "b", "c"]
    assert first.fingerprint() == second.fingerprint()
    assert len(first) == 7 and "c" in first and "d" not in first
    assert Vocabulary.build(sentences, max_size=None, min_count=2).tokens[4:] == ["a", "b"]
    assert first.counts[UNK] == 1


def test_vocab_encode_decode_and_round_trip(tmp_path: Path) -> None:
    vocab = Vocabulary.build([["le", "chat", "dort"], ["le", "chien"]], max_size=None)
    ids = vocab.encode(["le", "zèbre", "dort"])
    assert ids[1] == UNK and vocab.unk_count(["le", "zèbre", "gnou"]) == 2
    assert vocab.decode([vocab.index(BOS_TOKEN), *ids, vocab.index(EOS_TOKEN), 0]) == ["le", UNK_TOKEN, "dort"]
    assert vocab.decode([2, 4], strip_special=False) == [BOS_TOKEN, vocab.token(4)]
    path = tmp_path / "vocab.fr.tsv"
    vocab.save(path)
    assert path.read_text(encoding="utf-8").splitlines()[:5] == [f"{PAD_TOKEN}\t0", f"{UNK_TOKEN}\t0",
                                                                 f"{BOS_TOKEN}\t0", f"{EOS_TOKEN}\t0", "le\t2"]
    loaded = load_vocab(path)
    assert isinstance(loaded, Vocabulary)
    assert loaded.tokens == vocab.tokens and loaded.counts == vocab.counts
    assert loaded.fingerprint() == vocab.fingerprint()
    with pytest.raises(IndexError):
        vocab.token(len(vocab))


SPECIAL_LINES = f"{PAD_TOKEN}\t0\n{UNK_TOKEN}\t0\n{BOS_TOKEN}\t0\n{EOS_TOKEN}\t0\n"


@pytest.mark.parametrize("body, line, what", [
    (SPECIAL_LINES + "a\t3\nb\t2\na\t1\n", 7, "duplicate token 'a'"),
    (SPECIAL_LINES + "a\t3\nb 2\n", 6, "expected 'token<TAB>count'"),
    (SPECIAL_LINES + "a\tmany\n", 5, "not a non-negative integer"),
    (f"{PAD_TOKEN}\t0\n{BOS_TOKEN}\t0\n", 2, "expected special symbol '<unk>'"),
    (f"{PAD_TOKEN}\t0\n{UNK_TOKEN}\t0\n", 3, "missing special symbol '<s>'"),
])
def test_vocab_load_errors_name_the_line(tmp_path: Path, body: str, line: int, what: str) -> None:
    path = tmp_path / "bad.tsv"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(DataError) as info:
        Vocabulary.load(path)
    assert str(path) in str(info.value) and f"{path}:{line}:" in str(info.value) and what in str(info.value)


def test_sentencepiece_vocab(tmp_path: Path) -> None:
    text = tmp_path / "train.txt"
    words = ["chat", "chien", "maison", "rouge", "vert", "grand", "petit", "homme", "femme", "enfant"]
    text.write_text("".join(f"le {a} {b} est {c} .\n" for a in words for b in words[:5] for c in words[5:]),
                    encoding="utf-8")
    sp = SentencePieceVocab.train([text], tmp_path / "sp", vocab_size=25)
    assert len(sp) == 25 and [sp.token(i) for i in range(4)] == [PAD_TOKEN, UNK_TOKEN, BOS_TOKEN, EOS_TOKEN]
    ids = sp.encode("le chat est rouge .")
    assert sp.decode([2, *ids, 3]) == "le chat est rouge ."
    copy = tmp_path / "copy" / "sp.fr.model"
    sp.save(copy)
    loaded = load_vocab(copy)
    assert isinstance(loaded, SentencePieceVocab) and loaded.fingerprint() == sp.fingerprint()
    assert loaded.fingerprint() != Vocabulary.build([words], None).fingerprint()


def test_sacremoses_is_imported_only_when_text_is_tokenized_or_detokenized() -> None:
    """nmt-translate on tokenized input writing tokens needs no sacremoses (its import: 0.6-0.75 s)."""
    import subprocess
    import sys

    from tests import ROOT

    code = ("import sys\n"
            "import nmt.cli.translate\n"
            "from nmt.data.tokenize import MosesTokenizer\n"
            "tok = MosesTokenizer('fr')\n"
            "before = 'sacremoses' in sys.modules\n"
            "words = tok.tokenize(\"l'homme | dit\")\n"
            "print(before, 'sacremoses' in sys.modules, words == ['l&apos;', 'homme', '&#124;', 'dit'])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.split() == ["False", "True", "True"]
