"""Training data augmentation: degraded copies of simulated windows (pure: windows in, windows out).

Real clusters lack whole exporter families (no sidecar, no PSI on old kernels, no CPU limit so no
CFS counters, dcgm-exporter's shipped counters files without SM activity, NVLink bytes or pipe
fields, no infiniband collector) and lose samples, and Prometheus's rate() smooths counter-derived
signals over its range. They also differ in what no simulator pins down: scrape intervals, boards'
clocks and their power management, power limits set under TDP, collectives over RDMA that netdev
counters never see, neighbours loading a shared node, counter resets. :func:`degrade` reproduces all
of it on simulated windows, so that the classifier learns to decide from whatever is left, instead of
relying on one signal or one level the next cluster will not have.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from bottleneck_operator.analysis.features.hardware import spec_for
from bottleneck_operator.contract.signals import Family, signals_of
from bottleneck_operator.contract.window import FloatArray, JobWindow, PodWindow

# Probability that a family is missing from a degraded window, roughly how often clusters lack it.
DROP_PROBABILITY: dict[Family, float] = {
    Family.SIDECAR: 0.45,
    Family.NODE_PSI: 0.25,
    Family.CADVISOR_CFS: 0.25,
    Family.KSM: 0.2,
    Family.DCGM_PROF_NVLINK: 0.5,
    Family.DCGM_PROF_SM: 0.4,
    Family.DCGM_PROF: 0.2,
    Family.NODE: 0.1,
    Family.CADVISOR: 0.08,
    # fields a counters file must turn on, and the infiniband collector on clusters without RDMA
    Family.DCGM_PROF_PIPES: 0.6,
    Family.DCGM_POWER_CLOCKS: 0.5,
    Family.NODE_IB: 0.4,
}
_FAMILY_SIGNALS = {f: frozenset(signals_of(f)) for f in Family}
# Signals no feature reads yet, left out of every degraded copy before any draw, so that the copies
# (and the shipped model trained on them) stay what they were before the worlds emitted them: the
# pod's own network bytes, which a retrain that read them cost two recordings (docs/scenarios.md,
# "The pod's own network bytes, and the rule they join by").
UNREAD: frozenset[str] = frozenset(signals_of(Family.SIDECAR_NET))

# Signals the data layer computes with rate() over counters: Prometheus averages them over the rate
# range (max(step + scrape, 4 x scrape), so 2-8 steps), which smooths bursts and ramps up at a
# series' start. Gauges (DCGM fields, memory, limits) are instantaneous samples.
RATE_SIGNALS: frozenset[str] = frozenset(
    {
        "nvlink_total_bps",
        "cpu_cores",
        "fs_read_bps",
        "cpu_throttled_frac",
        "node_cpu_busy_frac",
        "node_cpu_iowait_frac",
        "node_cpu_system_frac",
        "node_disk_read_bps",
        "node_disk_reads_ps",
        "node_disk_busy_frac",
        "node_majfault_ps",
        "node_net_rx_bps",
        "node_net_tx_bps",
        *signals_of(Family.NODE_PSI),
        "sc_psi_cpu_some",
        "sc_psi_io_some",
        "sc_psi_io_full",
        "sc_psi_mem_some",
        "sc_psi_mem_full",
        "sc_cpu_cores",
        "sc_throttled_frac",
        "sc_io_read_bps",
        "sc_majfault_ps",
        "sc_swapin_ps",
        "sc_oom_kills",
        "ib_rx_bps",
        "ib_tx_bps",
    }
)
# Node-wide signals a neighbour on a shared node raises: its CPU, pressure, disk and faults are the node's.
NODE_SHARED: tuple[str, ...] = (
    "node_cpu_busy_frac",
    "node_psi_cpu_some",
    "node_psi_io_some",
    "node_psi_mem_some",
    "node_disk_busy_frac",
    "node_cpu_iowait_frac",
)


def trailing_mean(values: FloatArray, width: int, *, ramp: bool) -> FloatArray:
    """NaN-aware trailing moving average over ``width`` samples, as rate() over a range gives.

    Args:
        values: one series.
        width: samples in the average (1 returns a copy).
        ramp: treat the time before the series as zeros (the ramp-up at a counter's first samples).

    Returns:
        The smoothed series, same length.
    """
    if width <= 1 or len(values) == 0:
        return values.copy()
    pad = np.zeros(width - 1) if ramp else np.full(width - 1, np.nan)
    v = np.concatenate([pad, values])
    valid = ~np.isnan(v)
    csum = np.concatenate([[0.0], np.cumsum(np.where(valid, v, 0.0))])
    cnt = np.concatenate([[0.0], np.cumsum(valid)])
    total = csum[width:] - csum[:-width]
    n = cnt[width:] - cnt[:-width]
    with np.errstate(invalid="ignore", divide="ignore"):
        out = total / n
    out[np.isnan(values)] = np.nan
    return np.asarray(out, dtype=np.float64)


def degrade(window: JobWindow, rng: np.random.Generator) -> JobWindow:
    """A copy of ``window`` with random families removed, rates smoothed, samples lost and the window cropped.

    Args:
        window: a complete window.
        rng: the random source (the caller's seed makes it reproducible).

    Returns:
        A new window; the input is not modified.
    """
    # DEV fields are never dropped: they are the floor every NVIDIA GPU provides.
    dropped: set[str] = set(UNREAD)
    for family, p in DROP_PROBABILITY.items():
        if rng.random() < p:
            dropped |= _FAMILY_SIGNALS[family]
    loss = rng.uniform(0.0, 0.15) if rng.random() < 0.5 else 0.0
    width = int(rng.choice([1, 2, 3, 4, 6, 8])) if rng.random() < 0.8 else 1
    ramp = bool(rng.random() < 0.5)
    t = len(window.timestamps)
    keep_from = 0
    if t > 8 and rng.random() < 0.3:  # a shorter window, as a running job's first passes see
        keep_from = int(rng.integers(0, t // 2))
    world = _World.draw(rng)
    pods = []
    for pod in window.pods:
        varied = _vary_world(pod, world, rng)
        signals: dict[str, FloatArray] = {}
        # Sorted: the random draws must not depend on the order a producer filled the dict in
        # (a set-ordered producer changes it from one interpreter run to the next).
        for name in sorted(varied):
            if name in dropped:
                continue
            v = varied[name]
            if width > 1 and name in RATE_SIGNALS:
                v = trailing_mean(v, width, ramp=ramp)
            if world.hold > 1:
                v = _held(v, world.hold)
            if world.resets and name in RATE_SIGNALS and len(v) > 2:
                v = _reset(v, rng)
            v = np.array(v[keep_from:], dtype=np.float64)
            if loss > 0:
                v[rng.random(len(v)) < loss] = np.nan
            signals[name] = v
        pods.append(replace(pod, signals=signals))
    return replace(
        window,
        start=float(window.timestamps[keep_from]) if t else window.start,
        timestamps=window.timestamps[keep_from:],
        pods=tuple(pods),
    )


@dataclass(frozen=True)
class _World:
    """What differs between real clusters and no simulator pins down, drawn once per degraded window.

    Attributes:
        hold: grid steps each scrape's value is held for (a 60 s scrape on a 30 s grid holds 2).
        board_spread: standard deviation of each pod's boards' clock factor (boards differ).
        clock_jitter: standard deviation of the per-sample clock factor (power management).
        power_cap: the enforced power limit as a share of TDP, None when the limit is not exported.
        rdma: collectives over RDMA: the network's bytes move to the InfiniBand counters.
        neighbour: node-wide load a neighbour adds (0 without one).
        resets: counters reset once (a gap and a spike in the rates).
    """

    hold: int
    board_spread: float
    clock_jitter: float
    power_cap: float | None
    rdma: bool
    neighbour: float
    resets: bool

    @staticmethod
    def draw(rng: np.random.Generator) -> _World:
        return _World(
            hold=int(rng.choice([1, 1, 2, 4])),
            board_spread=float(rng.uniform(0.0, 0.06)),
            clock_jitter=float(rng.uniform(0.0, 0.05)),
            power_cap=float(rng.uniform(0.6, 1.0)) if rng.random() < 0.5 else None,
            rdma=bool(rng.random() < 0.3),
            neighbour=float(rng.uniform(0.0, 0.5)) if rng.random() < 0.25 else 0.0,
            resets=bool(rng.random() < 0.1),
        )


def _vary_world(pod: PodWindow, world: _World, rng: np.random.Generator) -> dict[str, FloatArray]:
    """The pod's signals as another cluster would show them: clocks, power caps, RDMA, neighbours."""
    out = {name: np.array(pod.signals[name], dtype=np.float64) for name in sorted(pod.signals)}
    t = len(next(iter(out.values()))) if out else 0
    if "sm_clock_mhz" in out:
        factor = 1.0 + rng.normal(0.0, world.board_spread) + rng.normal(0.0, world.clock_jitter, t)
        out["sm_clock_mhz"] = out["sm_clock_mhz"] * np.clip(factor, 0.5, 1.2)
    tdp = spec_for(pod.gpu_model).tdp_w
    if world.power_cap is not None and np.isfinite(tdp) and "power_w" in out:
        cap = world.power_cap * tdp
        out["power_limit_w"] = np.full(t, cap)
        out["power_w"] = np.fmin(out["power_w"], cap)
    if world.rdma and "node_net_rx_bps" in out and "node_net_tx_bps" in out:
        out["ib_rx_bps"], out["ib_tx_bps"] = out["node_net_rx_bps"] * 0.98, out["node_net_tx_bps"] * 0.98
        out["node_net_rx_bps"] = out["node_net_rx_bps"] * 0.02
        out["node_net_tx_bps"] = out["node_net_tx_bps"] * 0.02
    if world.neighbour > 0:
        for name in NODE_SHARED:
            if name in out:
                out[name] = np.clip(out[name] + world.neighbour * rng.uniform(0.5, 1.0), 0.0, 1.0)
    return out


def _held(v: FloatArray, hold: int) -> FloatArray:
    """Each ``hold``-th sample held over the next ones, as a slower scrape repeats its value on the grid."""
    idx = (np.arange(len(v)) // hold) * hold
    return np.asarray(v[idx], dtype=np.float64)


def _reset(v: FloatArray, rng: np.random.Generator) -> FloatArray:
    """A counter reset: one sample lost and the next one's rate a spike (a restart's partial interval)."""
    out = v.copy()
    k = int(rng.integers(1, len(v) - 1))
    out[k] = np.nan
    out[k + 1] = out[k + 1] * float(rng.uniform(2.0, 6.0))
    return out


def degrade_pod(pod: PodWindow, drop: Sequence[Family]) -> PodWindow:
    """A pod without the signals of the given families (used by tests and the evaluation)."""
    dropped = frozenset().union(*(_FAMILY_SIGNALS[f] for f in drop)) if drop else frozenset()
    return replace(pod, signals={k: v for k, v in pod.signals.items() if k not in dropped})
