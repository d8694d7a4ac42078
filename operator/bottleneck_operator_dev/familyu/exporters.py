"""What the exporters show for the labelled Job's pods and nodes, sampled as the data layer reads it.

Per phase (and per pause state) each pod gets one value per signal: the Job's own rates from its
step, plus what the neighbours add to node-level counters. A 5 s truth grid carries those values
with noise; exporters sample it at their scrape instants (jitter, misses, restarts that reset
counters), DCGM fields being averages over dcgm-exporter's collection interval; counters are
integrated and read back with the contract's ``rate()``, gauges with its ``last_over_time``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range
from bottleneck_operator.contract.signals import SIGNALS, Family, Kind
from bottleneck_operator_dev.familyu.scenario import Scenario

FloatArray = npt.NDArray[np.float64]
TICK = 5.0  # seconds of the truth grid

# Signals that are shares of time or of capacity: kept in [0, 1].
RATIOS = frozenset(n for n, s in SIGNALS.items() if s.unit == "ratio")


# --- field sets and exporters -----------------------------------------------------------------

FIELD_SETS: dict[str, frozenset[Family]] = {
    "dev-only": frozenset({Family.DCGM_DEV}),
    "default": frozenset({Family.DCGM_DEV, Family.DCGM_PROF}),
    "custom": frozenset({Family.DCGM_DEV, Family.DCGM_PROF, Family.DCGM_PROF_SM, Family.DCGM_POWER_CLOCKS}),
    "full": frozenset(
        {
            Family.DCGM_DEV,
            Family.DCGM_PROF,
            Family.DCGM_PROF_SM,
            Family.DCGM_PROF_NVLINK,
            Family.DCGM_PROF_PIPES,
            Family.DCGM_POWER_CLOCKS,
        }
    ),
}
_DCGM = frozenset().union(*FIELD_SETS.values())


def draw_families(rng: np.random.Generator, scn: Scenario) -> tuple[str, set[Family]]:
    """Which exporters (and DCGM field set) this cluster runs."""
    fields = str(rng.choice(list(FIELD_SETS), p=[0.2, 0.3, 0.25, 0.25]))
    if not scn.gpu.prof:
        fields = "dev-only"
    fams = set(FIELD_SETS[fields])
    for fam, p in ((Family.CADVISOR, 0.95), (Family.KSM, 0.9), (Family.NODE, 0.95), (Family.SIDECAR, 0.7)):
        if rng.random() < p:
            fams.add(fam)
    if Family.CADVISOR in fams and scn.cpu_limit is not None:
        fams.add(Family.CADVISOR_CFS)  # emitted only for containers with a CPU limit
    if Family.KSM in fams and scn.cpu_limit is None:
        fams.discard(Family.KSM)  # no limit series to read
    if Family.NODE in fams and rng.random() < 0.85:
        fams.add(Family.NODE_PSI)
    if Family.NODE in fams and scn.fabric != "ethernet" and rng.random() < 0.8:
        fams.add(Family.NODE_IB)
    return fields, fams


def signals_for(fams: set[Family], scn: Scenario) -> list[str]:
    names = [n for n, s in SIGNALS.items() if s.family in fams]
    if not scn.nvlink:
        names = [n for n in names if not n.startswith("nvlink_")]
    if scn.cpu_limit is None:
        names = [n for n in names if n != "cpu_limit_cores"]
    if scn.mem_limit is None:
        names = [n for n in names if n != "mem_limit_bytes"]
    return names


def scrape_times(rng: np.random.Generator, t0: float, t1: float, si: float, miss: float) -> FloatArray:
    """Scrape instants: a fixed phase, small jitter, some misses."""
    k = np.arange(math.ceil((t1 - t0) / si) + 1)
    t = t0 + float(rng.uniform(0, si)) + k * si + rng.uniform(-0.03, 0.03, k.size) * si
    t = t[(t <= t1) & (rng.random(k.size) >= miss)]
    return np.asarray(np.round(t, 3), dtype=np.float64)


def counter_samples(
    rng: np.random.Generator, per_tick: FloatArray, idx: npt.NDArray[np.int64], reset_p: float
) -> tuple[FloatArray, int | None]:
    """Counters integrated from per-tick rates, read at the scrape ticks ``idx``.

    Each counter starts at an arbitrary offset (the exporter ran before the window); with
    probability ``reset_p`` the exporter restarts once and its counters start again from zero.

    Returns:
        The sampled values, shape (rows, len(idx)), and the index of the first sample after the
        restart (None without one).
    """
    cum = np.cumsum(per_tick, axis=1) * TICK + rng.uniform(1e3, 1e9, (per_tick.shape[0], 1))
    values = cum[:, idx]
    cut: int | None = None
    if idx.size > 1 and rng.random() < reset_p:
        cut = int(rng.integers(1, idx.size))
        values[:, cut:] = values[:, cut:] - cum[:, idx[cut] - 1 : idx[cut]]
    return values, cut


@dataclass(frozen=True)
class Scraping:
    """How one Job's exporters are scraped and read back.

    Attributes:
        interval: the scrape interval, seconds.
        dcgm_collect: dcgm-exporter's collection interval, seconds.
        step: the window's step, seconds.
        miss: the share of scrapes that fail.
        reset_p: the chance that an exporter restarts once in the window (its counters reset).
    """

    interval: float
    dcgm_collect: float
    step: float
    miss: float
    reset_p: float


def _truth(
    rng: np.random.Generator, names: list[str], states: FloatArray, tick_state: npt.NDArray[np.int64], upper: FloatArray
) -> FloatArray:
    """The per-tick truth: the state's value with multiplicative noise, kept in each unit's range."""
    truth = states[:, tick_state]
    # uniform noise of standard deviation 0.05 (cheaper to draw than a normal, and bounded)
    noisy = np.array([n not in ("node_cpus", "cpu_limit_cores", "mem_limit_bytes", "power_limit_w") for n in names])
    truth[noisy] *= 1.0 + 0.1732 * (rng.random((int(noisy.sum()), truth.shape[1])) - 0.5)
    ratio = np.array([n in RATIOS for n in names])
    truth = np.where(ratio[:, None], np.clip(truth, 0.0, 1.0), truth)
    return np.minimum(truth, upper[:, None])  # power at or below the enforced limit, clocks below the maximum


def _dcgm_fields(block: FloatArray, idx: npt.NDArray[np.int64], collect: float, names: list[str]) -> FloatArray:
    """dcgm-exporter publishes each field's average over its collection interval, held until the next."""
    csum = np.concatenate([np.zeros((block.shape[0], 1)), np.cumsum(block, axis=1)], axis=1)
    width = max(1, round(collect / TICK))
    last_collect = (idx // width) * width
    lo = np.maximum(last_collect - width, 0)
    hi = np.maximum(last_collect, lo + 1)
    vals = (csum[:, hi] - csum[:, lo]) / (hi - lo)
    # gauges read at the collection instant rather than averaged (the limit, the framebuffer, XIDs)
    inst = np.array([n in ("power_limit_w", "fb_used_frac", "xid_code") for n in names])
    out: FloatArray = np.where(inst[:, None], block[:, idx], vals)
    return out


def render_pod(
    rng: np.random.Generator,
    names: list[str],
    states: FloatArray,
    tick_state: npt.NDArray[np.int64],
    t_begin: float,
    at: FloatArray,
    how: Scraping,
    upper: FloatArray,
) -> dict[str, FloatArray]:
    """One pod's signals on the window grid from its per-state values (rows: ``names``)."""
    truth = _truth(rng, names, states, tick_state, upper)
    out: dict[str, FloatArray] = {}
    by_exporter: dict[str, list[int]] = {}
    for r, name in enumerate(names):
        by_exporter.setdefault(SIGNALS[name].family.exporter_name, []).append(r)
    for exp, rows in by_exporter.items():
        ts = scrape_times(rng, t_begin + TICK, float(at[-1]), how.interval, how.miss)
        if ts.size < 2:
            out.update((names[r], np.full(at.size, np.nan)) for r in rows)
            continue
        idx = np.clip(((ts - t_begin) / TICK).astype(np.int64), 0, tick_state.size - 1)
        block = truth[rows]
        row_names = [names[r] for r in rows]
        vals = _dcgm_fields(block, idx, how.dcgm_collect, row_names) if exp == "dcgm" else block[:, idx]
        sampler = Sampler(
            ts, at, range_seconds=rate_range(how.step, how.interval), window=gauge_window(how.step, how.interval)
        )
        counter = np.array([SIGNALS[n].kind is Kind.COUNTER for n in row_names])
        if counter.any():
            cval, _ = counter_samples(rng, block[counter], idx, how.reset_p)
            out.update(zip([n for n, c in zip(row_names, counter, strict=True) if c], sampler.rate(cval), strict=True))
        if (~counter).any():
            gauges = sampler.last(vals[~counter])
            out.update(zip([n for n, c in zip(row_names, counter, strict=True) if not c], gauges, strict=True))
    # counters' ratio signals come back through rate(): keep them in their unit's range
    return {n: (np.clip(v, 0.0, 1.0) if n in RATIOS else np.asarray(v, dtype=np.float64)) for n, v in out.items()}


__all__ = ["Scraping", "counter_samples", "draw_families", "render_pod", "signals_for"]
