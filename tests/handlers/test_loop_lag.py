"""The event-loop heartbeat: a hold-up of the loop shows in the operator's own /metrics, read over HTTP."""

from __future__ import annotations

import asyncio
import time

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from bottleneck_operator.controller.metrics import OperatorMetrics
from bottleneck_operator_dev.simulation.localprom import free_port

HELD = 0.3  # seconds the loop is held up by a callback that blocks


async def _scrape(port: int) -> dict[str, float]:
    async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}/metrics") as resp:
        assert resp.status == 200
        text = await resp.text()
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if family.name.startswith("bottleneck_operator_event_loop_lag"):
            for s in family.samples:
                values[s.name + (f"{{le={s.labels['le']}}}" if "le" in s.labels else "")] = s.value
    return values


async def test_a_blocked_loop_shows_as_lag_in_metrics() -> None:
    metrics = OperatorMetrics()
    port = free_port()
    await metrics.serve(port, host="127.0.0.1")
    try:
        await asyncio.sleep(0.1)  # a few heartbeats on a free loop
        before = await _scrape(port)
        assert before["bottleneck_operator_event_loop_lag_seconds_count"] >= 1
        time.sleep(HELD)  # holds the loop, as a long callback would
        await asyncio.sleep(0.1)
        after = await _scrape(port)
    finally:
        await metrics.stop()
    # The heartbeat sees a hold-up to within one period.
    assert after["bottleneck_operator_event_loop_lag_max_seconds"] >= HELD - metrics.loop_lag.period
    assert (
        after["bottleneck_operator_event_loop_lag_max_seconds"]
        > before["bottleneck_operator_event_loop_lag_max_seconds"]
    )
    slow = (
        after["bottleneck_operator_event_loop_lag_seconds_count"]
        - after["bottleneck_operator_event_loop_lag_seconds_bucket{le=0.25}"]
    )
    assert slow >= 1  # the one late heartbeat is counted past the 250 ms bucket


async def test_the_heartbeat_stops_with_the_server() -> None:
    metrics = OperatorMetrics()
    await metrics.serve(free_port(), host="127.0.0.1")
    await asyncio.sleep(0.1)
    await metrics.stop()
    await metrics.stop()  # idempotent
    beats = metrics.loop_lag.longest, _count(metrics)
    await asyncio.sleep(0.1)
    assert (metrics.loop_lag.longest, _count(metrics)) == beats
    assert not [t for t in asyncio.all_tasks() if t.get_name() == "bottleneck event-loop heartbeat"]


def test_no_heartbeat_without_a_metrics_port() -> None:
    async def run() -> float:
        metrics = OperatorMetrics()
        await metrics.serve(0)
        await asyncio.sleep(0.1)
        count = _count(metrics)
        await metrics.stop()
        return count

    assert asyncio.run(run()) == 0


def _count(metrics: OperatorMetrics) -> float:
    for family in text_string_to_metric_families(metrics.render().decode()):
        if family.name == "bottleneck_operator_event_loop_lag_seconds":
            return next(s.value for s in family.samples if s.name.endswith("_count"))
    raise AssertionError("the lag histogram is not exported")
