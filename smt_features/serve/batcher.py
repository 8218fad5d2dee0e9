"""Requests that arrive together are translated together (:class:`Batcher`).

One queue: a batch starts with the first waiting request and takes every request that arrives within the
collection window (or is waiting already), up to ``max_sentences`` sentences (a larger request is a batch
of its own); it runs in a worker thread as one
call of the translate function (:meth:`smt_features.serve.api.System.translate_requests`: its sentences go to the
decoder's worker processes together and its n-best lists to the neural scorers in one batch). ``max_batches``
batches run at once, so that the decoder's workers start on the next batch while the previous one is being
scored; while every slot is busy, requests wait in the queue and the next batch takes them all.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Callable, Sequence
from typing import Any

log = logging.getLogger(__name__)


class Batcher:
    """``await batcher.submit(request)`` → that request's result from ``translate([requests…])``."""

    def __init__(self, translate: Callable[[Sequence[Any]], list[Any]], *, window_s: float = 0.005,
                 max_sentences: int = 64, max_batches: int = 2) -> None:
        self.translate, self.window_s = translate, window_s
        self.max_sentences, self.max_batches = max(1, max_sentences), max(1, max_batches)
        self._queue: asyncio.Queue | None = None
        self._slots: asyncio.Semaphore | None = None
        self._executor = concurrent.futures.ThreadPoolExecutor(self.max_batches, thread_name_prefix="translate")
        self._loop_task: asyncio.Task | None = None
        self._running: set[asyncio.Future] = set()
        self.batches = 0
        self.sentences = 0

    def start(self) -> None:
        """Start the collecting loop (in the running event loop)."""
        self._queue = asyncio.Queue()
        self._slots = asyncio.Semaphore(self.max_batches)
        self._loop_task = asyncio.get_running_loop().create_task(self._collect())

    async def submit(self, request: Any) -> Any:
        """Queue ``request`` (it has ``.sentences``) and wait for its result."""
        assert self._queue is not None, "Batcher.start() first"
        done: asyncio.Future = asyncio.get_running_loop().create_future()
        await self._queue.put((request, done))
        return await done

    async def _collect(self) -> None:
        assert self._queue is not None and self._slots is not None
        loop = asyncio.get_running_loop()
        carry = None  # a request that would have made the last batch too large: the next batch's first
        while True:
            await self._slots.acquire()
            first, carry = (carry, None) if carry is not None else (await self._queue.get(), None)
            batch, size = [first], len(first[0].sentences)
            deadline = loop.time() + self.window_s
            while size < self.max_sentences:
                try:
                    item = self._queue.get_nowait()
                except asyncio.QueueEmpty:
                    left = deadline - loop.time()
                    if left <= 0:
                        break
                    try:
                        item = await asyncio.wait_for(self._queue.get(), left)
                    except TimeoutError:
                        break
                if size + len(item[0].sentences) > self.max_sentences:
                    carry = item
                    break
                batch.append(item)
                size += len(item[0].sentences)
            fut = loop.run_in_executor(self._executor, self.translate, [r for r, _ in batch])
            self._running.add(fut)
            fut.add_done_callback(lambda f, b=batch: self._finish(f, b))
            self.batches += 1
            self.sentences += size

    def _finish(self, fut: asyncio.Future, batch: list) -> None:
        assert self._slots is not None
        self._running.discard(fut)
        self._slots.release()
        if fut.cancelled():
            results: Any = None
            error: BaseException | None = asyncio.CancelledError()
        else:
            error = fut.exception()
            results = None if error is not None else fut.result()
        for k, (_, done) in enumerate(batch):
            if done.done():
                continue
            if error is not None:
                done.set_exception(error)
            else:
                done.set_result(results[k])

    async def close(self) -> None:
        """Finish the batches that are running, stop collecting, release the worker threads."""
        if self._running:
            await asyncio.gather(*self._running, return_exceptions=True)
        if self._loop_task is not None:
            self._loop_task.cancel()
            try:
                await self._loop_task
            except asyncio.CancelledError:
                pass
        self._executor.shutdown(wait=True)
