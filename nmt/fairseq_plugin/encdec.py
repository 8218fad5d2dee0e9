"""Cho et al. (2014) RNN Encoder–Decoder as a fairseq model (``--task translation``).

The fairseq modules are thin adapters: :class:`GRUEncoderAdapter` calls
``GRUEncoderDecoder.encode``, :class:`GRUDecoderAdapter` calls ``decode``
(teacher forcing) or ``decode_step`` (incremental decoding, beam search). The
wrapped :class:`~nmt.models.gru_encdec.GRUEncoderDecoder` is owned by the
fairseq model (``model.core``), so checkpoints hold each parameter once, under
``core.<our name>``: ``model.core.state_dict()`` is a state dict of our model.

Conventions bridged here: ids are permuted (:class:`~.vocab.IdMap`); fairseq's
left-padded sources are turned right-padded; the first decoder input, which
fairseq sets to ``</s>``, is fed as our ``BOS``.
"""
from __future__ import annotations

import torch
from fairseq import utils
from fairseq.models import FairseqEncoder, FairseqIncrementalDecoder, register_model

from nmt.data.special import BOS, EOS
from nmt.models.gru_encdec import GRUEncDecConfig, build_model, config_with_preset

from ._core_model import CoreEncoderDecoderModel, register_preset_archs
from .vocab import IdMap

MODEL_NAME = "cho2014_gru"
PREFIX = "encdec_"
# architecture name -> preset of nmt.models.gru_encdec.PRESETS
ARCHS = {
    "cho2014_gru": "cho2014",
    "cho2014_gru_cpu_base": "cpu-base",
    "cho2014_gru_cpu_small": "cpu-small",
    "cho2014_gru_tiny": "tiny",
}


def _first_is_bos(tokens: torch.Tensor) -> torch.Tensor:
    """fairseq starts the decoder input with ``</s>``; our model was trained with ``BOS`` there."""
    tokens = tokens.clone()
    tokens[:, 0] = torch.where(tokens[:, 0] == EOS, torch.full_like(tokens[:, 0], BOS), tokens[:, 0])
    return tokens


class GRUEncoderAdapter(FairseqEncoder):
    def __init__(self, dictionary, core, ids: IdMap):
        super().__init__(dictionary)
        # references only: the modules are registered on the fairseq model (one owner, one state-dict entry)
        self.__dict__["core"] = core
        self.__dict__["ids"] = ids

    def forward(self, src_tokens, src_lengths=None, **kwargs):
        tokens = utils.convert_padding_direction(src_tokens, self.dictionary.pad(), left_to_right=True)
        summary = self.core.encode(self.ids.tokens(tokens))  # c [B, H]
        return {"summary": [summary], "src_lengths": [src_lengths] if src_lengths is not None else []}

    def reorder_encoder_out(self, encoder_out, new_order):
        out = {"summary": [encoder_out["summary"][0].index_select(0, new_order)]}
        lengths = encoder_out.get("src_lengths", [])
        out["src_lengths"] = [lengths[0].index_select(0, new_order)] if lengths else []
        return out


class GRUDecoderAdapter(FairseqIncrementalDecoder):
    def __init__(self, dictionary, core, ids: IdMap):
        super().__init__(dictionary)
        self.__dict__["core"] = core
        self.__dict__["ids"] = ids

    def forward(self, prev_output_tokens, encoder_out=None, incremental_state=None, features_only=False,
                **kwargs):
        if encoder_out is None:
            raise ValueError("the RNN Encoder–Decoder needs encoder_out (the summary c)")
        if features_only:
            raise ValueError("features_only is not supported: the model's output layer is a maxout "
                                      "deep output, not a separate projection")
        c = encoder_out["summary"][0]
        tokens = self.ids.tokens(prev_output_tokens)
        if incremental_state is None:
            logits = self.core.decode(c, _first_is_bos(tokens))
        else:
            logits = self._step(tokens, c, incremental_state)
        return self.ids.logits_to_fairseq(logits), {"attn": [None], "inner_states": None}

    def _step(self, tokens, c, incremental_state):
        cached = self.get_incremental_state(incremental_state, "gru")
        if cached is None:  # first call: run decode_step over the whole given prefix (usually just </s>)
            h = self.core.init_decoder(c)
            ctx, c_out = self.core.precompute_context(c)
            steps = _first_is_bos(tokens).unbind(1)
        else:
            h, ctx, c_out = cached["h"], cached["ctx"], cached["c_out"]
            steps = (tokens[:, -1],)
        for prev in steps:
            log_probs, h = self.core.decode_step(prev, h, c, (ctx, c_out))
        self.set_incremental_state(incremental_state, "gru", {"h": h, "ctx": ctx, "c_out": c_out})
        return log_probs.unsqueeze(1)  # log-probs are valid logits (log_softmax is idempotent)

    def reorder_incremental_state(self, incremental_state, new_order):
        cached = self.get_incremental_state(incremental_state, "gru")
        if cached is None:
            return
        reordered = {k: (v.index_select(0, new_order) if v is not None and v.numel() > 0 else v)
                     for k, v in cached.items()}
        self.set_incremental_state(incremental_state, "gru", reordered)


@register_model(MODEL_NAME)
class Cho2014GRUModel(CoreEncoderDecoderModel):
    """fairseq model around :class:`nmt.models.gru_encdec.GRUEncoderDecoder` (``self.core``)."""

    config_cls, prefix, default_preset = GRUEncDecConfig, PREFIX, "cho2014"
    config_with_preset = staticmethod(config_with_preset)
    build_core = staticmethod(build_model)
    encoder_cls, decoder_cls = GRUEncoderAdapter, GRUDecoderAdapter


register_preset_archs(MODEL_NAME, PREFIX, ARCHS)
