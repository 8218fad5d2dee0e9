"""Moses's XML-RPC ``translate`` (``mosesserver``; ``moses/server/TranslationRequest.cpp``): the request read as
mosesserver reads it, the answer packed as it packs it. The wire format is the standard library's
(:func:`xmlrpc.client.loads` / :func:`~xmlrpc.client.dumps`).

Request: one struct with ``text`` (required) and ``align``, ``word-align``, ``report-all-factors``,
``add-score-breakdown``, ``nbest-distinct`` (true as a boolean or as the string ``"true"``/``"True"``/``"TRUE"``/
``"1"``, mosesserver's ``check()``) and ``nbest`` (an int). Answer (struct keys sorted, as C++'s ``std::map``):

* ``text``: the translation;
* ``align`` (with ``align``): one struct per phrase in target order: ``src-start``, ``src-end``, ``tgt-start``,
  ``tgt-end`` (word positions, ends inclusive);
* ``word-align`` (with ``word-align``): ``source-word``, ``target-word`` structs, phrase by phrase in target order;
* ``nbest`` (with ``nbest`` > 0): a list of structs ``hyp``, ``totalScore`` (and ``align``/``word-align`` as
  asked); with ``add-score-breakdown`` also ``fvals`` (the n-best line's labelled features, `` LM0= -12.3 …``) and
  ``scores`` (``{feature: [[values], {}]}``, mosesserver's ``PackScores``).

Where this server differs, on purpose: the text sent and returned is raw (the server tokenizes, truecases,
detruecases and detokenizes), so ``text``/``hyp`` are detokenized and carry no trailing space, and the positions
refer to the server's Moses tokenization of the source and of the translation; there is one factor
(``report-all-factors`` changes nothing); mosesserver's other options (search graph, translation options,
sessions, weight updates, context) are refused with a fault rather than ignored; a fault comes with an HTTP 4xx
status (mosesserver answers faults with 200).
"""
from __future__ import annotations

import math
import xml.parsers.expat
import xmlrpc.client
from typing import Any

from nmt.core.formats.nbest import format_features
from smt_features.serve.api import Request
from smt_features.serve.requests import Limits, RequestError
from smt_features.serve.results import Hypothesis, SentenceResult

#: xmlrpc-c's fault codes (xmlrpc_c::fault::code_t), which mosesserver's faults carry
FAULT_TYPE, FAULT_PARSE, FAULT_NO_SUCH_METHOD, FAULT_LIMIT_EXCEEDED = -501, -503, -506, -509
FLAGS = ("align", "word-align", "report-all-factors", "add-score-breakdown", "nbest-distinct")
KNOWN = ("text", "nbest", *FLAGS)


class RpcFault(RequestError):
    """A refused XML-RPC call: HTTP ``status`` and the fault's ``code`` and message."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(status, message)
        self.code = code


def _check(params: dict[str, Any], key: str) -> bool:
    """mosesserver's ``check()``: a boolean, or a string that is true when "true", "True", "TRUE" or "1"."""
    value = params.get(key, False)
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value in ("true", "True", "TRUE", "1")
    raise RpcFault(400, FAULT_TYPE, f"'{key}' must be a boolean or a string such as \"true\"")


def parse_call(body: bytes, limits: Limits) -> tuple[Request, dict[str, bool]]:
    """The request of a ``translate`` call and its answer flags (``align``, ``word-align``, ``add-score-breakdown``)."""
    try:
        params, method = xmlrpc.client.loads(body)
    except (xml.parsers.expat.ExpatError, xmlrpc.client.ResponseError, ValueError, TypeError, IndexError) as err:
        raise RpcFault(400, FAULT_PARSE, f"malformed XML-RPC call: {err}") from None
    if method is None:
        raise RpcFault(400, FAULT_PARSE, "malformed XML-RPC call: no <methodName>")
    if method != "translate":
        raise RpcFault(400, FAULT_NO_SUCH_METHOD, f"no such method {method!r}: this server has 'translate'")
    if len(params) != 1 or not isinstance(params[0], dict):
        raise RpcFault(400, FAULT_TYPE, "translate takes one struct parameter, e.g. {'text': 'A sentence.'}")
    p = params[0]
    unknown = sorted(set(p) - set(KNOWN))
    if unknown:
        raise RpcFault(400, FAULT_PARSE, f"unknown or unsupported option(s) {', '.join(map(repr, unknown))}; this "
                                         f"server takes {', '.join(KNOWN)}")
    if "text" not in p:
        raise RpcFault(400, FAULT_PARSE, "Missing source text")  # mosesserver's own words
    if not isinstance(p["text"], str):
        raise RpcFault(400, FAULT_TYPE, "'text' must be a string")
    nbest = p.get("nbest", 0)
    if isinstance(nbest, bool) or not isinstance(nbest, int) or nbest < 0:
        raise RpcFault(400, FAULT_TYPE, f"'nbest' must be an int >= 0, not {nbest!r}"[:120])
    flags = {k: _check(p, k) for k in FLAGS}
    try:
        limits.check_sentences([p["text"]])
        limits.check_nbest(nbest)
    except RequestError as err:
        raise RpcFault(err.status, FAULT_LIMIT_EXCEEDED if err.status == 413 else FAULT_PARSE, str(err)) from None
    request = Request([p["text"]], nbest=max(1, nbest), trace=flags["align"] or flags["word-align"],
                      scores=flags["add-score-breakdown"], distinct=flags["nbest-distinct"])
    return request, {"align": flags["align"], "word-align": flags["word-align"], "nbest": nbest > 0,
                     "add-score-breakdown": flags["add-score-breakdown"]}


def _sorted(value: Any) -> Any:
    """Struct keys in byte order, as mosesserver's ``std::map`` writes them; floats finite (XML-RPC has no inf)."""
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value, key=lambda k: k.encode("utf-8"))}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return math.copysign(1.7976931348623157e308, value)
    return value


def _pack(h: Hypothesis, flags: dict[str, bool], key: str) -> dict[str, Any]:
    out: dict[str, Any] = {key: h.text}
    if flags["align"]:
        out["align"] = [{"src-start": s.src_start, "src-end": s.src_end, "tgt-start": s.tgt_start,
                         "tgt-end": s.tgt_end} for s in h.segments]
    if flags["word-align"]:
        out["word-align"] = [{"source-word": i, "target-word": j} for i, j in h.word_alignment]
    return out


def answer(result: SentenceResult, flags: dict[str, bool]) -> bytes:
    """The methodResponse of one translation."""
    out = _pack(result.best, flags, "text")
    if flags["nbest"]:
        items = []
        for h in result.nbest:
            item = _pack(h, flags, "hyp")
            if flags["add-score-breakdown"]:
                tuned = [f for f in h.features if f.tuneable]
                item["fvals"] = format_features([(f.name, f.values) for f in tuned])
                item["scores"] = {f.name: [list(f.values), {}] for f in tuned}
            item["totalScore"] = h.total
            items.append(item)
        out["nbest"] = items
    return xmlrpc.client.dumps((_sorted(out),), methodresponse=True, encoding="utf-8").encode("utf-8")


def fault(code: int, message: str) -> bytes:
    """A methodResponse holding a fault."""
    return xmlrpc.client.dumps(xmlrpc.client.Fault(code, message), methodresponse=True,
                               encoding="utf-8").encode("utf-8")
