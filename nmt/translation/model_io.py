"""Load a trained encoder–decoder (RNNenc or RNNsearch, as recorded) with its vocabularies, checking that they match."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from torch import nn

from nmt.training.checkpoint import load_checkpoint
from nmt.data.vocab import Vocabulary, load_vocab
from nmt.models.registry import DEFAULT_ARCH, build_from_config
from nmt.core.paths import resolve_checkpoint


@dataclass
class LoadedModel:
    model: nn.Module  # GRUEncoderDecoder or RNNsearch
    src_vocab: Vocabulary
    tgt_vocab: Vocabulary
    path: Path


def load_translation_model(path: str | Path, *, which: str = "auto", src_vocab: str | None = None,
                           tgt_vocab: str | None = None, device: str = "cpu",
                           trust: bool | None = None) -> LoadedModel:
    """Load ``path`` (a checkpoint, or a model folder and ``which``: best, last or auto) in eval mode.

    Vocabularies default to the copies in the model folder; any vocabulary whose
    fingerprint differs from the one recorded at training time is refused. ``trust``: see
    :func:`nmt.training.checkpoint.load_checkpoint` (an old-format checkpoint loads only when trusted;
    default ``$RNNSMT_TRUST_CHECKPOINTS``).
    """
    ckpt_path = resolve_checkpoint(path, which)
    state = load_checkpoint(ckpt_path, trust=trust)
    if state.get("config", {}).get("task") != "translation":
        raise ValueError(f"{ckpt_path}: not a translation-model checkpoint")
    arch = state["config"].get("arch", DEFAULT_ARCH)  # absent: an RNNenc checkpoint
    vocabs = []
    for side, given in (("src", src_vocab), ("tgt", tgt_vocab)):
        recorded = state["vocab"][side]
        candidates = [given] if given else [str(p) for p in sorted(ckpt_path.parent.glob(f"{side}_vocab.*"))] + [
            recorded["path"]]
        existing = [c for c in candidates if c and Path(c).exists()]
        if not existing:
            raise FileNotFoundError(f"{ckpt_path}: {side} vocabulary not found (tried {candidates})")
        vocab = load_vocab(existing[0])
        if vocab.fingerprint() != recorded["fingerprint"]:
            raise ValueError(f"{existing[0]}: model/vocabulary mismatch: this vocabulary (fingerprint "
                             f"{vocab.fingerprint()}) is not the {side} vocabulary {ckpt_path} was trained with "
                             f"({recorded['fingerprint']})")
        vocabs.append(vocab)
    model = build_from_config(arch, state["config"]["model"], len(vocabs[0]), len(vocabs[1]))
    model.load_state_dict(state["model"])
    model.to(device).eval()
    return LoadedModel(model, vocabs[0], vocabs[1], ckpt_path)
