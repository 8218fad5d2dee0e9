"""KenLM estimation (lmplz), binarization (smt_features.train.kenlm_build) and queries (smt_features.model.kenlm).

Tests that run KenLM's tools skip when they are not built; build them with
``bash third_party/build_kenlm.sh`` (CI does so first).
"""
from __future__ import annotations

import gzip
import math
import re
import subprocess

import pytest
from tests import TEST_DATA

kenlm = pytest.importorskip("kenlm")

from nmt.core.io import read_lines  # noqa: E402
from smt_features.cli.kenlm import cli_main  # noqa: E402
from smt_features.model.kenlm import KenLMScorer  # noqa: E402
from smt_features.train import kenlm_build as kenlm_lm  # noqa: E402
from smt_features.train.kenlm_build import (KenLMError, KenLMNotFoundError, build_binary,  # noqa: E402
                                            estimate_arpa, find_kenlm_binary)
from smt_features.train.kenlm_text import DEFAULT_MAP_UNK  # noqa: E402
from nmt.core.perplexity import LN10, kenlm_perplexity, split_words  # noqa: E402

DATA = TEST_DATA / "kenlm"
TINY = DATA / "tiny.txt"
TINY_UNK = DATA / "tiny_unk.txt"
MEM = "64M"  # lmplz -S for these tiny texts (its vocabulary hash alone needs ~24 MB)


def _tools_missing() -> str | None:
    try:
        find_kenlm_binary("lmplz")
        find_kenlm_binary("build_binary")
    except KenLMNotFoundError:
        return (f"KenLM tools not built ({kenlm_lm.REPO_KENLM_BIN}/lmplz absent, not on $KENLM_BIN or PATH): "
                "run `bash third_party/build_kenlm.sh`")
    return None


needs_tools = pytest.mark.skipif(_tools_missing() is not None, reason=_tools_missing() or "")

UNSEEN = ["the bird is red", "a mat saw the log", "zebra cat", "the the the", ""]


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    d = tmp_path_factory.mktemp("kenlm")
    arpa = estimate_arpa(TINY, d / "tiny3.arpa", order=3, memory=MEM, discount_fallback=True, temp_dir=d / "tmp")
    binary = build_binary(arpa, d / "tiny3.binary")
    return arpa, binary


@needs_tools
def test_round_trip_arpa_and_binary(tiny_models):
    arpa, binary = tiny_models
    text = arpa.read_text(encoding="utf-8")
    assert text.lstrip().startswith("\\data\\") and "ngram 3=" in text and text.rstrip().endswith("\\end\\")
    assert not list(arpa.parent.glob(".*.tmp")), "temporary files left behind"

    raw_arpa, raw_bin = kenlm.Model(str(arpa)), kenlm.Model(str(binary))
    assert raw_arpa.order == raw_bin.order == 3
    s_arpa, s_bin = KenLMScorer(arpa), KenLMScorer(binary)
    assert s_arpa.order == s_bin.order == 3
    for line in list(read_lines(TINY, allow_empty=True)) + UNSEEN:
        ours = s_arpa.score_sentence(split_words(line))
        assert ours == pytest.approx(raw_arpa.score(line) * math.log(10), rel=1e-12, abs=1e-12)
        assert ours < 0
        assert s_bin.score_sentence(line) == pytest.approx(ours, rel=1e-6)
        toks = s_arpa.token_scores(line)
        assert len(toks) == len(split_words(line)) + 1
        assert [t.ln_prob for t in toks] == pytest.approx(
            [lp * LN10 for lp, _, _ in raw_arpa.full_scores(line)], rel=1e-12)
        assert math.fsum(t.ln_prob for t in toks) == pytest.approx(ours, rel=1e-5)
    assert s_arpa.vocab_contains("cat") and not s_arpa.vocab_contains("zebra")
    assert [t.is_oov for t in s_arpa.token_scores("zebra cat")] == [True, False, False]


@needs_tools
def test_perplexity_equals_kenlm_and_counts_end_of_sentence(tiny_models):
    arpa, binary = tiny_models
    model = kenlm.Model(str(binary))
    scorer = KenLMScorer(binary)
    lines = list(read_lines(TINY, allow_empty=True)) + UNSEEN[:-1]
    for line in lines:
        n_words = len(line.split())
        # kenlm's own per-sentence perplexity divides by words + 1 (the </s>) ...
        assert model.perplexity(line) == pytest.approx(10 ** (-model.score(line) / (n_words + 1)), rel=1e-9)
        assert model.perplexity(line) != pytest.approx(10 ** (-model.score(line) / n_words), rel=1e-3)
        # ... and so does ours.
        res = kenlm_perplexity(scorer, [line])
        assert res.num_tokens == n_words + 1
        assert res.ppl == pytest.approx(model.perplexity(line), rel=1e-5)
    corpus = kenlm_perplexity(scorer, lines)
    n = sum(len(line.split()) + 1 for line in lines)
    assert corpus.num_tokens == n and corpus.num_sentences == len(lines)
    assert corpus.num_oov == 1  # "zebra"
    assert corpus.ppl == pytest.approx(10 ** (-sum(model.score(line) for line in lines) / n), rel=1e-5)


@needs_tools
def test_perplexity_equals_query_tool(tiny_models, tmp_path):
    try:
        query = find_kenlm_binary("query")
    except KenLMNotFoundError:
        pytest.skip("KenLM's query tool not built")
    arpa, binary = tiny_models
    lines = list(read_lines(TINY, allow_empty=True)) + UNSEEN[:-1]
    text = "\n".join(lines) + "\n"
    out = subprocess.run([str(query), "-v", "summary", str(binary)], input=text.encode(),
                         capture_output=True, check=True).stdout.decode()
    ppl = float(re.search(r"Perplexity including OOVs:\s+(\S+)", out).group(1))
    tokens = int(re.search(r"^Tokens:\s+(\d+)", out, re.M).group(1))
    oov = int(re.search(r"^OOVs:\s+(\d+)", out, re.M).group(1))
    res = kenlm_perplexity(KenLMScorer(binary), lines)
    assert (res.num_tokens, res.num_oov) == (tokens, oov)
    assert res.ppl == pytest.approx(ppl, rel=1e-5)


@needs_tools
def test_score_word_state_chaining(tiny_models):
    _, binary = tiny_models
    scorer = KenLMScorer(binary)
    for line in list(read_lines(TINY, allow_empty=True))[:4] + UNSEEN:
        state = scorer.begin_state()
        total = 0.0
        for word in split_words(line) + ["</s>"]:
            lp, new_state = scorer.score_word(state, word)
            total += lp
            state = new_state
        assert total == pytest.approx(scorer.score_sentence(line), rel=1e-5, abs=1e-6)
    # Same context, same state: usable as a recombination key.
    _, s1 = scorer.score_word(scorer.begin_state(), "the")
    _, s2 = scorer.score_word(scorer.begin_state(), "the")
    assert s1 == s2 and hash(s1) == hash(s2)
    # ln p(</s> | state) helper
    assert scorer.end_sentence(s1) == pytest.approx(scorer.score_word(s1, "</s>")[0])
    assert scorer.null_state() != scorer.begin_state()


@needs_tools
def test_literal_unk_is_mapped_consistently(tmp_path):
    # lmplz refuses the literal <unk>; the error carries its stderr and a hint.
    with pytest.raises(KenLMError, match=r"(?s)Special word <unk>.*map_unk"):
        estimate_arpa(TINY_UNK, tmp_path / "raw.arpa", order=2, memory=MEM, discount_fallback=True, map_unk=None)
    assert not (tmp_path / "raw.arpa").exists()
    assert not list(tmp_path.glob(".*.tmp"))

    arpa = estimate_arpa(TINY_UNK, tmp_path / "m.arpa", order=2, memory=MEM, discount_fallback=True)
    assert f"\t{DEFAULT_MAP_UNK}\t" in arpa.read_text(encoding="utf-8")
    scorer = KenLMScorer(arpa)  # same default map_unk
    assert scorer.vocab_contains("<unk>") and scorer.vocab_contains(DEFAULT_MAP_UNK)
    toks = scorer.token_scores("the <unk> sat")
    assert [t.is_oov for t in toks] == [False, False, False, False]
    # Without the rewrite at query time the same word would be an OOV scored as KenLM's <unk>.
    unmapped = KenLMScorer(arpa, map_unk=None).token_scores("the <unk> sat")
    assert unmapped[1].is_oov and unmapped[1].ln_prob < toks[1].ln_prob

    # --skip_symbols instead: <unk> read as whitespace.
    estimate_arpa(TINY_UNK, tmp_path / "skip.arpa", order=2, memory=MEM, discount_fallback=True,
                  map_unk=None, skip_symbols=True)


@needs_tools
def test_map_unk_collision_is_refused(tmp_path):
    text = tmp_path / "t.txt"
    text.write_text(f"a <unk> b\na {DEFAULT_MAP_UNK} b\na b\n", encoding="utf-8")
    with pytest.raises(ValueError, match="both"):
        estimate_arpa(text, tmp_path / "c.arpa", order=2, memory=MEM, discount_fallback=True)
    assert not (tmp_path / "c.arpa").exists()


@needs_tools
def test_gz_and_plain_text_give_the_same_model(tmp_path):
    gz = tmp_path / "tiny.txt.gz"
    with gzip.open(gz, "wb") as fh:
        fh.write(TINY.read_bytes())
    a = estimate_arpa(TINY, tmp_path / "a.arpa", order=3, memory=MEM, discount_fallback=True, map_unk=None)
    b = estimate_arpa(gz, tmp_path / "b.arpa", order=3, memory=MEM, discount_fallback=True, map_unk=None)
    c = estimate_arpa(gz, tmp_path / "c.arpa", order=3, memory=MEM, discount_fallback=True)
    assert a.read_bytes() == b.read_bytes() == c.read_bytes()


@needs_tools
def test_failure_keeps_old_output_and_reports_stderr(tmp_path):
    arpa = tmp_path / "m.arpa"
    arpa.write_text("old\n")
    with pytest.raises(KenLMError, match=r"(?s)lmplz failed.*no_such_option"):
        estimate_arpa(TINY, arpa, order=3, memory=MEM, extra_args=["--no_such_option"])
    assert arpa.read_text() == "old\n"
    assert not list(tmp_path.glob(".*.tmp"))
    bad = tmp_path / "bad.arpa"
    bad.write_text("not an arpa file\n")
    with pytest.raises(KenLMError, match="build_binary failed"):
        build_binary(bad, tmp_path / "bad.binary")
    assert not (tmp_path / "bad.binary").exists()


def test_missing_binary_gives_helpful_error(monkeypatch, tmp_path):
    monkeypatch.setattr(kenlm_lm, "REPO_KENLM_BIN", tmp_path / "nothing-here")
    monkeypatch.setenv("KENLM_BIN", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(KenLMNotFoundError, match=r"third_party/build_kenlm\.sh") as err:
        find_kenlm_binary("lmplz")
    assert "KENLM_BIN" in str(err.value)
    with pytest.raises(FileNotFoundError, match="build_kenlm"):
        estimate_arpa(TINY, tmp_path / "x.arpa", order=2)


def test_kenlm_bin_env_takes_precedence(monkeypatch, tmp_path):
    fake = tmp_path / "lmplz"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("KENLM_BIN", str(tmp_path))
    assert find_kenlm_binary("lmplz") == fake


@needs_tools
def test_cli_train_and_eval(tmp_path, capsys):
    prefix = tmp_path / "lm" / "tiny3"
    assert cli_main(["train", "--text", str(TINY_UNK), "--out-prefix", str(prefix), "--order", "3",
                     "--memory", MEM, "--discount-fallback"]) == 0
    for suffix in (".arpa", ".binary", ".config.yaml"):
        assert prefix.with_name(prefix.name + suffix).is_file()
    capsys.readouterr()
    js = tmp_path / "res.json"
    assert cli_main(["eval", "--model", str(prefix) + ".binary", "--text", str(TINY_UNK),
                     "--json-out", str(js)]) == 0
    line = capsys.readouterr().out.strip()
    n = sum(len(line_.split()) + 1 for line_ in read_lines(TINY_UNK, allow_empty=True))
    assert f"N={n} tokens" in line and "0 OOV" in line and DEFAULT_MAP_UNK in line
    import json

    res = json.loads(js.read_text())
    expected = kenlm_perplexity(KenLMScorer(str(prefix) + ".binary"), read_lines(TINY_UNK, allow_empty=True))
    assert res["num_tokens"] == n and res["ppl"] == pytest.approx(expected.ppl)
    assert res["map_unk"] == DEFAULT_MAP_UNK


@needs_tools
def test_outputs_have_ordinary_file_mode(tiny_models):
    import os

    umask = os.umask(0)
    os.umask(umask)
    for path in tiny_models:
        assert path.stat().st_mode & 0o777 == 0o666 & ~umask
