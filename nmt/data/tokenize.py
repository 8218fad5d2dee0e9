"""Moses tokenization (sacremoses) with Moses' own escaping.

Escaping (``|`` → ``&#124;``, ``<`` → ``&lt;``, ``'`` → ``&apos;`` …) is on by
default, as in Moses, because ``|`` would break the ``|||`` fields of a
phrase table. :meth:`MosesTokenizer.detokenize` undoes it.

sacremoses is imported on the first tokenization or detokenization, not with this module: its import compiles
some 200 regular expressions (0.6–0.75 s on our 2-core CI machines), which a process that reads tokenized text
and writes tokens (``nmt-translate --tokenized true --detokenize false``) does not need.
"""
from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sacremoses

_MOSES_ESCAPES = {
    "&amp;": "&", "&#124;": "|", "&lt;": "<", "&gt;": ">",
    "&apos;": "'", "&quot;": '"', "&#91;": "[", "&#93;": "]",
}
_ESCAPE_RE = re.compile("|".join(re.escape(e) for e in _MOSES_ESCAPES))


def unescape_moses(text: str) -> str:
    """Undo Moses XML escaping in one pass (``&amp;lt;`` → ``&lt;``, not ``<``)."""
    return _ESCAPE_RE.sub(lambda m: _MOSES_ESCAPES[m.group(0)], text)


@functools.lru_cache(maxsize=None)
def _sacremoses_tokenizer(lang: str) -> sacremoses.MosesTokenizer:
    import sacremoses

    return sacremoses.MosesTokenizer(lang=lang)


@functools.lru_cache(maxsize=None)
def _sacremoses_detokenizer(lang: str) -> sacremoses.MosesDetokenizer:
    import sacremoses

    return sacremoses.MosesDetokenizer(lang=lang)


class MosesTokenizer:
    """Moses tokenizer/detokenizer for one language (no aggressive dash splitting).

    Tokens never contain whitespace, so ``" ".join(tokens)`` and ``str.split()``
    round-trip them.
    """

    def __init__(self, lang: str, lowercase: bool = False, escape: bool = True) -> None:
        self.lang = lang
        self.lowercase = lowercase
        self.escape = escape

    def tokenize(self, line: str) -> list[str]:
        """Tokens of one sentence (lowercased first if configured)."""
        if self.lowercase:
            line = line.lower()
        tokens = _sacremoses_tokenizer(self.lang).tokenize(line, aggressive_dash_splits=False, escape=self.escape,
                                                           return_str=True)
        return tokens.split()

    def detokenize(self, tokens: list[str]) -> str:
        """Join tokens into text, unescaping Moses entities."""
        return _sacremoses_detokenizer(self.lang).detokenize([unescape_moses(t) for t in tokens], unescape=False)

    def __repr__(self) -> str:
        return f"MosesTokenizer(lang={self.lang!r}, lowercase={self.lowercase}, escape={self.escape})"
