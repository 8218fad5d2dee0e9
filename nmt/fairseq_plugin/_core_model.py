"""What the two translation models of the plugin share: one toolkit model owned as ``self.core``, its config
flags (``--<prefix>preset`` and ``--<prefix><field>``), and one fairseq architecture per preset."""
from __future__ import annotations

from typing import Any, Callable

from fairseq.models import ARCH_MODEL_REGISTRY, FairseqEncoderDecoderModel, register_model_architecture

from ._args import add_prefixed_dataclass_args, prefixed_overrides, set_default
from .vocab import IdMap


class CoreEncoderDecoderModel(FairseqEncoderDecoderModel):
    """A fairseq encoder–decoder around one of our models (``self.core``); subclasses set the class attributes."""

    config_cls: type                      # the model's config dataclass
    prefix: str                           # flag prefix: --<prefix>preset, --<prefix><field>
    default_preset: str                   # preset when neither --arch nor --<prefix>preset names one
    config_with_preset: Callable[..., Any]
    build_core: Callable[[Any, int, int], Any]
    encoder_cls: type
    decoder_cls: type

    def __init__(self, encoder, decoder, core, src_ids: IdMap, tgt_ids: IdMap):
        super().__init__(encoder, decoder)
        self.core = core
        self.src_ids = src_ids
        self.tgt_ids = tgt_ids

    @classmethod
    def add_args(cls, parser):
        parser.add_argument(f"--{cls.prefix.replace('_', '-')}preset", type=str, default=None,
                            help=f"preset of {cls.config_cls.__module__}.PRESETS (set by --arch; flags below win)")
        add_prefixed_dataclass_args(parser, cls.config_cls, cls.prefix)

    @classmethod
    def build_model(cls, args, task):
        preset_arg = cls.prefix + "preset"
        set_default(args, preset_arg, cls.default_preset)
        cfg = cls.config_with_preset(getattr(args, preset_arg),
                                     **prefixed_overrides(args, cls.config_cls, cls.prefix))
        src_dict, tgt_dict = task.source_dictionary, task.target_dictionary
        core = cls.build_core(cfg, len(src_dict), len(tgt_dict))
        src_ids, tgt_ids = IdMap(src_dict), IdMap(tgt_dict)
        return cls(cls.encoder_cls(src_dict, core, src_ids), cls.decoder_cls(tgt_dict, core, tgt_ids), core,
                   src_ids, tgt_ids)

    def max_positions(self):
        return (int(1e6), int(1e6))


def register_preset_archs(model_name: str, prefix: str, archs: dict[str, str]) -> None:
    """One fairseq architecture per ``{arch: preset}``, each setting ``--<prefix>preset``; idempotent (the plugin is
    imported both as ``fairseq_plugin`` and as ``nmt.fairseq_plugin``)."""
    for arch, preset in archs.items():
        if arch in ARCH_MODEL_REGISTRY:
            continue

        def arch_fn(args, preset=preset):
            set_default(args, prefix + "preset", preset)

        register_model_architecture(model_name, arch)(arch_fn)
