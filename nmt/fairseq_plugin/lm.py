"""The toolkit's language models as fairseq models (``--task language_modeling``).

:class:`NmtLMDecoder` wraps a model built by :func:`nmt.models.lm.build_lm`
(``self.lm``; its ``state_dict`` is ours under ``decoder.lm.``) and calls its
``forward(tokens, state, lengths=…)``; incremental decoding keeps the model's
recurrent state in fairseq's ``incremental_state`` and reorders it with the
model's own ``reorder_state``. Ids are permuted by :class:`~.vocab.IdMap`.

One fairseq model per architecture (flags ``--lm-<field>`` from its config
dataclass, ``--lm-preset`` a preset of :data:`nmt.models.lm.PRESETS`)::

    lstm_lm_nmt   -> lstm        rmn_rm -> rm        rmn_rmr -> rmr        mogrifier_lm -> mogrifier

plus preset architectures (``rmn_rmr_paper``, ``mogrifier_lm_paper``, …, see ``ARCHS``).
"""
from __future__ import annotations

from fairseq.models import (ARCH_MODEL_REGISTRY, FairseqIncrementalDecoder, FairseqLanguageModel,
                            register_model, register_model_architecture)

from nmt.models.lm import ARCHITECTURES, PRESETS, build_lm

from ._args import add_prefixed_dataclass_args, prefixed_overrides, set_default
from .vocab import IdMap

PREFIX = "lm_"
# fairseq model name -> our LM architecture
MODELS = {"lstm_lm_nmt": "lstm", "rmn_rm": "rm", "rmn_rmr": "rmr", "mogrifier_lm": "mogrifier"}
# fairseq architecture name -> (fairseq model name, preset or None for the dataclass defaults)
ARCHS = {
    "lstm_lm_nmt": ("lstm_lm_nmt", None),
    "lstm_lm_nmt_1x128": ("lstm_lm_nmt", "lstm-1x128"),
    "rmn_rm": ("rmn_rm", None),
    "rmn_rm_paper": ("rmn_rm", "rm-paper"),
    "rmn_rmr": ("rmn_rmr", None),
    "rmn_rmr_paper": ("rmn_rmr", "rmr-paper"),
    "mogrifier_lm": ("mogrifier_lm", None),
    "mogrifier_lm_paper": ("mogrifier_lm", "mogrifier-paper"),
    "mogrifier_lm_1x128": ("mogrifier_lm", "mogrifier-1x128"),
}


class NmtLMDecoder(FairseqIncrementalDecoder):
    def __init__(self, dictionary, lm, ids: IdMap):
        super().__init__(dictionary)
        self.lm = lm
        self.ids = ids

    def forward(self, prev_output_tokens, incremental_state=None, src_lengths=None, features_only=False,
                **kwargs):
        if features_only:
            raise ValueError("features_only is not supported by the nmt LM wrappers")
        tokens = self.ids.tokens(prev_output_tokens)
        state, lengths = None, None
        if incremental_state is not None:
            cached = self.get_incremental_state(incremental_state, "lm")
            if cached is not None:
                state = cached["state"]
                tokens = tokens[:, -1:]
        else:
            pad_mask = prev_output_tokens.eq(self.dictionary.pad())
            if bool(pad_mask.any()):  # fairseq LM batches are right-padded
                lengths = (~pad_mask).sum(1)
        logits, new_state = self.lm(tokens, state, lengths=lengths)
        if incremental_state is not None:
            self.set_incremental_state(incremental_state, "lm", {"state": new_state})
        return self.ids.logits_to_fairseq(logits), {"attn": [None], "inner_states": None}

    def reorder_incremental_state(self, incremental_state, new_order):
        cached = self.get_incremental_state(incremental_state, "lm")
        if cached is not None:
            self.set_incremental_state(incremental_state, "lm",
                                       {"state": self.lm.reorder_state(cached["state"], new_order)})

    def max_positions(self):
        return int(1e6)


class NmtLanguageModel(FairseqLanguageModel):
    """Base of the registered LM models; subclasses set ``nmt_arch``."""

    nmt_arch = ""

    @classmethod
    def add_args(cls, parser):
        parser.add_argument("--lm-preset", type=str, default=None,
                            help=f"preset of nmt.models.lm.PRESETS for arch {cls.nmt_arch!r} "
                                 "(set by --arch; the --lm-* flags win)")
        add_prefixed_dataclass_args(parser, ARCHITECTURES[cls.nmt_arch][1], PREFIX)

    @classmethod
    def build_model(cls, args, task):
        preset = getattr(args, "lm_preset", None)
        name = preset or cls.nmt_arch
        if preset is not None:
            if preset not in PRESETS:
                raise ValueError(f"unknown --lm-preset {preset!r}; known: {sorted(PRESETS)}")
            if PRESETS[preset]["arch"] != cls.nmt_arch:
                raise ValueError(f"--lm-preset {preset!r} is a {PRESETS[preset]['arch']!r} preset, "
                                 f"not {cls.nmt_arch!r}")
        overrides = prefixed_overrides(args, ARCHITECTURES[cls.nmt_arch][1], PREFIX)
        dictionary = task.target_dictionary
        lm = build_lm(name, len(dictionary), **overrides)
        return cls(NmtLMDecoder(dictionary, lm, IdMap(dictionary)))


def _register() -> None:
    classes = {}
    for model_name, nmt_arch in MODELS.items():
        cls = type(f"FairseqWrapped_{nmt_arch}", (NmtLanguageModel,),
                   {"nmt_arch": nmt_arch, "__doc__": f"fairseq wrapper of nmt LM arch {nmt_arch!r}"})
        classes[model_name] = register_model(model_name)(cls)  # returns the registered class if already there
    for arch, (model_name, preset) in ARCHS.items():
        if arch in ARCH_MODEL_REGISTRY:
            continue

        def arch_fn(args, _preset=preset):
            set_default(args, "lm_preset", _preset)

        register_model_architecture(model_name, arch)(arch_fn)
    globals().update({cls.__name__: cls for cls in classes.values()})


_register()
