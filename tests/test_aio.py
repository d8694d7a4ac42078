"""Stopping a background task: the caller's own cancellation is never swallowed, the task's failure is logged."""

from __future__ import annotations

import asyncio

import pytest

from bottleneck_operator.aio import stop_task


def test_a_caller_cancelled_while_it_stops_a_task_is_cancelled_too() -> None:
    async def scenario() -> tuple[bool, bool]:
        release = asyncio.Event()

        async def slow_to_stop() -> None:
            try:
                await asyncio.Event().wait()
            finally:
                await release.wait()  # cleanup that takes a while

        inner = asyncio.create_task(slow_to_stop())
        await asyncio.sleep(0)
        outer = asyncio.create_task(stop_task(inner))
        await asyncio.sleep(0.01)  # outer now waits for inner's cleanup
        outer.cancel()
        await asyncio.wait({outer}, timeout=5)
        release.set()
        await asyncio.wait({inner}, timeout=5)
        return outer.cancelled(), inner.cancelled()

    assert asyncio.run(scenario()) == (True, True)


def test_a_task_that_fails_as_it_stops_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> None:
        async def fails_on_cancel() -> None:
            try:
                await asyncio.Event().wait()
            finally:
                raise RuntimeError("could not flush")

        task = asyncio.create_task(fails_on_cancel(), name="flusher")
        await asyncio.sleep(0)
        await stop_task(task)
        await stop_task(None)  # nothing to stop

    asyncio.run(scenario())
    assert "flusher failed as it stopped" in caplog.text and "could not flush" in caplog.text
