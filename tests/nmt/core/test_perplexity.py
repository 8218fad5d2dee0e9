"""Token accounting of nmt.core.perplexity, checked against numbers computed by hand."""
from __future__ import annotations

import math

import pytest

from nmt.core.perplexity import (LN10, PerplexityAccumulator, format_result, kenlm_perplexity,
                                 perplexity_from_logprobs, split_words)
from tests import TEST_DATA

HAND_ARPA = TEST_DATA / "kenlm" / "hand_bigram.arpa"


def test_split_words_is_kenlm_whitespace():
    assert split_words("  a\tb  c\r\n") == ["a", "b", "c"]
    assert split_words("") == []
    # U+00A0 is not a KenLM separator: the word stays whole.
    assert split_words("a\u00a0b c") == ["a\u00a0b", "c"]


def test_perplexity_from_logprobs():
    res = perplexity_from_logprobs(-2 * math.log(4.0), 2, num_sentences=1)
    assert res.ppl == pytest.approx(4.0)
    assert res.num_words == 1
    assert res.nll_per_token == pytest.approx(math.log(4.0))
    assert res.bits_per_token == pytest.approx(2.0)
    with pytest.raises(ValueError):
        perplexity_from_logprobs(-1.0, 0)
    with pytest.raises(ValueError):
        perplexity_from_logprobs(+1.0, 3)


def test_accumulator_counts_one_end_of_sentence_per_sentence():
    acc = PerplexityAccumulator()
    acc.add(-3.0, num_words=4)            # 5 tokens
    acc.add(-1.0, num_words=0)            # an empty line still predicts </s>: 1 token
    acc.add(-2.0, num_words=2, num_oov=1)  # 3 tokens
    res = acc.result()
    assert (res.num_tokens, res.num_sentences, res.num_oov, res.num_words) == (9, 3, 1, 6)
    assert res.ppl == pytest.approx(math.exp(6.0 / 9))


def test_hand_made_bigram_corpus():
    """Three sentences scored with tests/data/kenlm/hand_bigram.arpa, by hand (log10):

    ARPA (log10 p, log10 backoff): <unk> -2.0; <s> -99/-0.5; </s> -1.0; a -0.5/-0.25; b -1.0/0;
    bigrams: <s> a -0.25; a b -0.5; a </s> -1.0; b </s> -0.25.

    "a b":   p(a|<s>) = -0.25 (bigram)              ngram 2
             p(b|a)   = -0.5  (bigram)              ngram 2
             p(</s>|b)= -0.25 (bigram)              ngram 2   sum -1.0
    "b a":   p(b|<s>) = bo(<s>) + p(b) = -0.5 - 1.0 = -1.5   ngram 1
             p(a|b)   = bo(b) + p(a)   =  0   - 0.5 = -0.5   ngram 1
             p(</s>|a)= -1.0 (bigram)                        ngram 2   sum -3.0
    "a zzz": p(a|<s>) = -0.25                                ngram 2
             zzz is OOV, scored as <unk>: bo(a) + p(<unk>) = -0.25 - 2.0 = -2.25
             p(</s>|<unk>) = bo(<unk>) + p(</s>) = 0 - 1.0 = -1.0         sum -3.5

    Σ log10 p = -1.0 - 3.0 - 3.5 = -7.5
    N = 6 words + 3 </s> = 9 (<s> not counted), 1 OOV (counted)
    Σ ln p = -7.5 · ln 10 = -17.269388...
    ppl = exp(17.269388 / 9) = 10^(7.5 / 9) = 10^0.8333... = 6.812921
    """
    from smt_features.model.kenlm import KenLMScorer

    scorer = KenLMScorer(HAND_ARPA)
    assert scorer.order == 2

    s1 = scorer.token_scores(["a", "b"])
    assert [(round(t.ln_prob / LN10, 6), t.ngram_len, t.is_oov) for t in s1] == [
        (-0.25, 2, False), (-0.5, 2, False), (-0.25, 2, False)]
    s2 = scorer.token_scores("b a")
    assert [(round(t.ln_prob / LN10, 6), t.ngram_len) for t in s2] == [(-1.5, 1), (-0.5, 1), (-1.0, 2)]
    s3 = scorer.token_scores(["a", "zzz"])
    assert [(round(t.ln_prob / LN10, 6), t.is_oov) for t in s3] == [(-0.25, False), (-2.25, True), (-1.0, False)]

    res = kenlm_perplexity(scorer, ["a b", "b a", "a zzz"])
    assert res.num_tokens == 9
    assert res.num_sentences == 3
    assert res.num_words == 6
    assert res.num_oov == 1
    assert res.total_logprob == pytest.approx(-7.5 * math.log(10), rel=1e-12)
    assert res.total_logprob == pytest.approx(-17.269388197455342, rel=1e-12)
    assert res.ppl == pytest.approx(10 ** (7.5 / 9), rel=1e-12)
    assert res.ppl == pytest.approx(6.812920690579612, rel=1e-12)

    # Whole-sentence scores agree with the sum of the token scores.
    assert scorer.score_sentence(["b", "a"]) == pytest.approx(-3.0 * LN10, rel=1e-12)

    line = format_result(res, "hand bigram")
    assert "ppl 6.81" in line and "N=9 tokens" in line and "6 words + 3 </s>" in line
    assert "<s> not counted" in line and "1 OOV" in line and "<unk>" in line


def test_empty_line_counts_its_end_of_sentence():
    from smt_features.model.kenlm import KenLMScorer

    scorer = KenLMScorer(HAND_ARPA)
    res = kenlm_perplexity(scorer, [""])  # p(</s>|<s>) = bo(<s>) + p(</s>) = -0.5 - 1.0
    assert (res.num_tokens, res.num_words) == (1, 0)
    assert res.total_logprob == pytest.approx(-1.5 * LN10, rel=1e-12)


def test_map_unk_turns_literal_unk_into_a_word():
    """With the default map_unk, a literal <unk> is looked up as the word _unk_ (an OOV in this
    model, so it still scores as <unk>); with map_unk=None it is KenLM's <unk> itself. Same number."""
    from smt_features.model.kenlm import KenLMScorer

    mapped = KenLMScorer(HAND_ARPA).token_scores(["a", "<unk>"])
    raw = KenLMScorer(HAND_ARPA, map_unk=None).token_scores(["a", "<unk>"])
    assert mapped[1].is_oov and raw[1].ln_prob == pytest.approx(mapped[1].ln_prob)
    assert mapped[1].ln_prob == pytest.approx(-2.25 * LN10, rel=1e-12)
