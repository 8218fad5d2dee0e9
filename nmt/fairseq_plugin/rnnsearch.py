"""Bahdanau et al. (2015) RNNsearch as a fairseq model (``--task translation``).

Thin adapters around :class:`nmt.models.rnnsearch.RNNsearch`, in the style of :mod:`.encdec`:
:class:`RNNsearchEncoderAdapter` returns the model's ``start(src)`` state (``s``, ``ann``, ``keys``,
``mask``; every tensor has the sentence as dim 0, so ``reorder_encoder_out`` is one ``index_select``
each); :class:`RNNsearchDecoderAdapter` runs the model's ``forward`` (teacher forcing) or ``step``
(incremental decoding, beam search: only the decoder state ``s`` is cached, the annotations are read
from ``encoder_out``, which fairseq reorders alongside). The wrapped model is owned by the fairseq
model (``model.core``), so checkpoints hold each parameter once, under ``core.<our name>``.

Conventions bridged (the same as :mod:`.encdec`): ids are permuted (:class:`~.vocab.IdMap`);
fairseq's left-padded sources are turned right-padded; the first decoder input, which fairseq sets to
``</s>``, is fed as our ``BOS``. The attention ``α`` of each step is returned as fairseq's ``attn``
(``[B, T, S]``) in fairseq's source positions (left-padded again), so ``fairseq-generate
--print-alignment`` works. The teacher-forced pass (``core.forward``) returns no attention.
"""
from __future__ import annotations

import torch
from fairseq import utils
from fairseq.models import FairseqEncoder, FairseqIncrementalDecoder, register_model

from nmt.models.rnnsearch import RNNsearchConfig, build_model, config_with_preset

from ._core_model import CoreEncoderDecoderModel, register_preset_archs
from .encdec import _first_is_bos
from .vocab import IdMap

MODEL_NAME = "rnnsearch_bahdanau"
PREFIX = "rnnsearch_"
# architecture name -> preset of nmt.models.rnnsearch.PRESETS
ARCHS = {
    "rnnsearch_paper": "rnnsearch-paper",
    "rnnsearch_cpu_base": "rnnsearch-cpu-base",
    "rnnsearch_cpu_small": "rnnsearch-cpu-small",
    "rnnsearch_tiny": "rnnsearch-tiny",
}
STATE_KEYS = ("s", "ann", "keys", "mask")  # RNNsearch.start(src)


def _to_fairseq_positions(src_tokens: torch.Tensor, pad: int) -> torch.Tensor:
    """Index [B, S]: column j of fairseq's (possibly left-padded) source is column ``index[:, j]`` of the
    right-padded one, so ``alpha.gather(1, index)`` puts the attention back in fairseq's positions
    (the inverse of ``utils.convert_padding_direction(..., left_to_right=True)``)."""
    B, S = src_tokens.shape
    index = torch.arange(S, device=src_tokens.device).expand(B, S)
    pad_mask = src_tokens.eq(pad)
    if not bool(pad_mask.any()) or not bool(pad_mask[:, 0].any()):  # not left-padded: the adapter kept it
        return index.contiguous()
    return torch.remainder(index - pad_mask.long().sum(1, keepdim=True), S)


class RNNsearchEncoderAdapter(FairseqEncoder):
    def __init__(self, dictionary, core, ids: IdMap):
        super().__init__(dictionary)
        # references only: the modules are registered on the fairseq model (one owner, one state-dict entry)
        self.__dict__["core"] = core
        self.__dict__["ids"] = ids

    def model_source(self, src_tokens: torch.Tensor) -> torch.Tensor:
        """fairseq source [B, S] → right-padded model ids [B, S] (EOS included), as RNNsearch takes it."""
        tokens = utils.convert_padding_direction(src_tokens, self.dictionary.pad(), left_to_right=True)
        return self.ids.tokens(tokens)

    def forward(self, src_tokens, src_lengths=None, **kwargs):
        src = self.model_source(src_tokens)
        state = self.core.start(src)  # {"s": s_0 [B,H], "ann" [B,S,2H], "keys" [B,S,A], "mask" [B,S]}
        out = {k: [state[k]] for k in STATE_KEYS}
        out["src_tokens"] = [src]  # model ids, right-padded: the teacher-forced pass re-reads them
        out["fs_positions"] = [_to_fairseq_positions(src_tokens, self.dictionary.pad())]
        return out

    def reorder_encoder_out(self, encoder_out, new_order):
        return {k: [v[0].index_select(0, new_order)] if v else [] for k, v in encoder_out.items()}


class RNNsearchDecoderAdapter(FairseqIncrementalDecoder):
    def __init__(self, dictionary, core, ids: IdMap):
        super().__init__(dictionary)
        self.__dict__["core"] = core
        self.__dict__["ids"] = ids

    def forward(self, prev_output_tokens, encoder_out=None, incremental_state=None, features_only=False,
                **kwargs):
        if encoder_out is None:
            raise ValueError("RNNsearch needs encoder_out (the annotations of the source)")
        if features_only:
            raise ValueError("features_only is not supported: the model's output layer is a maxout "
                             "deep output, not a separate projection")
        tokens = self.ids.tokens(prev_output_tokens)
        if incremental_state is None:
            return self.teacher_forced(encoder_out["src_tokens"][0], tokens)
        log_probs, attn = self._step(tokens, encoder_out, incremental_state)
        return self.ids.logits_to_fairseq(log_probs), {"attn": [attn], "inner_states": None}

    def teacher_forced(self, src: torch.Tensor, tokens: torch.Tensor):
        """RNNsearch.forward on model ids (src right-padded; tokens = fairseq's prev_output_tokens mapped)."""
        logits = self.core(src, _first_is_bos(tokens))
        return self.ids.logits_to_fairseq(logits), {"attn": [None], "inner_states": None}

    def _step(self, tokens, encoder_out, incremental_state):
        cached = self.get_incremental_state(incremental_state, "rnnsearch")
        state = {k: encoder_out[k][0] for k in STATE_KEYS}
        if cached is None:  # first call: step over the whole given prefix (usually just </s>)
            steps = _first_is_bos(tokens).unbind(1)
        else:
            state["s"] = cached["s"]
            steps = (tokens[:, -1],)
        log_probs, rows = [], []
        for prev in steps:
            lp, state = self.core.step(prev, state)
            log_probs.append(lp)
            rows.append(state["attn"])
        self.set_incremental_state(incremental_state, "rnnsearch", {"s": state["s"]})
        positions = encoder_out["fs_positions"][0]
        attn = torch.stack(rows, 1).gather(2, positions.unsqueeze(1).expand(-1, len(rows), -1))
        # log-probs are valid logits (log_softmax is idempotent)
        return torch.stack(log_probs, 1), attn

    def reorder_incremental_state(self, incremental_state, new_order):
        cached = self.get_incremental_state(incremental_state, "rnnsearch")
        if cached is None:
            return
        self.set_incremental_state(incremental_state, "rnnsearch", {"s": cached["s"].index_select(0, new_order)})


@register_model(MODEL_NAME)
class RNNsearchModel(CoreEncoderDecoderModel):
    """fairseq model around :class:`nmt.models.rnnsearch.RNNsearch` (``self.core``)."""

    config_cls, prefix, default_preset = RNNsearchConfig, PREFIX, "rnnsearch-paper"
    config_with_preset = staticmethod(config_with_preset)
    build_core = staticmethod(build_model)
    encoder_cls, decoder_cls = RNNsearchEncoderAdapter, RNNsearchDecoderAdapter

    def forward(self, src_tokens, src_lengths, prev_output_tokens, **kwargs):
        """Teacher forcing in one pass of ``core.forward`` (the encoder runs once, inside it)."""
        return self.decoder.teacher_forced(self.encoder.model_source(src_tokens),
                                           self.tgt_ids.tokens(prev_output_tokens))


register_preset_archs(MODEL_NAME, PREFIX, ARCHS)
