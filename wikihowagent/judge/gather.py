"""Running coroutines together: `gather_cancelling` (the first failure cancels the rest) and `gather_bounded` (at
most `limit` at a time). The judge's and the post-test learner's calls of `evaluate`, `compare` and
`judge-check` go through them."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from typing import Any


async def gather_cancelling(coros: Iterable[Any]) -> None:
    """Run the coroutines concurrently; the first failure (or a cancellation) cancels and awaits the rest,
    so no task is left running."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        await asyncio.gather(*tasks)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def gather_bounded(coros: Iterable[Awaitable[None]], limit: int) -> None:
    """Run the coroutines concurrently, at most `limit` at a time (a model's slots: unbounded, every call would
    queue at the server and each call's latency_s would count the wait)."""
    gate = asyncio.Semaphore(limit)

    async def gated(job: Awaitable[None]) -> None:
        started = False
        try:
            async with gate:
                started = True
                await job
        finally:
            close = getattr(job, "close", None)
            if not started and close is not None:  # cancelled (Ctrl-C, an error) before its turn: never run
                close()

    await asyncio.gather(*(gated(c) for c in coros))
