"""How the cluster's exporters turn the pods' true signals into what a window holds.

Real stacks differ: dcgm-exporter ships DEV-only, default or full field sets and collects every 30 s
by default (a faster scrape repeats the cached value); scrape intervals run 5-60 s; exporters are
restarted mid-window (a gap, then counters from zero: Prometheus' ``rate`` adds the post-restart
value as the increase, as its documentation says for counter resets); a sidecar may be opted out;
old kernels have no PSI; nodes without InfiniBand have no infiniband collector series. Signals read
from counters are kept as cumulative counters here and read back the way ``rate`` reads them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.signals import SIGNALS, Family, Kind
from bottleneck_operator_dev.familyk.lanes import Arr

FIELD_SETS: dict[str, frozenset[Family]] = {
    "dev-only": frozenset({Family.DCGM_DEV}),
    "default": frozenset({Family.DCGM_DEV, Family.DCGM_PROF}),
    "full": frozenset(
        {
            Family.DCGM_DEV,
            Family.DCGM_PROF,
            Family.DCGM_PROF_SM,
            Family.DCGM_PROF_PIPES,
            Family.DCGM_PROF_NVLINK,
            Family.DCGM_POWER_CLOCKS,
        }
    ),
}


@dataclass(frozen=True)
class Exporters:
    """What one cluster collects and how often."""

    families: frozenset[Family]
    field_set: str
    scrape: float  # seconds between scrapes (one interval for the stack)
    dcgm_collect: float  # dcgm-exporter's own collection interval
    restarts: dict[str, int]  # exporter -> sample index where it restarted (a gap before it)


def draw_exporters(rng: np.random.Generator, n: int, *, rdma: bool, cpu_limit: bool) -> Exporters:
    """A cluster's exporter set-up, with families missing as they are on real clusters."""
    field_set = str(rng.choice(["dev-only", "default", "default", "full", "full"]))
    fams = set(FIELD_SETS[field_set])
    if rng.random() < 0.9:
        fams |= {Family.CADVISOR} | ({Family.CADVISOR_CFS} if cpu_limit else set())
    if rng.random() < 0.85 and cpu_limit:
        fams.add(Family.KSM)
    if rng.random() < 0.92:
        fams.add(Family.NODE)
        if rng.random() < 0.8:  # kernels before 4.20, or PSI off on the command line
            fams.add(Family.NODE_PSI)
        if rdma or rng.random() < 0.15:  # an IB HCA on the node even when the job does not use it
            fams.add(Family.NODE_IB)
    if rng.random() < 0.75:
        fams.add(Family.SIDECAR)
    scrape = float(rng.choice([5.0, 10.0, 15.0, 15.0, 30.0, 30.0, 60.0]))
    collect = float(rng.choice([1.0, 10.0, 30.0, 30.0]))
    restarts = {}
    for exporter in ("dcgm", "node", "cadvisor", "sidecar"):
        if n > 30 and rng.random() < 0.12:
            restarts[exporter] = int(rng.integers(10, n - 5))
    return Exporters(frozenset(fams), field_set, scrape, collect, restarts)


def counter_of(rate: Arr, step: float, reset_at: int | None, rng: np.random.Generator) -> Arr:
    """A cumulative counter whose increase per step is ``rate * step``, restarting from 0 at ``reset_at``."""
    inc = np.nan_to_num(rate) * step
    counter = rng.uniform(1e3, 1e9) * float(np.nanmax(rate) > 0) + np.cumsum(inc)
    if reset_at is not None:
        counter[reset_at:] = np.cumsum(inc[reset_at:]) * rng.uniform(0.2, 1.0)
    result: Arr = counter
    return result


def rate_of(counter: Arr, step: float, span: int) -> Arr:
    """What ``rate`` over ``span`` samples gives: the reset-corrected increase per second."""
    d = np.diff(counter, prepend=np.nan)
    d = np.where(d < 0, counter, d)  # a reset: the counter's value is the increase since it
    d[0] = d[1] if d.size > 1 else 0.0  # the range query reaches back before the window's start
    if span > 1:  # a trailing mean over the range (shorter at the start, where fewer samples exist)
        c = np.cumsum(d)
        lagged = np.concatenate((np.zeros(span), c[:-span])) if c.size > span else np.zeros(c.size)
        counts = np.minimum(np.arange(1, d.size + 1), span)
        d = (c - lagged[: c.size]) / counts
    result: Arr = d / step
    return result


def _hold(x: Arr, every: int) -> Arr:
    """A gauge read between updates repeats its last value."""
    if every <= 1:
        return x
    idx = (np.arange(x.size) // every) * every
    held: Arr = x[idx]
    return held


def observe(rng: np.random.Generator, true: dict[str, Arr], ex: Exporters, step: float) -> dict[str, Arr]:
    """The signals a window carries: only present families, gauges held, counters read by rate."""
    out: dict[str, Arr] = {}
    span = max(1, int(np.ceil(2 * ex.scrape / step)))  # rate needs two scrapes in its range
    for name, values in true.items():
        spec = SIGNALS[name]
        if spec.family not in ex.families:
            continue
        exporter = spec.family.exporter_name
        reset = ex.restarts.get(exporter)
        if spec.kind is Kind.COUNTER and not spec.special:
            v = rate_of(counter_of(values, step, reset, rng), step, span)
        else:
            every = round(max(ex.scrape, ex.dcgm_collect if exporter == "dcgm" else 0.0) / step)
            v = _hold(values, every).copy()
        if reset is not None:
            gap = 1 + reset % 3  # one outage per exporter: every series of it misses the same samples
            v[max(reset - gap, 0) : reset] = np.nan
        out[name] = v
    return out
