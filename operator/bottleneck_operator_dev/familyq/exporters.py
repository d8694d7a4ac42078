"""Which exporters a job's cluster runs, and what Prometheus returns of them for one pod.

Clusters differ: dcgm-exporter with only the DEV fields (consumer-style counters files, boards
without profiling), its shipped default file (DEV plus ``GR_ENGINE_ACTIVE``, tensor, DRAM, PCIe) or
a full custom file; a kube-state-metrics or a sidecar that is not installed; node-exporter without
pressure (kernels before 4.20) or without the infiniband collector's ports. Scrape intervals run
from 5 to 60 s, dcgm-exporter caches its fields for its own collect interval, exporters restart
and leave gaps, and a restarted container's cgroup counters start again from zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.signals import SIGNAL_NAMES, SIGNALS, Family
from bottleneck_operator_dev.familyq.host import Truth
from bottleneck_operator_dev.familyq.scrape import Scraper

FloatArray = npt.NDArray[np.float64]

FIELD_SETS: dict[str, frozenset[Family]] = {
    "dev-only": frozenset({Family.DCGM_DEV}),
    "default": frozenset({Family.DCGM_DEV, Family.DCGM_PROF}),
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


@dataclass(frozen=True)
class Stack:
    """One cluster's monitoring stack as a job meets it.

    Attributes:
        field_set: the dcgm-exporter counters file ("dev-only", "default", "full").
        families: the families the cluster exports at all.
        interval: seconds between scrapes.
        dcgm_collect: dcgm-exporter's own collect interval (its values repeat in between).
        gap: (exporter name, first sample, samples) of an exporter restart, or None.
    """

    field_set: str
    families: frozenset[Family]
    interval: float
    dcgm_collect: float
    gap: tuple[str, int, int] | None


def draw_stack(rng: np.random.Generator, n: int, cpu_limit: bool, rdma: bool) -> Stack:
    """The exporters, field set, scrape interval and restarts one job's cluster has."""
    field_set = str(rng.choice(sorted(FIELD_SETS), p=[0.45, 0.25, 0.30]))
    fams = set(FIELD_SETS[field_set])
    if field_set == "default" and rng.random() < 0.3:
        fams.add(Family.DCGM_POWER_CLOCKS)
    if rng.random() < 0.93:
        fams.add(Family.CADVISOR)
        if cpu_limit:
            fams.add(Family.CADVISOR_CFS)
    if cpu_limit and rng.random() < 0.9:
        fams.add(Family.KSM)
    if rng.random() < 0.9:
        fams.add(Family.NODE)
        if rng.random() < 0.85:
            fams.add(Family.NODE_PSI)
        if rdma and rng.random() < 0.85:
            fams.add(Family.NODE_IB)
    if rng.random() < 0.7:
        fams.add(Family.SIDECAR)
    gap = None
    if rng.random() < 0.15:
        gap = (str(rng.choice(["dcgm", "node", "sidecar", "cadvisor"])), int(rng.integers(n)), int(rng.integers(1, 5)))
    interval = float(rng.choice([5.0, 10.0, 15.0, 30.0, 60.0], p=[0.1, 0.15, 0.35, 0.3, 0.1]))
    return Stack(field_set, frozenset(fams), interval, float(rng.choice([5.0, 10.0, 30.0])), gap)


def observe(
    truths: Mapping[str, Truth],
    stack: Stack,
    start: float,
    step: float,
    resets: tuple[float, ...],
    rng: np.random.Generator,
) -> dict[str, FloatArray]:
    """What a range query returns per signal for one pod: scraped, rated, with gaps; only exported signals."""
    n = len(next(iter(truths.values())).value)
    by_exporter: dict[str, list[str]] = {}
    for name in SIGNAL_NAMES:
        if name in truths and SIGNALS[name].family in stack.families:
            by_exporter.setdefault(SIGNALS[name].family.exporter_name, []).append(name)
    out: dict[str, FloatArray] = {}
    for exporter, names in by_exporter.items():
        every = max(stack.interval, stack.dcgm_collect) if exporter == "dcgm" else stack.interval
        sc = Scraper(start, step, n, every, float(rng.uniform(0, every)))
        out.update(_read(sc, {k: truths[k] for k in names}, resets if exporter == "cadvisor" else (), rng))
        if stack.gap is not None and stack.gap[0] == exporter:
            for name in names:
                out[name][stack.gap[1] : stack.gap[1] + stack.gap[2]] = np.nan
    return out


def _read(
    sc: Scraper, truths: Mapping[str, Truth], resets: tuple[float, ...], rng: np.random.Generator
) -> dict[str, FloatArray]:
    """One exporter's signals through its scrapes: gauges held, counters (and counter ratios) rated."""
    out: dict[str, FloatArray] = {}
    gauges = [k for k, t in truths.items() if t.kind == "gauge"]
    if gauges:
        held = sc.gauge(np.stack([truths[k].value for k in gauges]))
        out.update(zip(gauges, held, strict=True))
    counted = [k for k, t in truths.items() if t.kind != "gauge"]
    if not counted:
        return out
    rows = [truths[k].value for k in counted]
    rows += [d for k in counted if (d := truths[k].denominator) is not None]
    true = np.stack(rows)
    uptime = rng.uniform(3e3, 3e6, (len(rows), 1))
    rates = sc.rate(sc.counter(true, (true.mean(axis=1, keepdims=True) * uptime)[:, 0], resets))
    den = len(counted)
    for i, k in enumerate(counted):
        if truths[k].kind == "counter":
            out[k] = np.maximum(rates[i], 0.0)
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                out[k] = np.where(rates[den] > 0, np.clip(rates[i] / rates[den], 0.0, 1.0), np.nan)
            den += 1
    return out
