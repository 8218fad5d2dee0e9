"""A tiny finished experiment in the layout of recipes/lib/experiment.sh, built in seconds, for the serve tests.

The corpus is the toy word-for-word one (``s3`` → ``t3``) with a full stop on each side; tokenized and truecased
as nmt-prepare does (the truecase models trained here). The phrase table holds the corpus's n-grams with their
word alignments; the KenLM model is a hand-written bigram ARPA; the moses.ini is train-model.perl's defaults.
The neural features are tiny real models (an LSTM LM under the three LM names, an RNN encoder–decoder, an
RNNsearch), a few updates each. The reranking weights are written here (their neural weights large, so the
features decide); ``rerank/*/val.nbest.feat.gz`` is made by the real chain (smt-decode, smt-rerank) and tells the
n-best size (5).
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import math
import random
import shutil
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from tests.toy_corpus import SRC_WORDS, DICTIONARY
from nmt.data.truecase import train_file
from nmt.data.vocab import Vocabulary
from nmt.core.formats.phrase_table import write_phrase_table
from smt_features.model.moses_ini_build import default_config

NBEST = 5
NEURAL_WEIGHTS = {"LSTM0": 1.0, "RMN0": 1.0, "MOG0": 1.0, "RNN0": 6.0, "RNNS0": 12.0}  # the features decide
_BUILT: dict[str, Path] = {}


def _corpus(root: Path, seed: int = 0) -> None:
    rng = random.Random(seed)
    pool = [[rng.choice(SRC_WORDS) for _ in range(rng.randint(2, 5))] for _ in range(30)]
    for split, n in (("train", 240), ("val", 12)):
        src, tgt = [], []
        for _ in range(n):
            words = rng.choice(pool)
            src.append(" ".join(words) + " .")
            tgt.append(" ".join(DICTIONARY[w] for w in words) + " .")
        (root / f"{split}.tok.en").write_text("\n".join(src) + "\n", encoding="utf-8")
        (root / f"{split}.tok.fr").write_text("\n".join(tgt) + "\n", encoding="utf-8")
    for lang in ("en", "fr"):
        lines = (root / f"train.tok.{lang}").read_text(encoding="utf-8").split("\n")
        Vocabulary.build([x.split() for x in lines if x], max_size=None).save(root / f"vocab.{lang}.tsv")
        train_file([root / f"train.tok.{lang}"], root / f"truecase-model.{lang}")
    (root / "prepare.json").write_text(json.dumps({"src_lang": "en", "tgt_lang": "fr", "tokenizer": "moses",
                                                   "truecase": {"en": "truecase-model.en",
                                                                "fr": "truecase-model.fr"}}), encoding="utf-8")
    (root / "config.yaml").write_text("lowercase: false\ntruecase: true\n", encoding="utf-8")


def _table(data: Path, path: Path) -> None:
    """The corpus's aligned n-grams (up to 3 words), plus a shorter target for some (varied lengths)."""
    rng = random.Random(1)
    pairs = set()
    for s, t in zip((data / "train.tok.en").read_text().split("\n"), (data / "train.tok.fr").read_text().split("\n")):
        sw, tw = s.split(), t.split()
        for n in range(1, 4):
            for i in range(len(sw) - n + 1):
                pairs.add((tuple(sw[i:i + n]), tuple(tw[i:i + n])))
    pairs |= {(("s1", "s2"), ("t2", "t1")), (("s4",), ("t4", "t5")), (("s5",), ("t6",))}
    entries = []
    for src, tgt in sorted(pairs):
        if tgt == ("t2", "t1"):
            align = ((0, 1), (1, 0))
        else:
            align = tuple((i, i) for i in range(min(len(src), len(tgt))))
        scores = tuple(round(rng.uniform(0.05, 1.0), 4) for _ in range(4))
        entries.append((src, tgt, scores, align, (1.0, 1.0, 1.0)))
    write_phrase_table(entries, path)


def _arpa(data: Path, path: Path) -> None:
    """A bigram ARPA of the French side: unigrams by count (log10), every seen bigram at log10 0.5."""
    lines = [["<s>", *x.split(), "</s>"] for x in (data / "train.tok.fr").read_text().split("\n") if x]
    uni = Counter(w for ws in lines for w in ws[1:])
    total = sum(uni.values()) + 1
    bigrams = sorted({(a, b) for ws in lines for a, b in zip(ws, ws[1:])})
    out = ["\\data\\", f"ngram 1={len(uni) + 2}", f"ngram 2={len(bigrams)}", "", "\\1-grams:",
           f"{math.log10(1 / total):.4f}\t<unk>\t0", "-99\t<s>\t-0.3"]
    out += [f"{math.log10(c / total):.4f}\t{w}\t-0.3" for w, c in sorted(uni.items())]
    out += ["", "\\2-grams:"] + [f"-0.3010\t{a} {b}" for a, b in bigrams] + ["", "\\end\\", ""]
    path.write_text("\n".join(out), encoding="utf-8")


def _models(data: Path, work: Path) -> None:
    from nmt.cli.lm_train import cli_main as lm_train
    from nmt.cli.train import cli_main as nmt_train

    common = ["--optimizer", "adam", "--lr", "0.03", "--batch-size", "16", "--max-updates", "6", "--progress",
              "false", "--threads", "1"]
    assert nmt_train(["--data-dir", str(data), "--out-dir", str(work / "rnn" / "phrase_model"), "--preset", "tiny",
                      *common]) == 0
    assert nmt_train(["--data-dir", str(data), "--out-dir", str(work / "rnnsearch" / "model"), "--arch", "rnnsearch",
                      "--preset", "rnnsearch-tiny", *common]) == 0
    lstm = work / "lm" / "lstm-1x128"
    assert lm_train(["--train", str(data / "train.tok.fr"), "--valid", str(data / "val.tok.fr"), "--arch", "lstm",
                     "--emb-dim", "8", "--hidden-dim", "8", "--out-dir", str(lstm), *common]) == 0
    for name in ("rm+tM-g", "mogrifier"):  # the three LM features: one tiny LSTM under each name
        shutil.copytree(lstm, work / "lm" / name)


def _rerank_lists(work: Path) -> None:
    """rerank/rnnwp.rnnsearch.1/val.nbest.feat.gz by the recipe's chain (smt-decode, then smt-rerank twice)."""
    from smt_features.cli.decode import cli_main as decode
    from smt_features.cli.rerank import cli_main as rerank

    src = work / "smt" / "data" / "val.tok.en"
    one, two = work / "rerank" / "rnnwp.1", work / "rerank" / "rnnwp.rnnsearch.1"
    one.mkdir(parents=True)
    two.mkdir(parents=True)
    assert decode(["--moses-ini", str(work / "rnn" / "rnnwp.tune.1" / "moses.tuned.ini"), "--input", str(src),
                   "--output", str(one / "val.1best"), "--n-best-list", str(one / "val.nbest"), str(NBEST),
                   "--progress", "false"]) == 0
    assert rerank(["--nbest", str(one / "val.nbest"), "--src", str(src), "--output", str(one / "val.nbest.feat.gz"),
                   "--lm", *(f"{n}={work / d}" for n, d in (("LSTM0", "lm/lstm-1x128"), ("RMN0", "lm/rm+tM-g"),
                                                            ("MOG0", "lm/mogrifier"))),
                   "--encdec", f"RNN0={work / 'rnn' / 'phrase_model'}", "--threads", "1"]) == 0
    assert rerank(["--nbest", str(one / "val.nbest.feat.gz"), "--src", str(src), "--output",
                   str(two / "val.nbest.feat.gz"), "--encdec", f"RNNS0={work / 'rnnsearch' / 'model'}",
                   "--threads", "1"]) == 0


def build_tiny_experiment(root: Path) -> Path:
    """The work folder (see the module docstring); built once per test session."""
    if "work" in _BUILT:
        return _BUILT["work"]
    work = root / "work"
    data = work / "smt" / "data"
    data.mkdir(parents=True)
    _corpus(data)
    for sub in ("smt/model", "smt/lm"):
        (work / sub).mkdir(parents=True)
    _table(data, work / "smt" / "model" / "phrase-table.gz")
    _arpa(data, work / "smt" / "lm" / "fr.arpa")
    ini = default_config(str(work / "smt" / "model" / "phrase-table.gz"), str(work / "smt" / "lm" / "fr.arpa"),
                         lm_order=2)
    for tune in ("smt/tune.1", "rnn/rnnwp.tune.1"):
        (work / tune).mkdir(parents=True)
        ini.write(work / tune / "moses.tuned.ini")
    _models(data, work)
    _rerank_lists(work)
    weights = [line for line in (work / "smt" / "tune.1" / "moses.tuned.ini").read_text().split("\n")
               if "= " in line and not line.startswith("UnknownWordPenalty0")]
    weights += [f"{n}= {w}" for n, w in NEURAL_WEIGHTS.items()]
    (work / "rerank" / "allrs.1").mkdir(parents=True)
    (work / "rerank" / "allrs.1" / "weights").write_text("[weight]\n" + "\n".join(weights) + "\n", encoding="utf-8")
    _BUILT["work"] = work
    return work


@contextlib.contextmanager
def serving(system, limits=None, **batching) -> Iterator[str]:
    """The server's application on a free port of 127.0.0.1, run by an event loop in a thread; yields its URL."""
    from aiohttp import web

    from smt_features.serve.app import make_app
    from smt_features.serve.batcher import Batcher
    from smt_features.serve.requests import Limits

    loop = asyncio.new_event_loop()
    state: dict = {}
    ready = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        app = make_app(system, limits or Limits(), Batcher(system.translate_requests, **batching))
        runner = web.AppRunner(app, access_log=None)
        loop.run_until_complete(runner.setup())
        loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", 0).start())
        state["url"] = f"http://127.0.0.1:{runner.addresses[0][1]}"
        ready.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(120), "the test server did not start"
    try:
        yield state["url"]
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(120)


def http(url: str, body: bytes | str | None = None, *, method: str | None = None,
         content_type: str = "application/json") -> tuple[int, bytes, str]:
    """``(status, body, reason)`` of one request (4xx/5xx answers returned, not raised)."""
    import urllib.error
    import urllib.request

    data = body.encode("utf-8") if isinstance(body, str) else body
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            return resp.status, resp.read(), resp.reason
    except urllib.error.HTTPError as err:
        return err.code, err.read(), err.reason
