"""smt-serve over HTTP on a tiny experiment: the JSON API, the Moses-compatible XML-RPC ``translate`` as a Moses
client calls it, batching, /health and /info, and every fault of issue 26 point 5: its status and message, the
server still serving after it."""
from __future__ import annotations

import asyncio
import hashlib
import json
import re
import xmlrpc.client
from pathlib import Path

import pytest
from tests.smt.serve.serve_fixtures import NBEST, build_tiny_experiment, http, serving

from nmt.core.formats.nbest import parse_nbest_line
from smt_features.serve.api import Request, System
from smt_features.serve.batcher import Batcher
from smt_features.serve.requests import Limits

pytestmark = pytest.mark.usefixtures("one_torch_thread")
LIMITS = Limits(max_sentences=3, max_chars=120, max_words=12, max_nbest=NBEST, max_body=4096)
TEXTS = ["S3 s1 s2.", "s4 s0, s7!", "s0 qq s2."]


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    work = build_tiny_experiment(tmp_path_factory.mktemp("serve"))
    with System.load(work, system="+all+RNNsearch", threads=2) as system:
        yield system


@pytest.fixture(scope="module")
def url(full):
    with serving(full, LIMITS, window_s=0.002) as base:
        yield base


def _json(url: str, body) -> tuple[int, dict]:
    status, data, _ = http(url + "/translate", json.dumps(body) if not isinstance(body, (bytes, str)) else body)
    return status, json.loads(data)


def test_json_translate(full: System, url: str) -> None:
    want = full.translate(TEXTS, nbest=3, trace=True, scores=True, attention=True)
    status, one = _json(url, {"text": TEXTS[0]})
    assert status == 200 and one["system"] == "+all+RNNsearch" and len(one["translations"]) == 1
    assert one["translations"][0]["translation"] == want[0].translation
    assert set(one["translations"][0]) == {"source", "source_tokens", "translation", "total", "tokens"}
    status, many = _json(url, {"text": TEXTS, "nbest": 3, "trace": True, "scores": True, "attention": True})
    assert status == 200
    for got, ref in zip(many["translations"], want):
        assert got == json.loads(json.dumps(ref.to_dict()))
        assert len(got["nbest"]) == 3 and got["segments"] and got["word_alignment"] and got["attention"]["rows"]
        assert [f["name"] for f in got["features"]][-1] == "RNNS0"


def test_health_and_info(full: System, url: str) -> None:
    status, data, _ = http(url + "/health")
    health = json.loads(data)
    assert status == 200 and health["status"] == "ok" and health["system"] == "+all+RNNsearch"
    status, data, _ = http(url + "/info")
    info = json.loads(data)
    assert status == 200 and info["system"] == "+all+RNNsearch" and info["run"] == 1
    assert info["rerank"]["nbest_size"] == NBEST and info["attention"] == "RNNS0"
    assert [m["name"] for m in info["rerank"]["features"]] == ["LSTM0", "RMN0", "MOG0", "RNN0", "RNNS0"]
    assert info["rerank"]["features"][-1]["arch"] == "rnnsearch"
    ini = info["decoder"]["moses_ini"]
    assert ini["sha256"] == hashlib.sha256(Path(ini["path"]).read_bytes()).hexdigest()
    ckpt = info["rerank"]["features"][-1]["checkpoint"]
    assert ckpt["sha256"] == hashlib.sha256(Path(ckpt["path"]).read_bytes()).hexdigest()
    assert info["rerank"]["weights"]["RNNS0"] == [12.0] and info["limits"]["max_sentences"] == 3
    assert {f["name"] for f in info["decoder"]["features"]} >= {"LM0", "TranslationModel0", "Distortion0"}


def test_xmlrpc_as_a_moses_client_calls_it(full: System, url: str) -> None:
    """The call of Moses's contrib/server/client.py, plus word-align, n-best and the score breakdown."""
    proxy = xmlrpc.client.ServerProxy(url + "/RPC2")
    ref = full.translate(TEXTS[:1], nbest=3, trace=True, scores=True)[0]
    plain = proxy.translate({"text": TEXTS[0]})
    assert plain == {"text": ref.translation}
    res = proxy.translate({"text": TEXTS[0], "align": "true", "word-align": "true", "report-all-factors": "true",
                           "nbest": 3, "add-score-breakdown": "true"})
    assert sorted(res) == ["align", "nbest", "text", "word-align"] and res["text"] == ref.translation
    assert res["align"] == [{"src-start": s.src_start, "src-end": s.src_end, "tgt-start": s.tgt_start,
                             "tgt-end": s.tgt_end} for s in ref.best.segments]
    assert res["word-align"] == [{"source-word": i, "target-word": j} for i, j in ref.best.word_alignment]
    assert len(res["nbest"]) == 3
    for item, hyp in zip(res["nbest"], ref.nbest):
        assert sorted(item) == ["align", "fvals", "hyp", "scores", "totalScore", "word-align"]
        assert item["hyp"] == hyp.text and item["totalScore"] == pytest.approx(hyp.total)
        fvals = dict(parse_nbest_line(f"0 ||| x |||{item['fvals']} ||| 0").features)
        assert fvals == {f.name: pytest.approx(f.values, rel=1e-5) for f in hyp.features}
        assert item["scores"]["RNNS0"] == [[pytest.approx(hyp.features[-1].values[0])], {}]
    assert proxy.translate({"text": TEXTS[0], "align": True, "nbest": 0}).keys() == {"text", "align"}
    # the wire: a methodResponse whose struct keys come in byte order, as mosesserver's std::map writes them
    call = xmlrpc.client.dumps(({"text": TEXTS[0], "align": "true"},), "translate")
    status, body, _ = http(url + "/RPC2", call, content_type="text/xml")
    keys = re.findall(rb"<name>([^<]+)</name>", body)
    assert status == 200 and keys[:5] == [b"align", b"src-end", b"src-start", b"tgt-end", b"tgt-start"]


FAULTS = [  # (body, status, what the message says)
    (b"{\"text\": ", 400, "malformed JSON"),
    (b"[\"a list\"]", 400, "must be a JSON object"),
    (b"\xff\xfe", 400, "not UTF-8"),
    ({"txt": "x"}, 400, "unknown option\\(s\\) 'txt'"),
    ({"text": "s1", "moses_ini": "/etc/passwd"}, 400, "unknown option\\(s\\) 'moses_ini'"),
    ({"text": "s1", "model": "../rnnsearch/model"}, 400, "unknown option\\(s\\) 'model'"),
    ({"nbest": 2}, 400, "missing 'text'"),
    ({"text": ""}, 400, "the text is empty"),
    ({"text": "   "}, 400, "the text is empty"),
    ({"text": []}, 400, "empty list"),
    ({"text": ["s1", ""]}, 400, "sentence 2 is empty"),
    ({"text": 7}, 400, "'text' must be a string or a list of strings"),
    ({"text": "s" * 121}, 413, "121 characters; the limit is 120"),
    ({"text": "s1 " * 13}, 413, "13 words; the limit is 12"),
    ({"text": ["s1"] * 4}, 413, "4 sentences in one request; the limit is 3"),
    ({"text": "s1", "nbest": 0}, 400, "'nbest' must be an integer >= 1"),
    ({"text": "s1", "nbest": "3"}, 400, "'nbest' must be an integer"),
    ({"text": "s1", "nbest": NBEST + 1}, 400, f"more than this system gives \\({NBEST}\\)"),
    ({"text": "s1", "trace": "yes"}, 400, "'trace' must be true or false"),
    (b"{\"text\": \"" + b"s1 " * 2000 + b"\"}", 413, "limit of 4096 bytes|the limit is 4096"),
]


@pytest.mark.parametrize("body,status,message", FAULTS, ids=[f"{i}" for i in range(len(FAULTS))])
def test_json_faults(url: str, body, status: int, message: str) -> None:
    got, data = _json(url, body)
    assert got == status and data["status"] == status and re.search(message, data["error"]), data
    assert _json(url, {"text": "s1 s2."})[0] == 200  # and the server goes on


RPC_FAULTS = [  # (body, status, fault code, what the message says)
    (b"<methodCall><methodName>translate</methodName><params>", 400, -503, "malformed XML-RPC"),
    (b"not xml at all", 400, -503, "malformed XML-RPC"),
    (xmlrpc.client.dumps(({"text": "x"},), methodresponse=True), 400, -503, "no <methodName>"),
    (xmlrpc.client.dumps(({"text": "x"},), "translat"), 400, -506, "no such method 'translat'"),
    (xmlrpc.client.dumps(("s1 s2",), "translate"), 400, -501, "one struct parameter"),
    (xmlrpc.client.dumps(({"align": "true"},), "translate"), 400, -503, "^Missing source text$"),
    (xmlrpc.client.dumps(({"text": "x", "weights": "LM0=1"},), "translate"), 400, -503, "unsupported option\\(s\\) 'weights'"),
    (xmlrpc.client.dumps(({"text": "x", "sg": "true"},), "translate"), 400, -503, "unsupported option\\(s\\) 'sg'"),
    (xmlrpc.client.dumps(({"text": "x", "nbest": "2"},), "translate"), 400, -501, "'nbest' must be an int"),
    (xmlrpc.client.dumps(({"text": "x", "align": 1},), "translate"), 400, -501, "'align' must be a boolean"),
    (xmlrpc.client.dumps(({"text": ""},), "translate"), 400, -503, "the text is empty"),
    (xmlrpc.client.dumps(({"text": "s1 " * 13},), "translate"), 413, -509, "13 words"),
    (xmlrpc.client.dumps(({"text": "s1", "nbest": 99},), "translate"), 400, -503, "more than this system gives"),
]


@pytest.mark.parametrize("body,status,code,message", RPC_FAULTS, ids=[f"{i}" for i in range(len(RPC_FAULTS))])
def test_xmlrpc_faults(url: str, body, status: int, code: int, message: str) -> None:
    got, data, reason = http(url + "/RPC2", body, content_type="text/xml")
    assert got == status, data
    with pytest.raises(xmlrpc.client.Fault) as fault:
        xmlrpc.client.loads(data)
    assert fault.value.faultCode == code and re.search(message, fault.value.faultString)
    assert reason.isascii() and reason  # the message also as the HTTP reason phrase
    assert xmlrpc.client.ServerProxy(url + "/RPC2").translate({"text": "s1 s2."})["text"]  # the server goes on


def test_a_moses_client_sees_the_status_and_the_message(url: str) -> None:
    proxy = xmlrpc.client.ServerProxy(url + "/RPC2")
    with pytest.raises(xmlrpc.client.ProtocolError) as err:
        proxy.translate({"text": ""})
    assert err.value.errcode == 400 and "the text is empty" in err.value.errmsg


def test_no_file_is_ever_named_by_a_request(url: str) -> None:
    for path in ("/static/../serve_fixtures.py", "/static/..%2F..%2Fapi.py", "/static/%2e%2e/app.py", "/etc/passwd",
                 "/static/index.html/..", "/static/server.py"):
        status, data, _ = http(url + path)
        assert status == 404 and b"def " not in data, path
    for page in ("/", "/static/app.js", "/static/style.css"):
        assert http(url + page)[0] == 200
    assert http(url + "/translate")[0] == 405 and http(url + "/health", b"{}")[0] == 405


def test_requests_that_arrive_together_are_one_batch(full: System) -> None:
    """Requests queued before the collector runs form one batch: one call of the translate function, results
    back to their requests in order, the same translations as one request at a time."""
    calls: list[int] = []

    def translate(requests):
        calls.append(len(requests))
        return full.translate_requests(requests)

    async def main():
        batcher = Batcher(translate, window_s=0.0, max_sentences=64)
        batcher.start()
        reqs = [Request([t]) for t in TEXTS * 4]
        results = await asyncio.gather(*(batcher.submit(r) for r in reqs))
        await batcher.close()
        return reqs, results

    reqs, results = asyncio.run(main())
    assert calls == [12]
    assert [r[0].translation for r in results] == [x.translation for x in full.translate(TEXTS * 4)]


def test_batcher_splits_large_batches_and_reports_errors() -> None:
    sizes: list[int] = []

    def translate(requests):
        sizes.append(sum(len(r.sentences) for r in requests))
        if any("boom" in s for r in requests for s in r.sentences):
            raise RuntimeError("boom")
        return [[s.upper() for s in r.sentences] for r in requests]

    async def main():
        batcher = Batcher(translate, window_s=0.0, max_sentences=5, max_batches=1)
        batcher.start()
        ok = await asyncio.gather(*(batcher.submit(Request(["a", "b"])) for _ in range(6)))
        bad = await asyncio.gather(batcher.submit(Request(["boom"])), return_exceptions=True)
        await batcher.close()
        return ok, bad

    ok, bad = asyncio.run(main())
    assert ok == [["A", "B"]] * 6 and sizes[:3] == [4, 4, 4]  # never more than 5 sentences in a batch
    assert isinstance(bad[0], RuntimeError)
