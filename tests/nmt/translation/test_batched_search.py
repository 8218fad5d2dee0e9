"""The batched beam search over the step interface: same n-best as the per-sentence search it replaced,
batched == one sentence at a time (RNNenc and RNNsearch), beam 1 == greedy, the length budget, attention rows."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from nmt.data.special import BOS, EOS, PAD
from nmt.models import gru_encdec, rnnsearch
from nmt.translation.search import Hypothesis, StepModel, beam_search

pytestmark = pytest.mark.usefixtures("one_torch_thread")
V_SRC, V_TGT = 30, 25


def _rnnenc(cell: str = "torch", eos_bias: float = 2.0, seed: int = 1):
    torch.manual_seed(seed)
    model = gru_encdec.build_model(gru_encdec.config_with_preset("tiny", init_std=0.5, cell=cell), V_SRC, V_TGT)
    with torch.no_grad():  # hypotheses of many lengths: some end early, some run into the length budget
        model.out_vocab.bias[EOS] = eos_bias
    return model.eval()


def _rnnsearch(seed: int = 2):
    torch.manual_seed(seed)
    cfg = rnnsearch.config_with_preset("rnnsearch-tiny", init_std=0.5, align_init_std=0.5)
    model = rnnsearch.build_model(cfg, V_SRC, V_TGT)
    with torch.no_grad():
        model.out_vocab.bias[EOS] = 2.0
    return model.eval()


def _sources(n: int = 20, seed: int = 0) -> torch.Tensor:
    """n PAD-padded sources of 1..8 words + EOS."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, V_SRC, (n, 9), generator=g)
    for i in range(n):
        src[i, 1 + i % 8] = EOS
        src[i, 2 + i % 8:] = PAD
    return src


def _reference(model, src, *, beam_size, nbest, len_penalty, max_len_a=2.0, max_len_b=10) -> list[list[Hypothesis]]:
    """The search this one replaced (per-sentence Python bookkeeping at every step), condensed."""
    B, K, inf = src.shape[0], beam_size, float("-inf")
    max_len = (max_len_a * (src != 0).sum(1).float() + max_len_b).long().clamp(min=1).tolist()
    c = model.encode(src).repeat_interleave(K, 0)
    h, cache = model.init_decoder(c), model.precompute_context(c)
    scores = torch.full((B, K), inf)
    scores[:, 0] = 0.0
    history = torch.empty(B, K, 0, dtype=torch.long)
    prev = torch.full((B * K,), BOS, dtype=torch.long)
    finished: list[list[Hypothesis]] = [[] for _ in range(B)]
    done = [False] * B

    def ended(tokens, log_prob, length):
        return Hypothesis(tokens, log_prob, log_prob / (length ** len_penalty) if len_penalty else log_prob)

    for t in range(max(max_len)):
        log_probs, h = model.decode_step(prev, h, c, cache)
        V = log_probs.shape[-1]
        top_scores, top_idx = (scores.view(-1, 1) + log_probs).view(B, K * V).topk(min(2 * K, K * V), dim=1)
        beam_idx, tokens = top_idx // V, top_idx % V
        is_eos = tokens == EOS
        for b, j in is_eos.nonzero().tolist():
            if not done[b] and j < K and top_scores[b, j] > inf:
                finished[b].append(ended(history[b, beam_idx[b, j]].tolist(), float(top_scores[b, j]), t + 1))
        scores, keep = top_scores.masked_fill(is_eos, inf).topk(K, dim=1)
        new_beam, new_tokens = beam_idx.gather(1, keep), tokens.gather(1, keep)
        history = torch.cat([history.gather(1, new_beam.unsqueeze(-1).expand(-1, -1, history.shape[2])),
                             new_tokens.unsqueeze(-1)], 2)
        h = h[(new_beam + torch.arange(B).unsqueeze(1) * K).view(-1)]
        prev = new_tokens.view(-1)
        for b in range(B):
            if not done[b] and len(finished[b]) >= K:
                done[b] = True
            elif not done[b] and t + 1 >= max_len[b]:
                finished[b] += [ended(history[b, k].tolist(), float(scores[b, k]), t + 1)
                                for k in range(K) if scores[b, k] > inf]
                done[b] = True
            if done[b]:
                scores[b] = inf
        if all(done):
            break
    return [sorted(f, key=lambda hyp: hyp.score, reverse=True)[:nbest] for f in finished]


def _same(got: list[list[Hypothesis]], want: list[list[Hypothesis]]) -> None:
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert [h.tokens for h in g] == [h.tokens for h in w], i
        for a, b in zip(g, w):
            assert math.isclose(a.log_prob, b.log_prob, rel_tol=1e-5, abs_tol=1e-5), i
            assert math.isclose(a.score, b.score, rel_tol=1e-5, abs_tol=1e-5), i


@pytest.mark.parametrize("cell,beam,nbest,alpha,b", [("torch", 5, 5, 1.0, 10), ("torch", 4, 3, 0.0, 3),
                                                     ("faithful", 3, 2, 0.5, 10), ("torch", 6, 6, 2.0, 4)])
def test_same_nbest_as_the_search_it_replaced(cell, beam, nbest, alpha, b) -> None:
    model, src = _rnnenc(cell), _sources()
    got = beam_search(model, src, beam_size=beam, nbest=nbest, len_penalty=alpha, max_len_b=b)
    with torch.no_grad():
        want = _reference(model, src, beam_size=beam, nbest=nbest, len_penalty=alpha, max_len_b=b)
    _same(got, want)
    lengths = {len(h.tokens) for hyps in got for h in hyps}
    assert len(lengths) > 3  # the case covers early ends and budget-closed hypotheses alike


@pytest.mark.parametrize("make", [_rnnenc, _rnnsearch])
def test_batched_equals_one_sentence_at_a_time(make) -> None:
    model, src = make(), _sources()
    batched = beam_search(model, src, beam_size=4, nbest=4)
    alone = []
    for row in src:
        n = int((row != PAD).sum())
        alone += beam_search(model, row[:n].unsqueeze(0), beam_size=4, nbest=4)
    _same(batched, alone)


@pytest.mark.parametrize("make", [_rnnenc, _rnnsearch])
def test_nbest_sorted_distinct_and_within_the_length_budget(make) -> None:
    model, src = make(), _sources()
    for a, b in [(2.0, 10), (0.0, 2), (0.5, 1)]:
        out = beam_search(model, src, beam_size=5, nbest=5, max_len_a=a, max_len_b=b)
        for row, hyps in zip(src, out):
            budget = max(1, int(a * int((row != PAD).sum()) + b))
            assert len(hyps) == 5
            assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
            assert len({tuple(h.tokens) for h in hyps}) == 5
            assert all(len(h.tokens) <= budget and EOS not in h.tokens for h in hyps)


def test_beam_one_is_greedy() -> None:
    model, src = _rnnsearch(), _sources(6)
    out = beam_search(model, src, beam_size=1, len_penalty=0.0, max_len_b=5)
    for row, (hyp,) in zip(src, out):
        n = int((row != PAD).sum())
        with torch.no_grad():
            state, prev, greedy, total = model.start(row[:n].unsqueeze(0)), torch.tensor([BOS]), [], 0.0
            for _ in range(2 * n + 5):
                log_probs, state = model.step(prev, state)
                prev = log_probs.argmax(-1)
                total += float(log_probs[0, prev])
                if int(prev) == EOS:
                    break
                greedy.append(int(prev))
        assert hyp.tokens == greedy
        assert math.isclose(hyp.log_prob, total, rel_tol=1e-5, abs_tol=1e-5)


def test_attention_rows_of_each_hypothesis() -> None:
    model, src = _rnnsearch(), _sources(8)
    assert isinstance(model, StepModel)
    out = beam_search(model, src, beam_size=3, nbest=2, attention=True)
    for row, hyps in zip(src, out):
        n = int((row != PAD).sum())
        for h in hyps:
            ended_with_eos = len(h.tokens) < 2 * n + 10
            assert len(h.attn) == len(h.tokens) + ended_with_eos
            assert all(len(r) == n and math.isclose(sum(r), 1.0, rel_tol=1e-4) for r in h.attn)
        # the 1-best's rows are the model's own attention along its tokens (teacher-forced, one sentence)
        with torch.no_grad():
            state, rows = model.start(row[:n].unsqueeze(0)), []
            for prev in [BOS] + hyps[0].tokens[:len(hyps[0].attn) - 1]:
                _, state = model.step(torch.tensor([prev]), state)
                rows.append(state["attn"][0].tolist())
        torch.testing.assert_close(torch.tensor(hyps[0].attn), torch.tensor(rows), rtol=1e-4, atol=1e-5)


def test_a_model_without_attention() -> None:
    model = _rnnenc()
    assert isinstance(model, StepModel) and "attn" not in model.start(_sources(2))
    with pytest.raises(ValueError, match="no attention"):
        beam_search(model, _sources(2), beam_size=2, attention=True)


def test_nmt_translate_attention_file_and_max_tokens(tmp_path: Path, monkeypatch, capsys) -> None:
    """--attention writes one JSON line per input line (1-best rows over source + EOS); RNNenc is refused;
    --max-tokens batching leaves the output as it was."""
    from nmt.translation import translate as tr
    from nmt.cli.translate import cli_main

    class Vocab:
        def encode(self, words):
            return [4 + int(w[1:]) for w in words]

        def decode(self, ids):
            return [f"t{i}" for i in ids]

    model = {"m": _rnnsearch()}
    monkeypatch.setattr(tr, "load_translation_model", lambda *a, **k: type("L", (), {
        "model": model["m"], "src_vocab": Vocab(), "tgt_vocab": Vocab()}))
    src = tmp_path / "in.txt"
    src.write_text("s1 s2\ns3 s4 s5 s1 s9\ns7\n", encoding="utf-8")
    args = ["--model", str(tmp_path), "--input", str(src), "--tokenized", "true", "--detokenize", "false",
            "--threads", "1"]
    assert cli_main(args + ["--output", str(tmp_path / "a.txt"), "--attention", str(tmp_path / "a.jsonl")]) == 0
    recs = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["line"] for r in recs] == [1, 2, 3]
    assert recs[1]["source"] == ["s3", "s4", "s5", "s1", "s9", "</s>"]
    for rec, hyp in zip(recs, (tmp_path / "a.txt").read_text(encoding="utf-8").splitlines()):
        assert rec["target"][:len(hyp.split())] == hyp.split()
        assert len(rec["attention"]) == len(rec["target"])
        assert all(len(r) == len(rec["source"]) and abs(sum(r) - 1) < 1e-4 for r in rec["attention"])
    assert cli_main(args + ["--output", str(tmp_path / "b.txt"), "--max-tokens", "7", "--batch-size", "2"]) == 0
    assert (tmp_path / "b.txt").read_bytes() == (tmp_path / "a.txt").read_bytes()
    for bad in (["--batch-size", "0"], ["--max-tokens", "-1"], ["--beam-size", "0"]):
        capsys.readouterr()
        assert cli_main(args + ["--output", str(tmp_path / "d.txt")] + bad) == 2
        assert f"{bad[0]} {bad[1]}: must be at least" in capsys.readouterr().err
    assert not (tmp_path / "d.txt").exists()
    model["m"] = _rnnenc()
    capsys.readouterr()
    assert cli_main(args + ["--output", str(tmp_path / "c.txt"), "--attention", str(tmp_path / "c.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "--attention" in err and "does not attend" in err and "Traceback" not in err
    assert not (tmp_path / "c.txt").exists() and not (tmp_path / "c.jsonl").exists()
