"""Fast ln p(target | source) of many phrase pairs at once: the torch part of ``smt-rescore``.

:class:`RescoringEngine` computes the same quantity as :class:`nmt.scoring.PairScorer`
(natural log, EOS counted, BOS not; unknown words scored as ``<unk>``) but is
organised for a whole window of a phrase table:

* every distinct source phrase of the window is encoded once, and everything
  that depends on the source alone is computed once per source too: the
  summary ``c``, the decoder start ``h'_0 = tanh(V' c)``, the context terms
  ``[C_z; C_r; C] c`` of the gates and ``O_c c`` of the deep output;
* what depends on the previous target word only, the decoder input projection
  ``W e(y) + b`` and ``O_y e(y)``, is looked up in a per-word table computed
  once for the vocabulary (faithful cell, if it fits in ``word_table_bytes``);
* pairs are sorted by target length (then source) and cut into batches of at
  most ``max_tokens`` padded target tokens (incl. EOS), so the recurrence runs
  on little padding;
* the deep output, the rank-``R`` output matrix and the softmax run only on
  the real target tokens (padding positions are dropped before them), and only
  ``ln p(y_t)`` is needed, so the softmax is ``ln Σ exp`` over the
  vocabulary and one gather, never a full ``[N, V]`` log-softmax; the output
  bias rides in the matrix multiply, and the rows go through in cache-sized
  blocks (see :meth:`RescoringEngine._token_log_probs`);
* everything runs under ``torch.inference_mode``.

An attending model (:class:`nmt.models.rnnsearch.RNNsearch`) has no fixed summary to share: its
pairs go through the same sorting and batches, each batch scored by the model's own
``pair_log_probs`` (its sources encoded in the batch).

The result depends only on the pairs given (their order included) and the
settings, never on other calls: ``smt-rescore`` relies on that to make shards,
worker processes and resumed runs byte-identical.
"""
from __future__ import annotations

import contextlib
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from nmt.data.special import BOS, EOS, UNK
from nmt.models.gru_encdec import GRUEncoderDecoder
from nmt.training.precision import AMP_DTYPES, check_amp


@dataclass
class WindowScores:
    """Scores of a list of pairs, in input order."""

    log_prob: np.ndarray  # float64 [n], ln p(tgt | src) incl. EOS
    src_unk: np.ndarray  # int64 [n], source words unknown to the network
    tgt_unk: np.ndarray  # int64 [n], target words unknown to the network
    num_sources: int = 0  # distinct sources encoded
    tgt_tokens: int = 0  # predicted target tokens incl. EOS (sum over pairs)
    padded_tokens: int = 0  # target positions run through the recurrence, padding included


def _flat_ids(seqs: Sequence[Sequence[str]], vocab) -> tuple[np.ndarray, np.ndarray]:
    """(ids of all tokens concatenated, lengths) of tokenized sequences; unknown words → ``<unk>``."""
    lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
    encode = vocab.encode
    ids = np.fromiter(itertools.chain.from_iterable(encode(list(s)) for s in seqs), dtype=np.int64,
                      count=int(lengths.sum()))
    return ids, lengths


def _padded(ids: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, rows: np.ndarray, *,
            prefix: int | None = None, suffix: int | None = None) -> np.ndarray:
    """PAD-padded int64 matrix of the sequences ``rows`` (indices into offsets/lengths)."""
    lens = lengths[rows]
    extra = (prefix is not None) + (suffix is not None)
    width = int(lens.max()) + extra
    out = np.zeros((len(rows), width), dtype=np.int64)  # PAD = 0
    first = 1 if prefix is not None else 0
    if prefix is not None:
        out[:, 0] = prefix
    total = int(lens.sum())
    if total:
        row_of = np.repeat(np.arange(len(rows)), lens)
        starts = np.repeat(offsets[rows], lens)
        within = np.arange(total) - np.repeat(np.cumsum(lens) - lens, lens)
        out[row_of, within + first] = ids[starts + within]
    if suffix is not None:
        out[np.arange(len(rows)), lens + first] = suffix
    return out


def _batches(lengths: np.ndarray, max_tokens: int) -> list[tuple[int, int]]:
    """Greedy [start, end) cuts of ascending ``lengths`` so that max length × count ≤ max_tokens."""
    cuts = []
    n = len(lengths)
    start = 0
    while start < n:
        end = start + 1
        # grow while the padded size (the last, longest length × count) fits
        while end < n and int(lengths[end]) * (end + 1 - start) <= max_tokens:
            end += 1
        cuts.append((start, end))
        start = end
    return cuts


class RescoringEngine:
    """Batched ``ln p(tgt | src)`` of phrase pairs with a trained :class:`GRUEncoderDecoder`."""

    def __init__(self, model: GRUEncoderDecoder, src_vocab, tgt_vocab, *, max_tokens: int = 2000,
                 device: str = "cpu", amp: str = "none", softmax_block: int = 64,
                 word_table_bytes: int = 256 << 20):
        if max_tokens < 1:
            raise ValueError("max_tokens must be positive")
        check_amp(device, amp)  # UsageError (a ValueError) before any work: fp16 on CPU, bf16 on a GPU without it
        self.model = model.to(device).eval()
        self.src_vocab = src_vocab
        self.tgt_vocab = tgt_vocab
        self.max_tokens = max_tokens
        self.device = torch.device(device)
        self.amp = amp
        self.cfg = model.cfg
        self.softmax_block = softmax_block
        self._w_aug: dict[torch.dtype, tuple[Tensor, Tensor, Tensor]] = {}
        self.word_table_bytes = word_table_bytes
        self._words: Tensor | bool | None = None

    @classmethod
    def load(cls, path: str, *, which: str = "auto", device: str = "cpu", **kw) -> "RescoringEngine":
        from nmt.translation.model_io import load_translation_model

        loaded = load_translation_model(path, which=which, device=device)
        return cls(loaded.model, loaded.src_vocab, loaded.tgt_vocab, device=device, **kw)

    def _autocast(self):
        dtype = AMP_DTYPES[self.amp]
        if dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=dtype)

    # -- the pieces that depend on the source only ------------------------------------------------
    def _encode_sources(self, ids: np.ndarray, offsets: np.ndarray, lengths: np.ndarray
                        ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """(c, h'_0, context terms, O_c c) for every distinct source, in the given order."""
        model = self.model
        order = np.argsort(lengths + 1, kind="stable")
        sorted_len = lengths[order] + 1  # + EOS
        n = len(lengths)
        H = self.cfg.hidden_dim
        c_all = torch.empty(n, H, device=self.device)
        for start, end in _batches(sorted_len, self.max_tokens):
            rows = order[start:end]
            src = torch.from_numpy(_padded(ids, offsets, lengths, rows, suffix=EOS)).to(self.device)
            c_all[torch.from_numpy(rows).to(self.device)] = model.encode(src).float()
        h0 = model.init_decoder(c_all)
        ctx, c_out = model.precompute_context(c_all)
        return c_all, h0, ctx, c_out + model.out_h.bias

    # -- one batch of pairs -----------------------------------------------------------------------
    def _decode_batch(self, tgt_in: Tensor, tgt_out: Tensor, lens: Tensor, c: Tensor, h0: Tensor,
                      ctx: Tensor, c_out: Tensor) -> Tensor:
        """Sum over real target tokens of ln p(y_t | y_<t, c) for one batch [B].

        ``c_out`` is ``O_c c`` plus the bias of ``O_h`` (per pair).
        """
        model = self.model
        cfg = self.cfg
        B, T = tgt_in.shape
        H, MP = cfg.hidden_dim, cfg.maxout_units * cfg.maxout_pool
        word = self._word_table()
        if word is not None:  # faithful cell: W e(y) + b and O_y e(y) looked up per word
            yw = word.index_select(0, tgt_in.reshape(-1)).view(B, T, -1)
            proj = yw[:, :, :3 * H]
            proj.add_(ctx.unsqueeze(1))
            unit = model.decoder.unit
            states = torch.empty(B, T, H, device=tgt_in.device, dtype=proj.dtype)
            h = h0
            for t in range(T):
                h = unit(proj[:, t], h)
                states[:, t] = h
            s = torch.addmm(yw[:, :, 3 * H:].reshape(B * T, MP), states.view(B * T, H), model.out_h.weight.t())
        else:
            y = model.tgt_embed(tgt_in)  # [B, T, E]
            if cfg.cell == "faithful":
                rec = model.decoder
                proj = rec.W(y) + ctx.unsqueeze(1)
                h = h0
                outputs = []
                for t in range(T):
                    h = rec.unit(proj[:, t], h)
                    outputs.append(h)
                states = torch.stack(outputs, 1)
            else:
                inp = torch.cat([y, c.unsqueeze(1).expand(-1, T, -1)], -1)
                states, _ = model.decoder.run(inp, h0, None)
            s = torch.addmm(model.out_y(y).reshape(B * T, MP), states.reshape(B * T, H), model.out_h.weight.t())
        s = s.view(B, T, MP).add_(c_out.unsqueeze(1))
        s = s.view(B, T, cfg.maxout_units, cfg.maxout_pool).amax(-1)  # maxout [B, T, M]
        mask = torch.arange(T, device=tgt_in.device).unsqueeze(0) < lens.unsqueeze(1)  # real tokens (incl. EOS)
        row = torch.arange(B, device=tgt_in.device).unsqueeze(1).expand(B, T)[mask]
        token_lp = self._token_log_probs(s[mask], tgt_out[mask])
        return torch.zeros(B, device=tgt_in.device, dtype=torch.float64).index_add_(0, row, token_lp.double())

    def _word_table(self) -> Tensor | None:
        """Per target word ``[W e(y) + b | O_y e(y)]`` ([V, 3H + 2M]), or None (torch cell, or too large).

        These two products depend on the previous word only, so they are
        computed once for the vocabulary instead of once per target token.
        """
        if self._words is None:
            model, cfg = self.model, self.cfg
            V = model.tgt_embed.num_embeddings
            width = 3 * cfg.hidden_dim + cfg.maxout_units * cfg.maxout_pool
            if cfg.cell != "faithful" or V * width * 4 > self.word_table_bytes:
                self._words = False
            else:
                emb = model.tgt_embed.weight
                self._words = torch.cat([model.decoder.W(emb), model.out_y(emb)], 1).contiguous()
        return self._words if self._words is not False else None

    def _token_log_probs(self, s: Tensor, targets: Tensor) -> Tensor:
        """ln softmax(G_l G_r s + b)[target] for maxout outputs s [N, M]: the bulk of the work.

        ``G_r`` maps to ``[G_r s, 1]`` in one ``addmm`` so that the bias of the
        output layer rides in its matrix multiply (``[G_r s, 1] · [G_l | b]ᵀ``);
        rows go through in blocks of ``softmax_block`` so that each block of
        logits is still in cache for ``exp`` and the sum. ``Σ exp`` is taken
        without the usual max shift (one pass less); rows where that could
        overflow or lose precision (non-finite, or ln Σ < −50) are redone with
        the stable ``logsumexp``.
        """
        N = s.shape[0]
        rank_aug, rank_bias, w_aug = self._output_matrices(s.dtype)
        s_aug = torch.addmm(rank_bias, s, rank_aug)  # [N, R + 1], last column = 1
        out = torch.empty(N, device=s.device, dtype=torch.float32)
        block = self.softmax_block if self.device.type == "cpu" else max(N, 1)
        full = s.dtype == torch.float32
        buf = torch.empty(min(block, N), w_aug.shape[1], device=s.device, dtype=s.dtype) if full else None
        for start in range(0, N, block):
            end = min(start + block, N)
            if full:
                logits = buf[:end - start]
                torch.mm(s_aug[start:end], w_aug, out=logits)
            else:  # autocast: multiply in half precision, exp and sum in float32 (fp16 exp overflows at 11)
                logits = torch.mm(s_aug[start:end], w_aug).float()
            target_logit = logits.gather(1, targets[start:end].unsqueeze(1)).squeeze(1)
            lse = logits.exp_().sum(1).log_()
            bad = ~torch.isfinite(lse) | (lse < -50.0)
            if bool(bad.any()):
                idx = bad.nonzero().squeeze(1)
                redo = torch.mm(s_aug[start:end][idx], w_aug).float()
                lse[idx] = torch.logsumexp(redo, 1)
            out[start:end] = target_logit - lse
        return out

    def _output_matrices(self, dtype: torch.dtype) -> tuple[Tensor, Tensor, Tensor]:
        """(``[G_r | 0]ᵀ`` [M, R + 1], bias ``[0…0, 1]``, ``[G_l | b]ᵀ`` [R + 1, V]), cached per dtype."""
        hit = self._w_aug.get(dtype)
        if hit is None:
            model = self.model
            g_r = model.out_rank.weight  # [R, M]
            R = g_r.shape[0]
            rank_aug = torch.cat([g_r, g_r.new_zeros(1, g_r.shape[1])], 0).t().contiguous().to(dtype)
            rank_bias = torch.zeros(R + 1, device=g_r.device, dtype=dtype)
            rank_bias[R] = 1.0
            lin = model.out_vocab
            w = torch.cat([lin.weight, lin.bias.unsqueeze(1)], 1).t().contiguous().to(dtype)
            hit = self._w_aug[dtype] = (rank_aug, rank_bias, w)
        return hit

    def score(self, srcs: Sequence[Sequence[str]], tgts: Sequence[Sequence[str]]) -> WindowScores:
        """ln p(tgt | src) of each pair (natural log, EOS counted), in input order."""
        n = len(srcs)
        if n != len(tgts):
            raise ValueError(f"score: {n} sources but {len(tgts)} targets")
        if n == 0:
            return WindowScores(np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64))
        # distinct sources, in order of first appearance
        where: dict[tuple, int] = {}
        pair_src = np.empty(n, dtype=np.int64)
        for i, s in enumerate(srcs):
            key = s if isinstance(s, tuple) else tuple(s)
            k = where.get(key)
            if k is None:
                k = where[key] = len(where)
            pair_src[i] = k
        uniq = list(where)
        s_ids, s_len = _flat_ids(uniq, self.src_vocab)
        t_ids, t_len = _flat_ids(tgts, self.tgt_vocab)
        if (s_len == 0).any() or (t_len == 0).any():
            bad = int(np.flatnonzero(t_len == 0)[0]) if (t_len == 0).any() else int(
                np.flatnonzero(s_len[pair_src] == 0)[0])
            raise ValueError(f"score: pair {bad} has an empty side")
        s_off = np.cumsum(s_len) - s_len
        t_off = np.cumsum(t_len) - t_len
        src_unk_u = np.add.reduceat((s_ids == UNK).astype(np.int64), s_off)
        tgt_unk = np.add.reduceat((t_ids == UNK).astype(np.int64), t_off)
        log_prob = np.empty(n, dtype=np.float64)
        order = np.lexsort((pair_src, t_len))  # by target length, then source
        out_len = t_len[order] + 1  # + EOS
        padded = 0
        fixed_summary = isinstance(self.model, GRUEncoderDecoder)  # else e.g. RNNsearch: its own pair_log_probs
        with torch.inference_mode(), self._autocast():
            if fixed_summary:
                c, h0, ctx, c_out = self._encode_sources(s_ids, s_off, s_len)
            for start, end in _batches(out_len, self.max_tokens):
                rows = order[start:end]
                tgt_in = _padded(t_ids, t_off, t_len, rows, prefix=BOS)
                tgt_out = _padded(t_ids, t_off, t_len, rows, suffix=EOS)
                padded += tgt_in.size
                if not fixed_summary:  # an attending model: each pair's source is encoded in its batch
                    src = torch.from_numpy(_padded(s_ids, s_off, s_len, pair_src[rows], suffix=EOS)).to(self.device)
                    lp = self.model.pair_log_probs(src, torch.from_numpy(tgt_in).to(self.device),
                                                   torch.from_numpy(tgt_out).to(self.device))
                    log_prob[rows] = lp.double().cpu().numpy()
                    continue
                sidx = torch.from_numpy(pair_src[rows]).to(self.device)
                lp = self._decode_batch(torch.from_numpy(tgt_in).to(self.device),
                                        torch.from_numpy(tgt_out).to(self.device),
                                        torch.from_numpy(t_len[rows] + 1).to(self.device),
                                        c[sidx], h0[sidx], ctx[sidx] if ctx.numel() else ctx, c_out[sidx])
                log_prob[rows] = lp.cpu().numpy()
        return WindowScores(log_prob, src_unk_u[pair_src], tgt_unk, len(uniq), int(out_len.sum()), padded)


def flops_per_pair(cfg, tgt_vocab_size: int, src_len: float, tgt_len: float, *,
                   encoder_per_pair: bool = True, pairs_per_source: float = 1.0) -> float:
    """Forward multiply–add FLOPs (2 per MAC) to score one pair with a faithful-cell model.

    ``src_len``/``tgt_len`` are words without EOS; EOS is added on both sides.
    Encoder: input projection + recurrence per source token, summary ``V``;
    per pair: decoder start ``V'``, context terms, ``O_c c``; per target token
    (incl. EOS): input projection, recurrence, deep output (``O_h``, ``O_y``),
    ``G_r`` and the output layer over the target vocabulary. With
    ``encoder_per_pair=False`` the source-only parts are divided by
    ``pairs_per_source`` (what the engine actually computes).
    """
    E, H, M, P, R, V = (cfg.emb_dim, cfg.hidden_dim, cfg.maxout_units, cfg.maxout_pool, cfg.output_rank,
                        tgt_vocab_size)
    enc = (src_len + 1) * (2 * E * 3 * H + 2 * H * 3 * H) + 2 * H * H
    per_source = 2 * H * H + 2 * H * 3 * H + 2 * H * M * P  # V', [C_z; C_r; C], O_c
    per_token = 2 * E * 3 * H + 2 * H * 3 * H + 2 * H * M * P + 2 * E * M * P + 2 * M * R + 2 * R * V
    shared = enc + per_source
    if not encoder_per_pair:
        shared /= pairs_per_source
    return shared + (tgt_len + 1) * per_token
