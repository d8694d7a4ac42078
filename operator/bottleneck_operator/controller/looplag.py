"""How long the operator's event loop is held up, measured from inside: a heartbeat and its lateness.

Everything the operator serves from its event loop (the watch streams, the admission webhook,
``/metrics``, the liveness probe) waits while a callback runs, while a garbage collection or another
thread holds the interpreter lock, and while the process waits for a core. A heartbeat that sleeps
:data:`PERIOD` and notes how late it woke sees all of these alike, and nothing else: a client's
own wait for a core (a probe on a busy machine) is not counted, as it is in a probe's answer times.
A hold-up is seen to within one period (one that starts just after a heartbeat shows a period less).
"""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry, Gauge, Histogram

from bottleneck_operator.aio import stop_task

__all__ = ["PERIOD", "LoopLag"]

# Seconds between heartbeats: fine enough to see a 100 ms hold-up, a few dozen microseconds of work
# each (well under 0.1 % of a core).
PERIOD = 0.02


class LoopLag:
    """The heartbeat and its two series on the operator's registry.

    Args:
        registry: where the histogram and the gauge are registered.
        period: seconds between heartbeats.
    """

    def __init__(self, registry: CollectorRegistry, period: float = PERIOD) -> None:
        self.period = period
        self.longest = 0.0
        self._lag = Histogram(
            "bottleneck_operator_event_loop_lag_seconds",
            "How late a heartbeat on the operator's event loop ran: the wait the webhook, the watches and "
            "/metrics saw then.",
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
            registry=registry,
        )
        self._longest = Gauge(
            "bottleneck_operator_event_loop_lag_max_seconds",
            "The longest event-loop lag since the operator started.",
            registry=registry,
        )
        self._task: asyncio.Task[None] | None = None

    def observe(self, lag: float) -> None:
        """Record one heartbeat's lateness (seconds)."""
        self._lag.observe(lag)
        if lag > self.longest:
            self.longest = lag
            self._longest.set(lag)

    def start(self) -> None:
        """Start the heartbeat on the running loop (idempotent)."""
        if self._task is None:
            self._task = asyncio.create_task(self._beat(), name="bottleneck event-loop heartbeat")

    async def stop(self) -> None:
        """Stop the heartbeat (idempotent)."""
        task, self._task = self._task, None
        await stop_task(task)

    async def _beat(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            due = loop.time() + self.period
            await asyncio.sleep(self.period)
            self.observe(max(0.0, loop.time() - due))
