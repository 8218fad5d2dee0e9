"""The one face of the neural models: ln p(target | source) of pairs, and ln p(sentence) under an LM.

What the SMT floor (``smt_features``) may use of the neural models is here, and only here:

* :class:`PairScorer` (an ``nmt-train`` encoder–decoder): ``score_pairs`` gives one
  :class:`PairScore` per sentence pair, ``score_window`` the arrays of a whole window of phrase
  pairs (each distinct source encoded once, length-sorted batches of at most ``max_tokens`` padded
  target tokens, softmax on real tokens only; the work is :class:`nmt.translation.rescoring_engine.RescoringEngine`'s),
  ``generate`` the beam n-best of each source (batched), ``encoder_summaries`` the summary ``c`` of phrases;
* :class:`LMScorer` (an ``nmt-lm-train`` language model): ``score_sentences`` gives ln p of each
  sentence incl. ``</s>``, each from a fresh state; ``token_logprobs`` the per-token detail;
* :func:`naming_checkpoint`: loading errors that name the checkpoint; :func:`set_threads`: torch's threads.

Natural log everywhere; EOS is counted, BOS is not; unknown words are scored as ``<unk>`` and
counted. Results come back in input order. This module imports torch only inside its functions.
"""
from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nmt.core.io import DataError
from nmt.core.errors import UsageError

if TYPE_CHECKING:
    import numpy as np

    from nmt.lm.loading import LoadedLM
    from nmt.translation.rescoring_engine import WindowScores


@contextlib.contextmanager
def naming_checkpoint(ckpt: str | os.PathLike) -> Iterator[None]:
    """Inside: a plain ``ValueError`` from loading ``ckpt`` (e.g. its vocabulary does not match it) becomes a
    :class:`~nmt.core.errors.UsageError` whose message starts with the checkpoint's path (``FILE: ...``)."""
    try:
        yield
    except (DataError, UsageError):
        raise
    except ValueError as err:
        text = str(err)
        head = text.split(": ", 1)[0].rstrip(":0123456789")
        if head and os.path.exists(head):  # already names its file (the checkpoint, or the vocabulary at fault)
            raise
        raise UsageError(f"{ckpt}: {text}") from None


def set_threads(threads: int) -> None:
    """Torch's intra-op threads for the scoring in this process (``torch.set_num_threads``)."""
    import torch

    torch.set_num_threads(threads)


@dataclass
class PairScore:
    log_prob: float  # ln p(tgt | src), EOS included
    tgt_tokens: int  # predicted tokens incl. EOS
    src_unk: int  # source words unknown to the network
    tgt_unk: int  # target words unknown to the network


class PairScorer:
    """ln p(target | source) under a trained encoder–decoder (see the module docstring)."""

    def __init__(self, model: Any, src_vocab: Any, tgt_vocab: Any, max_tokens: int = 4000, device: str = "cpu",
                 **engine_options: Any):
        from nmt.translation.rescoring_engine import RescoringEngine

        self.engine = RescoringEngine(model, src_vocab, tgt_vocab, max_tokens=max_tokens, device=device,
                                      **engine_options)
        self.model, self.src_vocab, self.tgt_vocab, self.device = model, src_vocab, tgt_vocab, device

    @classmethod
    def load(cls, path: str | os.PathLike, *, which: str = "auto", device: str = "cpu", max_tokens: int = 4000,
             **engine_options: Any) -> "PairScorer":
        """Load ``path`` (a checkpoint, or a model folder and ``which``) with its vocabularies;
        ``engine_options``: ``amp``, ``softmax_block`` of :class:`~nmt.translation.rescoring_engine.RescoringEngine`."""
        from nmt.translation.model_io import load_translation_model

        loaded = load_translation_model(str(path), which=which, device=device)
        return cls(loaded.model, loaded.src_vocab, loaded.tgt_vocab, max_tokens=max_tokens, device=device,
                   **engine_options)

    def score_pairs(self, src_batch: Sequence[Sequence[str]], tgt_batch: Sequence[Sequence[str]]
                    ) -> list[PairScore]:
        """Score tokenized pairs; one ``PairScore`` per pair, in input order."""
        scores = self.engine.score(src_batch, tgt_batch)
        return [PairScore(float(lp), len(t) + 1, int(su), int(tu))
                for lp, t, su, tu in zip(scores.log_prob, tgt_batch, scores.src_unk, scores.tgt_unk)]

    def score_window(self, srcs: Sequence[Sequence[str]], tgts: Sequence[Sequence[str]]) -> "WindowScores":
        """A window of (phrase) pairs at once: arrays ``log_prob``, ``src_unk``, ``tgt_unk`` and the count of
        distinct sources ``num_sources``. Depends only on the pairs given and the settings."""
        return self.engine.score(srcs, tgts)

    def tree_log_probs(self, srcs: Sequence[Sequence[str]], tgts: Sequence[Sequence[str]]) -> list[float]:
        """ln p(tgt | src) incl. ``</s>`` of each tokenized pair (natural log; an empty target too), in input
        order, every target prefix shared by pairs of one source read once
        (:func:`nmt.translation.prefix_scoring.prefix_pair_log_probs`): :meth:`score_pairs`' values up to
        float rounding."""
        from nmt.translation.prefix_scoring import prefix_pair_log_probs

        self.model.eval()
        return prefix_pair_log_probs(self.model, [self.src_vocab.encode(list(s)) for s in srcs],
                                     [self.tgt_vocab.encode(list(t)) for t in tgts],
                                     max_rows=self.engine.max_tokens)

    def empty_target_log_probs(self, srcs: Sequence[Sequence[str]], batch_size: int = 256) -> list[float]:
        """ln p(</s> | src) of each source (an empty target; :meth:`score_pairs` refuses an empty side)."""
        import torch

        from nmt.data.batching import pair_batch

        out: list[float] = []
        step = max(1, int(batch_size))
        for lo in range(0, len(srcs), step):
            chunk = srcs[lo:lo + step]
            b = pair_batch([self.src_vocab.encode(list(s)) for s in chunk], [[] for _ in chunk])
            with torch.no_grad():
                lp = self.model.pair_log_probs(b["src"].to(self.device), b["tgt_in"].to(self.device),
                                               b["tgt_out"].to(self.device))
            out.extend(float(x) for x in lp.double().cpu().tolist())
        return out

    def attention(self, srcs: Sequence[Sequence[str]], tgts: Sequence[Sequence[str]], batch_size: int = 64
                  ) -> list[list[list[float]]]:
        """The attention α of each pair, teacher-forced (an attention model such as RNNsearch; ``ValueError`` for
        one without): ``len(tgt) + 1`` rows (the target words, then ``</s>``) over ``len(src) + 1`` columns (the
        source words, then ``</s>``), each row summing to 1; in input order."""
        import torch

        from nmt.data.batching import pair_batch

        out: list[list[list[float]]] = []
        step = max(1, int(batch_size))
        self.model.eval()
        for lo in range(0, len(srcs), step):
            s_chunk, t_chunk = srcs[lo:lo + step], tgts[lo:lo + step]
            b = pair_batch([self.src_vocab.encode(list(s)) for s in s_chunk],
                           [self.tgt_vocab.encode(list(t)) for t in t_chunk])
            rows = []
            with torch.no_grad():
                state = self.model.start(b["src"].to(self.device))
                for i in range(b["tgt_in"].shape[1]):
                    _, state = self.model.step(b["tgt_in"][:, i].to(self.device), state)
                    if "attn" not in state:
                        raise ValueError(f"{type(self.model).__name__} does not attend (its decoder state has no "
                                         "attention weights): attention comes from a model such as RNNsearch")
                    rows.append(state["attn"].double().cpu())
            alpha = torch.stack(rows, 1)  # [B, T + 1, S + 1] (padded)
            for k, (s, t) in enumerate(zip(s_chunk, t_chunk)):
                out.append(alpha[k, :len(t) + 1, :len(s) + 1].tolist())
        return out

    def generate(self, sources: Sequence[Sequence[str]], *, nbest: int, beam_size: int,
                 batch_size: int = 64) -> list[list[tuple[tuple[str, ...], float]]]:
        """The encoder–decoder's own ``nbest`` targets for each source (batched beam search).

        One list per source, best first, of ``(words, ln p)``; sources are searched ``batch_size`` at a
        time, in length order (the batched search gives the same n-best as one source at a time).
        """
        from nmt.data.batching import pad
        from nmt.data.special import EOS
        from nmt.translation.search import beam_search

        order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
        out: list[list[tuple[tuple[str, ...], float]]] = [[] for _ in sources]
        for lo in range(0, len(order), max(1, batch_size)):
            chunk = order[lo:lo + max(1, batch_size)]
            src_ids = pad([self.src_vocab.encode(list(sources[i])) for i in chunk], suffix=EOS)
            for i, hyps in zip(chunk, beam_search(self.model, src_ids, beam_size=beam_size, nbest=nbest)):
                out[i] = [(tuple(self.tgt_vocab.decode(h.tokens)), h.log_prob) for h in hyps]
        return out

    def encoder_summaries(self, phrases: Sequence[Sequence[str]]) -> "np.ndarray":
        """The encoder summary ``c`` (numpy [N, H]) of each tokenized source phrase."""
        import numpy as np
        import torch

        from nmt.data.batching import pair_batch

        ids = [self.src_vocab.encode(list(p)) for p in phrases]
        batch = pair_batch(ids, [[] for _ in ids])
        with torch.no_grad():
            c = self.model.encode(batch["src"])
        return np.asarray(c.double().cpu().numpy())


class LMScorer:
    """ln p(sentence) under a trained language model, each sentence from a fresh state."""

    def __init__(self, loaded: "LoadedLM", *, batch_size: int = 256, max_tokens: int = 2000,
                 prefix_tree: bool = False, tree_size: int = 1024):
        self.loaded = loaded
        self.vocab = loaded.vocab
        self.batch_size = max(1, int(batch_size))
        self.max_tokens = max_tokens
        # prefix_tree: sentences read over their prefix tree, tree_size at a time (nmt.lm.prefix_scoring)
        self.prefix_tree = prefix_tree
        self.tree_size = max(1, int(tree_size))

    @classmethod
    def load(cls, path: str | os.PathLike, *, which: str = "auto", device: str = "cpu", vocab: str | None = None,
             batch_size: int = 256, max_tokens: int = 2000, prefix_tree: bool = False,
             tree_size: int = 1024) -> "LMScorer":
        """Load ``path`` (a checkpoint, or a model folder and ``which``) in eval mode with its vocabulary."""
        from nmt.lm.loading import load_language_model

        return cls(load_language_model(path, which=which, vocab=vocab, device=device), batch_size=batch_size,
                   max_tokens=max_tokens, prefix_tree=prefix_tree, tree_size=tree_size)

    @property
    def path(self) -> Path:
        return self.loaded.path

    def token_logprobs(self, sentences: Sequence[Sequence[str]]) -> list["np.ndarray"]:
        """ln p of each word and of ``</s>`` per sentence (``n + 1`` values), in input order."""
        from nmt.lm.data import encode_all
        from nmt.lm.prefix_scoring import prefix_token_logprobs
        from nmt.lm.scoring import sentence_token_logprobs

        score, step = sentence_token_logprobs, self.batch_size
        if self.prefix_tree:
            score, step = prefix_token_logprobs, self.tree_size
        out: list[Any] = []
        for lo in range(0, len(sentences), step):
            chunk = [list(s) for s in sentences[lo:lo + step]]
            out.extend(score(self.loaded.model, encode_all(self.vocab, chunk), start=self.loaded.start,
                             max_tokens=self.max_tokens))
        return out

    def score_sentences(self, sentences: Sequence[Sequence[str]]) -> list[float]:
        """ln p(sentence incl. ``</s>``) of each tokenized sentence (natural log), in input order."""
        return [math.fsum(lp.tolist()) for lp in self.token_logprobs(sentences)]

    def attention(self, sentences: Sequence[Sequence[str]]) -> list[Any]:
        """An RMN's attention over each sentence (:func:`nmt.analysis.rmn_attention.sentence_attention`)."""
        from nmt.analysis.rmn_attention import sentence_attention

        return sentence_attention(self.loaded, [list(s) for s in sentences])
