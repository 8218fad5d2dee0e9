"""The server's routes (:func:`make_app`, aiohttp):

* ``POST /translate`` — JSON ``{"text": "…" | ["…", …], "nbest": 1, "trace": false, "scores": false,
  "attention": false, "distinct": false}`` → ``{"system", "translations": [one per text], "seconds"}``;
* ``POST /RPC2`` — Moses's XML-RPC ``translate`` (:mod:`smt_features.serve.moses_rpc`);
* ``GET /health`` — ``{"status": "ok", …}``; ``GET /info`` — the system (:mod:`smt_features.serve.info`) and
  the limits;
* ``GET /`` and ``GET /static/NAME`` — the web page (a fixed set of files: a request never names a path).

A refused request gets a 4xx status and a message (JSON ``{"error", "status"}``, or an XML-RPC fault on
``/RPC2``); the server goes on. Translations go through the :class:`~smt_features.serve.batcher.Batcher`.
"""
from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from aiohttp import web

from smt_features.serve import moses_rpc
from smt_features.serve.api import System
from smt_features.serve.batcher import Batcher
from smt_features.serve.requests import Limits, RequestError, parse_json_request

log = logging.getLogger(__name__)
STATIC = Path(__file__).parent / "static"
PAGES = {"index.html": "text/html", "app.js": "text/javascript", "style.css": "text/css"}
SYSTEM, BATCHER, LIMITS, STATS = (web.AppKey(n, t) for n, t in (("system", System), ("batcher", Batcher),
                                                                 ("limits", Limits), ("stats", dict)))


def _finite(value: Any) -> Any:
    """JSON has no infinities: a non-finite score becomes null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def json_response(data: Any, status: int = 200) -> web.Response:
    return web.Response(text=json.dumps(_finite(data), ensure_ascii=False), status=status,
                        content_type="application/json")


def json_error(status: int, message: str) -> web.Response:
    return json_response({"error": message, "status": status}, status)


async def read_body(request: web.Request, limits: Limits) -> bytes:
    """The request body, refused (413) past ``limits.max_body`` bytes."""
    if request.content_length is not None and request.content_length > limits.max_body:
        raise RequestError(413, f"the body has {request.content_length} bytes; the limit is {limits.max_body}")
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise RequestError(413, f"the body is over the limit of {limits.max_body} bytes") from None


async def translate(request: web.Request) -> web.Response:
    app = request.app
    t0 = time.perf_counter()
    try:
        req, _ = parse_json_request(await read_body(request, app[LIMITS]), app[LIMITS])
    except RequestError as err:
        return json_error(err.status, str(err))
    results = await app[BATCHER].submit(req)
    app[STATS]["sentences"] += len(results)
    return json_response({"system": app[SYSTEM].name, "translations": [r.to_dict() for r in results],
                          "seconds": round(time.perf_counter() - t0, 4)})


async def rpc2(request: web.Request) -> web.Response:
    app = request.app
    try:
        req, flags = moses_rpc.parse_call(await read_body(request, app[LIMITS]), app[LIMITS])
    except moses_rpc.RpcFault as err:
        return _rpc_fault(err.status, err.code, str(err))
    except RequestError as err:
        return _rpc_fault(err.status, moses_rpc.FAULT_LIMIT_EXCEEDED if err.status == 413 else moses_rpc.FAULT_PARSE,
                          str(err))
    results = await app[BATCHER].submit(req)
    app[STATS]["sentences"] += len(results)
    return web.Response(body=moses_rpc.answer(results[0], flags), content_type="text/xml", charset="utf-8")


def _rpc_fault(status: int, code: int, message: str) -> web.Response:
    reason = "".join(c if 32 <= ord(c) < 127 else "?" for c in message)[:200]  # the HTTP reason phrase: ASCII
    return web.Response(body=moses_rpc.fault(code, message), status=status, reason=reason, content_type="text/xml",
                        charset="utf-8")


async def health(request: web.Request) -> web.Response:
    app = request.app
    stats = app[STATS]
    return json_response({"status": "ok", "system": app[SYSTEM].name,
                          "uptime_s": round(time.time() - stats["started"], 1), "sentences": stats["sentences"],
                          "batches": app[BATCHER].batches, "in_flight": stats["in_flight"]})


async def info(request: web.Request) -> web.Response:
    app = request.app
    data = await asyncio.get_running_loop().run_in_executor(None, app[SYSTEM].info)  # hashes files once
    data["limits"] = asdict(app[LIMITS])
    data["batching"] = {"window_s": app[BATCHER].window_s, "max_sentences": app[BATCHER].max_sentences,
                        "max_batches": app[BATCHER].max_batches}
    return json_response(data)


async def page(request: web.Request) -> web.Response:
    name = request.match_info.get("name", "index.html")
    if name not in PAGES:  # a fixed set: never a path taken from the request
        return json_error(404, f"no page {name!r}")
    return web.Response(body=(STATIC / name).read_bytes(), content_type=PAGES[name], charset="utf-8")


@web.middleware
async def errors_as_json(request: web.Request, handler: Any) -> web.StreamResponse:
    """aiohttp's own refusals (unknown path, wrong method, body too large) as JSON; a bug as a 500 with its
    message, logged; the server goes on."""
    stats = request.app[STATS]
    stats["in_flight"] += 1
    try:
        return await handler(request)
    except web.HTTPException as err:
        if err.status < 400:
            raise
        if request.path == "/RPC2":
            return _rpc_fault(err.status, moses_rpc.FAULT_PARSE, err.reason)
        return json_error(err.status, f"{err.reason}: {request.method} {request.path}")
    except Exception as err:  # noqa: BLE001 - one request's failure must not stop the server
        log.exception("%s %s failed", request.method, request.path)
        if request.path == "/RPC2":
            return _rpc_fault(500, -500, f"internal error: {type(err).__name__}: {err}")
        return json_error(500, f"internal error: {type(err).__name__}: {err}")
    finally:
        stats["in_flight"] -= 1


def make_app(system: System, limits: Limits, batcher: Batcher) -> web.Application:
    """The application; the batcher starts with it and finishes its batches when it shuts down."""
    app = web.Application(middlewares=[errors_as_json], client_max_size=limits.max_body)
    app[SYSTEM], app[LIMITS], app[BATCHER] = system, limits, batcher
    app[STATS] = {"started": time.time(), "sentences": 0, "in_flight": 0}
    app.router.add_post("/translate", translate)
    app.router.add_post("/RPC2", rpc2)
    app.router.add_get("/health", health)
    app.router.add_get("/info", info)
    app.router.add_get("/", page)
    app.router.add_get("/static/{name}", page)

    async def start(_: web.Application) -> None:
        batcher.start()

    async def stop(_: web.Application) -> None:
        await batcher.close()

    app.on_startup.append(start)
    app.on_cleanup.append(stop)
    return app
