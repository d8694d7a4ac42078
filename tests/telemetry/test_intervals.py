"""The scrape-interval cache the operator's passes share: expiry, "no series" entries, bounded size."""

from __future__ import annotations

from bottleneck_operator.contract.signals import Family
from bottleneck_operator.telemetry.fetch import store
from bottleneck_operator.telemetry.fetch.store import IntervalCache


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_estimates_expire_after_the_ttl() -> None:
    clock = _Clock()
    cache = IntervalCache(ttl=60.0, clock=clock)
    cache.put(Family.DCGM, ("ml", "a-0"), 15.0)
    assert cache.get(Family.DCGM, ("ml", "a-0")) == 15.0
    assert cache.get(Family.CADVISOR, ("ml", "a-0")) is None  # per exporter group
    clock.now += 59.9
    assert cache.get(Family.DCGM, ("ml", "a-0")) == 15.0
    clock.now += 0.2
    assert cache.get(Family.DCGM, ("ml", "a-0")) is None
    assert len(cache) == 0


def test_no_series_is_kept_as_zero() -> None:
    cache = IntervalCache()
    cache.put(Family.SIDECAR, ("ml", "a-0"), 0.0)
    cache.put(Family.SIDECAR, ("ml", "a-1"), -1.0)
    assert cache.get(Family.SIDECAR, ("ml", "a-0")) == 0.0
    assert cache.get(Family.SIDECAR, ("ml", "a-1")) == 0.0
    assert cache.get(Family.SIDECAR, ("ml", "a-2")) is None


def test_size_is_bounded_oldest_first(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(store, "MAX_ENTRIES", 3)
    cache = IntervalCache()
    for i in range(5):
        cache.put(Family.NODE, f"node-{i}", 30.0)
    assert len(cache) == 3
    assert cache.get(Family.NODE, "node-0") is None and cache.get(Family.NODE, "node-1") is None
    cache.put(Family.NODE, "node-2", 15.0)  # refreshed: now the youngest
    cache.put(Family.NODE, "node-5", 30.0)
    assert cache.get(Family.NODE, "node-2") == 15.0 and cache.get(Family.NODE, "node-3") is None
