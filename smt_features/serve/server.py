"""``smt-serve``'s run: its options (:class:`ServeConfig`), loading the system, serving until SIGTERM or SIGINT.

The system is loaded (and every model checked) before the port is opened: a file that cannot be loaded stops the
server at start (``smt-serve: FILE: reason``, exit 2). When ready, one line on stderr says where it listens
(``smt-serve: serving SYSTEM on http://HOST:PORT/``). On SIGTERM (or SIGINT) it stops accepting connections,
finishes the requests in flight, those whose body is still arriving too (at most ``--shutdown-timeout`` seconds;
aiohttp's own shutdown would stop reading them), stops the decoder's workers and exits 0.
"""
from __future__ import annotations

import asyncio
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from nmt.core import config as C
from nmt.core.errors import UsageError
from nmt.core.paths import CHECKPOINT_HELP
from smt_features.serve.api import System
from smt_features.serve.layout import SystemFiles, from_work
from smt_features.serve.requests import Limits


@dataclass
class ServeConfig:
    work: str = C.field("", help="an experiment's work folder (recipes/experiment/run.sh --work): serve one of "
                                 "its systems (or give --moses-ini and the other files)")
    system: str = C.field("Baseline", help="with --work: the row, e.g. Baseline, +RNN, +all, +all+RNNsearch")
    run: int = C.field(1, help="with --work: the MERT run (seed) whose tuned weights are served")
    optimizer: str = C.field("mert", help="with --work: the rerank weights tuned by mert, kbmira or pro")
    rnn_model: str = C.field("", help="with --work: RNN0's encoder–decoder, if not WORK/rnn/phrase_model "
                                      "(experiment.sh --encdec)")
    rnnsearch: str = C.field("", help="with --work: RNNS0's model, if not WORK/rnnsearch/model (experiment.sh "
                                      "--rnnsearch)")
    moses_ini: str = C.field("", help="without --work: the tuned moses.ini")
    rerank_weights: str = C.field("", help="without --work: smt-rerank's tuned weights (a reranked system)")
    lm: list[str] = C.field([], help="without --work: neural LM features NAME=DIR ... (smt-rerank --lm)")
    kenlm: list[str] = C.field([], help="without --work: KenLM features NAME=PATH ... (smt-rerank --kenlm)")
    encdec: list[str] = C.field([], help="without --work: encoder–decoder features NAME=DIR ... (smt-rerank "
                                         "--encdec); an attention model among them (RNNsearch) gives the attention")
    nbest_size: int = C.field(0, help="the n-best size the rerank weights were tuned on (with --work: read from "
                                      "the rerank lists when 0)")
    src_lang: str = C.field("en", help="without --work: the source language (Moses tokenizer)")
    tgt_lang: str = C.field("fr", help="without --work: the target language (Moses detokenizer)")
    lowercase: bool = C.field(False, help="without --work: the system's text was lowercased")
    truecase_model: list[str] = C.field([], help="without --work: LANG=FILE truecase models (nmt-prepare "
                                                 "--truecase), e.g. en=truecase-model.en fr=truecase-model.fr")
    checkpoint: str = C.field("auto", help=CHECKPOINT_HELP)
    host: str = C.field("127.0.0.1", help="address to listen on")
    port: int = C.field(8080, help="port (mosesserver's default; 0 = any free port, printed when ready)")
    threads: int = C.field(2, help="decoder worker processes (forked after loading)")
    torch_threads: int = C.field(1, help="torch threads of the neural scorers (1: the decoder's workers take the "
                                         "other cores)")
    lm_max_tokens: int = C.field(256, help="padded tokens per forward pass of a neural LM (small passes are "
                                           "cheaper per token on a CPU)")
    prefix_tree: bool = C.field(True, help="the neural features read each sentence's n-best list over its prefix "
                                           "tree, each shared prefix once (smt-rerank --prefix-tree; false: every "
                                           "hypothesis whole, as smt-rerank's default)")
    word_alignment: bool = C.field(True, help="read the phrase table's word alignments at start (for traces)")
    batch_window_ms: float = C.field(5.0, help="collect requests this long into one batch")
    max_batch_sentences: int = C.field(64, help="sentences in one batch at most")
    max_batches: int = C.field(2, help="batches translated at once")
    max_sentences: int = C.field(64, help="sentences in one request at most")
    max_chars: int = C.field(2000, help="characters in one sentence at most")
    max_words: int = C.field(200, help="words in one sentence at most")
    max_nbest: int = C.field(100, help="n-best size a request may ask (a reranked system: at most its own)")
    max_body: int = C.field(1 << 20, help="bytes in a request body at most")
    shutdown_timeout: float = C.field(60.0, help="seconds given to the requests in flight at SIGTERM")
    verbose: bool = C.field(False, help="log INFO lines")


def system_files(cfg: ServeConfig) -> SystemFiles:
    """The files of the system ``cfg`` names (a work folder's row, or explicit files)."""
    if cfg.work:
        explicit = [f for f in ("moses_ini", "rerank_weights", "lm", "kenlm", "encdec", "truecase_model")
                    if getattr(cfg, f)]
        if explicit:
            raise UsageError(f"--work names the system's files; do not also give --{explicit[0].replace('_', '-')}")
        return from_work(cfg.work, cfg.system, cfg.run, optimizer=cfg.optimizer, encdec=cfg.rnn_model or None,
                         rnnsearch=cfg.rnnsearch or None, nbest_size=cfg.nbest_size or None)
    if not cfg.moses_ini:
        raise UsageError("give --work DIR (an experiment's work folder) or --moses-ini FILE")
    truecase = {}
    for item in cfg.truecase_model:
        lang, eq, path = item.partition("=")
        if not eq or not lang or not path:
            raise UsageError(f"--truecase-model: expected LANG=FILE, got {item!r}")
        truecase[lang] = Path(path)
    return SystemFiles(moses_ini=Path(cfg.moses_ini), name=Path(cfg.moses_ini).parent.name or "system",
                       src_lang=cfg.src_lang, tgt_lang=cfg.tgt_lang, lowercase=cfg.lowercase, truecase=truecase,
                       lm=list(cfg.lm), kenlm=list(cfg.kenlm), encdec=list(cfg.encdec),
                       rerank_weights=Path(cfg.rerank_weights) if cfg.rerank_weights else None,
                       nbest_size=cfg.nbest_size, checkpoint=cfg.checkpoint)


def limits_of(cfg: ServeConfig, system: System) -> Limits:
    for name in ("max_sentences", "max_chars", "max_words", "max_nbest", "max_body", "max_batch_sentences",
                 "max_batches", "threads"):
        if getattr(cfg, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be >= 1")
    max_nbest = min(cfg.max_nbest, system.max_nbest) if system.max_nbest else cfg.max_nbest
    return Limits(cfg.max_sentences, cfg.max_chars, cfg.max_words, max_nbest, cfg.max_body)


def run(cfg: ServeConfig) -> int:
    """Load the system, serve it until SIGTERM / SIGINT, return the exit status (0)."""
    files = system_files(cfg)
    system = System.load(files=files, threads=cfg.threads, word_alignment=cfg.word_alignment,
                         torch_threads=cfg.torch_threads, lm_max_tokens=cfg.lm_max_tokens,
                         prefix_tree=cfg.prefix_tree)
    try:
        return asyncio.run(_serve(cfg, system, limits_of(cfg, system)))
    finally:
        system.close()


async def _serve(cfg: ServeConfig, system: System, limits: Limits) -> int:
    from aiohttp import web

    from smt_features.serve.app import STATS, make_app
    from smt_features.serve.batcher import Batcher

    batcher = Batcher(system.translate_requests, window_s=cfg.batch_window_ms / 1000.0,
                      max_sentences=cfg.max_batch_sentences, max_batches=cfg.max_batches)
    app = make_app(system, limits, batcher)
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=cfg.shutdown_timeout, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, cfg.host, cfg.port)
        await site.start()
    except OSError as err:
        await runner.cleanup()
        raise UsageError(f"cannot listen on {cfg.host}:{cfg.port}: {err.strerror or err}") from None
    host, port = runner.addresses[0][:2]
    loop = asyncio.get_running_loop()
    stop: asyncio.Future = loop.create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda s=sig: stop.done() or stop.set_result(s.name))
    print(f"smt-serve: serving {system.name} on http://{host}:{port}/ ({system.decoder.search_kind} search, "
          f"{system.pool.threads} decoder process(es), {len(system.specs)} neural feature(s)"
          f"{', attention ' + system.attention_feature if system.attention_feature else ''})",
          file=sys.stderr, flush=True)
    name = await stop
    for site in list(runner.sites):  # no new connections; the open ones go on (a body still arriving too)
        await site.stop()
    stats = app[STATS]
    print(f"smt-serve: {name}: no new connections; finishing {stats['in_flight']} request(s) in flight",
          file=sys.stderr, flush=True)
    deadline = loop.time() + cfg.shutdown_timeout
    while stats["in_flight"] and loop.time() < deadline:
        await asyncio.sleep(0.02)
    await runner.cleanup()  # closes idle connections, then cancels what is left
    print(f"smt-serve: stopped ({app[STATS]['sentences']} sentence(s) translated)", file=sys.stderr, flush=True)
    return 0
