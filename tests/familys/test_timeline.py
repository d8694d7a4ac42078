"""The event timeline and the label read off it, on hand-built costs."""

from __future__ import annotations

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familys.exporters import Track, counter, scrapes
from bottleneck_operator_dev.familys.label import label_of
from bottleneck_operator_dev.familys.timeline import STAGES, TICK, Costs, Events, PodCosts, paint, simulate

K = 60


def _pod(workers: int = 4, **means: float) -> PodCosts:
    base = dict.fromkeys(("read", "worker_stall", "decode", "h2d", "trainer_stall", "compute", "hbm", "optimizer"), 0.0)
    base.update(means)
    return PodCosts(**{k: np.full(K, v) for k, v in base.items()}, workers=workers, depth=2 * workers)


def _costs(*pods: PodCosts, collective: float = 0.0, overlap: bool = False) -> Costs:
    return Costs(pods, np.full(K, collective), overlap, 0.25, 15)


def test_removing_the_binding_stage_saves_most() -> None:
    # four workers each reading 0.8 s per batch: 0.2 s per step, against 0.1 s of GPU work
    costs = _costs(_pod(read=0.8, decode=0.2, compute=0.08, hbm=0.02))
    lab = label_of(costs)
    assert lab.stage == "read" and lab.bottleneck is Bottleneck.IO
    base = simulate(costs).wall
    walls = {s: simulate(costs, s).wall for s in STAGES}
    assert min(walls, key=lambda s: walls[s]) == "read" and walls["read"] < base


def test_the_prefetch_queue_hides_a_slower_batch_than_the_step() -> None:
    # each batch takes 0.3 s to decode, longer than a 0.1 s step, but eight workers make 0.0375 s a batch
    costs = _costs(_pod(workers=8, decode=0.3, compute=0.1))
    lab = label_of(costs)
    assert lab.bottleneck is Bottleneck.GPU and lab.savings["decode"] < 0.01
    steps = simulate(costs).wall / (K - 15)
    assert abs(steps - 0.1) < 1e-6


def test_overlap_hides_the_collective_behind_backward() -> None:
    pods = (_pod(compute=0.3), _pod(compute=0.3))
    # 0.2 s of all-reduce: all of it exposed after backward, or mostly under the 0.2 s of backward
    exposed = label_of(_costs(*pods, collective=0.2, overlap=False))
    hidden = label_of(_costs(*pods, collective=0.2, overlap=True))
    assert exposed.stage == hidden.stage == "compute"
    assert abs(exposed.savings["collective"] - 0.2 / 0.5) < 1e-6
    assert hidden.savings["collective"] < 0.5 * exposed.savings["collective"]
    # an all-reduce longer than the compute binds either way: removing compute does not shorten it
    slow = label_of(_costs(*pods, collective=0.4, overlap=True))
    assert slow.stage == "collective" and slow.bottleneck is Bottleneck.INTERCONNECT


def test_a_slow_pod_makes_the_others_wait() -> None:
    fast, slow = _pod(compute=0.1), _pod(compute=0.15)
    assert abs(simulate(_costs(fast, slow, collective=0.01)).wall / (K - 15) - 0.16) < 1e-6


def test_memory_stages_are_memory() -> None:
    hbm = label_of(_costs(_pod(compute=0.05, hbm=0.12, optimizer=0.02)))
    host = label_of(_costs(_pod(compute=0.05, trainer_stall=0.1)))
    assert hbm.stage == "hbm" and host.stage == "host_stall"
    assert hbm.bottleneck is host.bottleneck is Bottleneck.MEMORY


def test_paint_keeps_every_interval_exactly() -> None:
    ev = Events()
    for s, e in ((0.013, 0.021), (0.5, 1.234), (0.9, 1.1)):
        ev.add("read", s, e)
    seg = paint(ev, 0.0, 2.0)
    assert abs(seg.channels["read"].sum() * TICK - (0.008 + 0.734 + 0.2)) < 1e-9
    assert seg.channels["read"].max() <= 2.0 + 1e-12


def test_counters_monotone_between_resets() -> None:
    rng = np.random.default_rng(0)
    n = round(10.0 / TICK)
    seg_rates = {"cpu": np.abs(rng.normal(3.0, 1.0, n))}
    starts = np.arange(-1000.0, 3000.0, 10.0)
    track = Track(starts, np.zeros(starts.size, dtype=np.int64), [seg_rates])
    at = 1000.0 + 30.0 * np.arange(40)
    for _ in range(10):
        sc = scrapes(rng, float(at[0]), at, 30.0, 15.0, misses=0.03, resets=1.0)
        v = counter(track, "cpu", sc, 1e6)
        drops = np.flatnonzero(np.diff(v) < 0)
        assert sc.reset_at is not None and drops.size <= 1
        if drops.size:
            assert sc.times[drops[0]] <= sc.reset_at < sc.times[drops[0] + 1]
        rate = sc.sampler.rate(v)
        ok = np.isfinite(rate)
        # rate() loses what a restarted counter counted before its first scrape, never more
        assert ok.mean() > 0.8 and abs(np.median(rate[ok]) - 3.0) < 0.1 and (rate[ok] < 3.3).all()
