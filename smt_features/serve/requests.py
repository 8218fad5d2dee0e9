"""What a request may ask (:class:`Limits`) and the JSON request read strictly (:func:`parse_json_request`).

A request names sentences and options only: no option names a file, a model or a weight, and an option this
server does not know is refused (:class:`RequestError`, a 4xx status with a message saying what is wrong).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from smt_features.serve.api import Request

JSON_OPTIONS = {"text": "one sentence (a string) or a list of sentences, raw text",
                "nbest": "hypotheses to return per sentence (1 = the translation only)",
                "trace": "the phrase segmentation and word alignment of each hypothesis",
                "scores": "each feature's values, weights and contribution",
                "attention": "RNNsearch's attention over the 1-best (systems that have the model)",
                "distinct": "no repeated target strings in the n-best list"}


class RequestError(ValueError):
    """A refused request: ``status`` (400 malformed or unknown, 413 too large) and a message for the client."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Limits:
    """The server's limits on one request."""

    max_sentences: int = 64      # sentences in one request
    max_chars: int = 2000        # characters in one sentence
    max_words: int = 200         # whitespace-separated words in one sentence
    max_nbest: int = 100         # hypotheses per sentence (a reranked system: at most its tuned n-best size)
    max_body: int = 1 << 20      # bytes of a request body

    def check_sentences(self, texts: list[str]) -> None:
        """Refuse an empty request, an empty or oversized sentence, too many sentences."""
        if not texts:
            raise RequestError(400, "no sentence to translate: 'text' is an empty list")
        if len(texts) > self.max_sentences:
            raise RequestError(413, f"{len(texts)} sentences in one request; the limit is {self.max_sentences} "
                                    "(send several requests)")
        for i, t in enumerate(texts):
            where = f"sentence {i + 1}" if len(texts) > 1 else "the text"
            if not t.strip():
                raise RequestError(400, f"{where} is empty: nothing to translate")
            if len(t) > self.max_chars:
                raise RequestError(413, f"{where} has {len(t)} characters; the limit is {self.max_chars}")
            words = len(t.split())
            if words > self.max_words:
                raise RequestError(413, f"{where} has {words} words; the limit is {self.max_words} (split it)")

    def check_nbest(self, nbest: int) -> None:
        if nbest > self.max_nbest:
            raise RequestError(400, f"nbest {nbest} is more than this system gives ({self.max_nbest})")


def _flag(body: dict[str, Any], key: str) -> bool:
    value = body.get(key, False)
    if not isinstance(value, bool):
        raise RequestError(400, f"'{key}' must be true or false, not {json.dumps(value)[:40]}")
    return value


def parse_json_request(raw: bytes, limits: Limits) -> tuple[Request, bool]:
    """``(request, single)`` from a JSON body (``single``: ``text`` was one string, not a list)."""
    try:
        body = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise RequestError(400, f"the body is not UTF-8 (byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise RequestError(400, f"malformed JSON: {err.msg} at line {err.lineno} column {err.colno}") from None
    if not isinstance(body, dict):
        raise RequestError(400, "the body must be a JSON object such as {\"text\": \"A sentence.\"}")
    unknown = sorted(set(body) - set(JSON_OPTIONS))
    if unknown:
        raise RequestError(400, f"unknown option(s) {', '.join(map(repr, unknown))}; the options are "
                                f"{', '.join(JSON_OPTIONS)}")
    if "text" not in body:
        raise RequestError(400, "missing 'text': the sentence (or list of sentences) to translate")
    text = body["text"]
    single = isinstance(text, str)
    texts = [text] if single else text
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise RequestError(400, "'text' must be a string or a list of strings")
    limits.check_sentences(texts)
    nbest = body.get("nbest", 1)
    if isinstance(nbest, bool) or not isinstance(nbest, int) or nbest < 1:
        raise RequestError(400, f"'nbest' must be an integer >= 1, not {json.dumps(nbest)[:40]}")
    limits.check_nbest(nbest)
    return Request(texts, nbest=nbest, trace=_flag(body, "trace"), scores=_flag(body, "scores"),
                   attention=_flag(body, "attention"), distinct=_flag(body, "distinct")), single
