"""Loading a trained language model (``nmt-lm-train`` checkpoint + its word vocabulary) in eval mode."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nmt.training.checkpoint import load_checkpoint
from nmt.data.vocab import Vocabulary, load_vocab
from nmt.lm.data import LMDataConfig, check_word_vocab
from nmt.models.lm import ARCHITECTURES, LanguageModel
from nmt.data.special import BOS, EOS
from nmt.core.paths import resolve_checkpoint


@dataclass
class LoadedLM:
    model: LanguageModel
    vocab: Vocabulary
    config: dict[str, Any]
    path: Path

    @property
    def regime(self) -> str:
        return self.config.get("data", {}).get("regime", "sentence")

    @property
    def start(self) -> int:
        """First context symbol of an independent sentence: what the model was trained with."""
        return EOS if self.regime == "stream" else BOS

    def data_config(self) -> LMDataConfig:
        names = {f.name for f in dataclasses.fields(LMDataConfig)}
        return LMDataConfig(**{k: v for k, v in self.config.get("data", {}).items() if k in names})


def load_language_model(path: str | Path, *, which: str = "auto", vocab: str | None = None,
                        device: str = "cpu", trust: bool | None = None) -> LoadedLM:
    """Load ``path`` (a checkpoint, or a model folder and ``which``: best, last or auto) in eval mode.

    The vocabulary defaults to the model folder's ``vocab.tsv``; one whose
    fingerprint differs from the checkpoint's is refused. ``trust``: see
    :func:`nmt.training.checkpoint.load_checkpoint` (default ``$RNNSMT_TRUST_CHECKPOINTS``)."""
    ckpt_path = resolve_checkpoint(path, which)
    state = load_checkpoint(ckpt_path, trust=trust)
    config = state.get("config", {})
    if config.get("task") != "lm":
        raise ValueError(f"{ckpt_path}: not a language-model checkpoint (task {config.get('task')!r})")
    recorded = state["vocab"]
    candidates = [vocab] if vocab else [str(ckpt_path.parent / "vocab.tsv"), recorded.get("path", "")]
    existing = [c for c in candidates if c and Path(c).is_file()]
    if not existing:
        raise FileNotFoundError(f"{ckpt_path}: vocabulary not found (tried {candidates})")
    voc = check_word_vocab(load_vocab(existing[0]), existing[0])
    if voc.fingerprint() != recorded["fingerprint"]:
        raise ValueError(f"{existing[0]}: model/vocabulary mismatch: this vocabulary (fingerprint {voc.fingerprint()}, "
                         f"{len(voc)} entries) is not the vocabulary {ckpt_path} was trained with (fingerprint "
                         f"{recorded['fingerprint']}, {recorded.get('size', '?')} entries)")
    model_cls, _ = ARCHITECTURES[config["arch"]]
    model = model_cls.from_config(dict(config["model"]), len(voc))
    model.load_state_dict(state["model"])
    model.to(device).eval()
    return LoadedLM(model, voc, config, ckpt_path)
