"""How the exporters and Prometheus turn the job's true activity into the window's samples.

Which families exist (per cluster configuration and per job: a sidecar opt-out, no CPU limit so no
CFS series), how often each is refreshed (dcgm-exporter's collect interval, the scrape interval:
a value is repeated when it is refreshed less often than the query step), how counters become
rates (a trailing window, so rates lag and smooth), and what goes wrong (failed scrapes, an exporter
that starts late on one node, a counter reset that ``rate()`` misreads as one huge sample).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.signals import SIGNALS, Family
from bottleneck_operator_dev.blindfamily.draft import Draft
from bottleneck_operator_dev.blindfamily.timeline import FloatArray

_DCGM = frozenset(
    {
        Family.DCGM_DEV,
        Family.DCGM_PROF,
        Family.DCGM_PROF_SM,
        Family.DCGM_PROF_NVLINK,
        Family.DCGM_PROF_PIPES,
        Family.DCGM_POWER_CLOCKS,
    }
)
# Read as gauges (the last sample), not as rates of counters.
_GAUGES = frozenset(
    {
        "mem_working_set_bytes",
        "mem_limit_bytes",
        "cpu_limit_cores",
        "node_cpus",
        "node_mem_avail_frac",
        "node_swap_used_frac",
        "sc_procs_running",
        "sc_procs_iowait",
        "sc_procs_busy",
    }
)
_GROUPS = {
    "dcgm": _DCGM,
    "cadvisor": frozenset({Family.CADVISOR, Family.CADVISOR_CFS}),
    "node": frozenset({Family.NODE, Family.NODE_PSI, Family.NODE_IB}),
    "sidecar": frozenset({Family.SIDECAR}),
}


@dataclass(frozen=True)
class Scrape:
    """One job's exporter set-up.

    Attributes:
        scrape_s: Prometheus' scrape interval.
        dcgm_s: how often a DCGM value changes: the longer of the scrape and collect intervals.
        rate_window_s: the range of the ``rate()`` that turns counters into rates.
        families: the families this job's window carries.
        dropped: signals missing although their family is present (no pressure files on cgroup v1).
        tags: what a reader of the labels should know about the set-up.
    """

    scrape_s: float
    dcgm_s: float
    rate_window_s: float
    families: frozenset[Family]
    dropped: frozenset[str]
    tags: tuple[str, ...]


def draw_scrape(d: Draft, rng: np.random.Generator, step: float) -> Scrape:
    """The exporters this job is seen through."""
    ex = d.cluster.exporters
    scrape = float(rng.choice(ex.scrape_s))
    collect = float(rng.choice(ex.dcgm_collect_s))
    fam = {Family.DCGM_DEV, Family.CADVISOR, Family.NODE}
    tags = [f"scrape-{scrape:g}s", f"dcgm-collect-{collect:g}s"]
    if rng.random() < ex.prof:
        fam.add(Family.DCGM_PROF)
        fam.update(
            f
            for f, p in (
                (Family.DCGM_PROF_SM, ex.sm),
                (Family.DCGM_PROF_PIPES, ex.pipes),
                (Family.DCGM_PROF_NVLINK, ex.nvlink_prof),
            )
            if rng.random() < p
        )
    else:
        tags.append("dcgm-dev-only")
    if rng.random() < ex.power_fields:
        fam.add(Family.DCGM_POWER_CLOCKS)
    if d.cpu_limit is not None:
        fam.add(Family.KSM)
        if rng.random() >= ex.cfs_dropped:
            fam.add(Family.CADVISOR_CFS)
        else:
            tags.append("cfs-series-dropped")
    psi = rng.random() < ex.psi
    if psi:
        fam.add(Family.NODE_PSI)
    if d.cluster.rdma and rng.random() < ex.ib_collector:
        fam.add(Family.NODE_IB)
    if rng.random() < ex.sidecar:
        fam.add(Family.SIDECAR)
    dropped: set[str] = set()
    if d.cluster.cgroup_v1 or not psi:
        dropped.update(n for n in SIGNALS if n.startswith("sc_psi_"))
    if d.cluster.cgroup_v1:
        dropped.add("sc_swapin_ps")
    tags += [f"no-{f.value}" for f in (Family.DCGM_PROF_SM, Family.NODE_PSI, Family.SIDECAR) if f not in fam]
    window = float(rng.choice([max(step, 2 * scrape), max(step, 4 * scrape), 120.0]))
    return Scrape(scrape, max(scrape, collect), window, frozenset(fam), frozenset(dropped), tuple(tags))


def _smooth(x: FloatArray, k: int) -> FloatArray:
    """Trailing mean over ``k`` samples (shorter at the start), along the last axis."""
    if k <= 1:
        return x
    c = np.cumsum(x, axis=-1)
    lagged = np.concatenate([np.zeros((*x.shape[:-1], k)), c[..., :-k]], axis=-1)[..., : x.shape[-1]]
    counts = np.minimum(np.arange(1, x.shape[-1] + 1), k)
    out: FloatArray = (c - lagged) / counts
    return out


def _hold(x: FloatArray, every_s: float, step: float, phase: float) -> FloatArray:
    """The value as last refreshed: a value refreshed every ``every_s`` repeats across steps."""
    if every_s <= step:
        return x
    t = np.arange(x.shape[-1]) * step
    updated = phase + np.floor((t - phase) / every_s) * every_s
    idx = np.clip(np.floor(updated / step + 1e-9).astype(np.int64), 0, x.shape[-1] - 1)
    out: FloatArray = x[..., idx]
    return out


def sample(
    raw: dict[str, FloatArray],
    sc: Scrape,
    step: float,
    rng: np.random.Generator,
    own: dict[str, FloatArray],
    own_rng: np.random.Generator,
) -> dict[str, FloatArray]:
    """The signals as the window holds them: only present families, refreshed, rated, with faults.

    ``own`` holds the pod's own network bytes (the sidecar's ``sc_net_*``), sampled as the sidecar's
    other counters are (the same refresh, rate window and failed scrapes) but with any draw of
    their own taken from ``own_rng``, so that every other signal comes out as it did without them.
    """
    out: dict[str, FloatArray] = {}
    phase = float(rng.uniform(0, sc.dcgm_s))
    for name, x in raw.items():
        fam = SIGNALS[name].family
        if fam not in sc.families or name in sc.dropped:
            continue
        if fam in _DCGM:
            y = _hold(_smooth(x, round(sc.dcgm_s / step)), sc.dcgm_s, step, phase)
        elif name in _GAUGES:
            y = _hold(x, sc.scrape_s, step, phase % sc.scrape_s)
        else:
            y = _hold(_smooth(x, round(sc.rate_window_s / step)), sc.scrape_s, step, phase % sc.scrape_s)
        out[name] = np.array(y, dtype=np.float64)
    first, gaps = _faults(out, sc, rng)
    if own and Family.SIDECAR in sc.families:
        net = {
            name: np.array(_hold(_smooth(x, round(sc.rate_window_s / step)), sc.scrape_s, step, phase % sc.scrape_s))
            for name, x in own.items()
        }
        _own_faults(net, first, gaps, own_rng)
        out.update(net)
    for name, y in out.items():
        np.maximum(y, 0.0, out=y)
        if SIGNALS[name].unit == "ratio":
            np.minimum(y, 1.0, out=y)
    return out


def _faults(out: dict[str, FloatArray], sc: Scrape, rng: np.random.Generator) -> tuple[bool, list[tuple[int, int]]]:
    """Failed scrapes, an exporter that starts late on one node, a misread counter reset.

    Returns whether the first sample of every rate is missing, and the sidecar's failed scrapes
    (pod, first sample), for the signals sampled after these.
    """
    names = list(out)
    pods, n = out[names[0]].shape
    rates = [k for k in names if k not in _GAUGES and SIGNALS[k].family not in _DCGM]
    first = bool(rng.random() < 0.5)
    if first:
        for k in rates:
            out[k][:, 0] = np.nan  # rate() needs two samples in its window
    gaps: list[tuple[int, int]] = []
    for _ in range(int(rng.poisson(0.6))):
        key = str(rng.choice(list(_GROUPS)))
        group = _GROUPS[key]
        pod, a = int(rng.integers(0, pods)), int(rng.integers(0, n))
        if key == "sidecar":
            gaps.append((pod, a))
        for k in names:
            if SIGNALS[k].family in group:
                out[k][pod, a : a + int(rng.integers(1, 7))] = np.nan
    if pods > 1 and rng.random() < 0.08:
        pod, late = int(rng.integers(0, pods)), int(n * rng.uniform(0.1, 0.4))
        for k in names:
            if SIGNALS[k].family in _DCGM:
                out[k][pod, :late] = np.nan
    bytes_like = [k for k in rates if SIGNALS[k].unit in ("B/s", "1/s", "cores")]
    if bytes_like and rng.random() < 0.12:
        k = str(rng.choice(bytes_like))
        pod, t = int(rng.integers(0, pods)), int(rng.integers(1, n))
        floor = 1e6 if SIGNALS[k].unit == "B/s" else 0.0
        out[k][pod, t] = np.nan if rng.random() < 0.5 else out[k][pod, t] * rng.uniform(5, 40) + floor
    return first, gaps


def _own_faults(net: dict[str, FloatArray], first: bool, gaps: list[tuple[int, int]], rng: np.random.Generator) -> None:
    """The sidecar's faults on the pod's network bytes: its failed scrapes, a misread counter reset."""
    if not net:
        return
    pods, n = next(iter(net.values())).shape
    for y in net.values():
        if first:
            y[:, 0] = np.nan
        for pod, a in gaps:
            y[pod, a : a + int(rng.integers(1, 7))] = np.nan
    # the other rates' reset chance (0.12) spread over their ~8 byte-like and per-second signals
    for y in net.values():
        if rng.random() < 0.03:
            pod, t = int(rng.integers(0, pods)), int(rng.integers(1, n))
            y[pod, t] = np.nan if rng.random() < 0.5 else y[pod, t] * rng.uniform(5, 40) + 1e6
