"""Raw text in, raw text out (:class:`TextPipeline`): the steps a system's training data went through, applied to a
sentence (Moses tokenization as ``nmt-prepare``, truecasing), and undone on its translation (detruecasing as
``nmt-truecase --detruecase``, detokenization as ``nmt-evaluate --detokenize``)."""
from __future__ import annotations

from pathlib import Path

from nmt.data.tokenize import MosesTokenizer
from nmt.data.truecase import Truecaser, detruecase


class TextPipeline:
    """Tokenize (+ lowercase) and truecase a source sentence; detruecase and detokenize a target one."""

    def __init__(self, src_lang: str, tgt_lang: str, *, lowercase: bool = False,
                 truecase: dict[str, Path] | None = None) -> None:
        self.src_lang, self.tgt_lang, self.lowercase = src_lang, tgt_lang, lowercase
        self.src_tok = MosesTokenizer(src_lang, lowercase=lowercase)
        self.tgt_tok = MosesTokenizer(tgt_lang, lowercase=lowercase)
        self.truecase_models = dict(truecase or {})
        self.src_truecaser = Truecaser.load(self.truecase_models[src_lang]) if src_lang in self.truecase_models else None
        self.truecased_target = tgt_lang in self.truecase_models

    def source_tokens(self, text: str) -> list[str]:
        """The tokens the decoder sees for a raw sentence (line breaks count as spaces)."""
        tokens = self.src_tok.tokenize(" ".join(text.split()))
        if self.src_truecaser is not None and tokens:
            tokens = self.src_truecaser(" ".join(tokens)).split()
        return tokens

    def target_text(self, tokens: list[str]) -> str:
        """The raw text of target tokens: detruecased (first letter of each sentence up) when the system is
        truecased, then detokenized (Moses entities unescaped)."""
        if self.truecased_target and tokens:
            tokens = detruecase(" ".join(tokens)).split()
        return self.tgt_tok.detokenize(tokens)
