"""Stopping background tasks without losing a cancellation meant for the caller.

``task.cancel()`` followed by ``await task`` under ``suppress(CancelledError)`` also swallows a
cancellation aimed at the awaiting task itself, which then runs on as if never told to stop: an
operator that never finishes shutting down, an elector that keeps its Lease. Python 3.11's
``asyncio.wait_for`` has the same flaw when its inner call finishes in the same turn of the loop as
the cancellation (fixed in 3.12); ``asyncio.timeout`` does not, and is what this package uses.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

logger = logging.getLogger("bottleneck_operator")


async def stop_task(task: asyncio.Task[Any] | None) -> None:
    """Cancel ``task`` and wait until it has finished; its own failure is logged, never raised.

    A cancellation of the caller while it waits propagates (``asyncio.wait`` does not swallow it).
    """
    if task is None:
        return
    task.cancel()
    await asyncio.wait({task})
    error = None if task.cancelled() else task.exception()
    if error is not None:
        logger.warning("%s failed as it stopped: %r", task.get_name(), error)
