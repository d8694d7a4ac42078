"""Scrape-interval estimates kept from one pass to the next.

Each pass needs every pod's (and node's) scrape interval per exporter: it sets the rate() ranges
and gauge windows of the signal queries. Estimating it reads each exporter's densest series (one
per GPU for dcgm-exporter) several times over, a good part of Prometheus's work in a pass. An
exporter's interval is configuration and does not change from one minute to the next, so the
operator, which analyses the same pods every interval, estimates a pod once and reuses the figure
for :data:`DEFAULT_TTL` seconds.

Only estimates that can be trusted are kept: the unit (pod or node) already existed at the start of
the window the estimate came from, so the estimate saw whole intervals (a pod born inside the window
gives an upper bound only). "No series for this exporter" is kept the same way, so a pod without a
collector sidecar is not probed again on every pass.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from bottleneck_operator.contract.signals import Family

DEFAULT_TTL = 600.0
# Kept entries at most; beyond it the oldest go first (a cluster's churn cannot grow it unbounded).
MAX_ENTRIES = 100_000


class IntervalCache:
    """Per (exporter group, pod or node) scrape interval, with an expiry; safe to share between threads.

    Args:
        ttl: seconds an estimate is reused.
        clock: monotonic seconds (tests pass their own).
    """

    def __init__(self, ttl: float = DEFAULT_TTL, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self._clock = clock
        # (group, unit) -> (seconds, or 0.0 for "no series"; expiry time); insertion order = age
        self._entries: dict[tuple[Family, object], tuple[float, float]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, group: Family, unit: object) -> float | None:
        """The kept estimate (0.0: the unit has no series of this exporter), or None when unknown or expired."""
        with self._lock:
            found = self._entries.get((group, unit))
            if found is None:
                return None
            if found[1] <= self._clock():
                del self._entries[(group, unit)]
                return None
            return found[0]

    def put(self, group: Family, unit: object, seconds: float) -> None:
        """Keep an estimate (0.0 or less: no series) for :attr:`ttl` seconds."""
        key = (group, unit)
        with self._lock:
            self._entries.pop(key, None)
            self._entries[key] = (max(0.0, seconds), self._clock() + self.ttl)
            while len(self._entries) > MAX_ENTRIES:
                del self._entries[next(iter(self._entries))]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
