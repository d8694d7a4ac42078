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
    scrapers: dict[str, Scraper] = {}
    out: dict[str, FloatArray] = {}
    for name in SIGNAL_NAMES:
        truth = truths.get(name)
        family = SIGNALS[name].family
        if truth is None or family not in stack.families:
            continue
        exporter = family.exporter_name
        if exporter not in scrapers:
            every = max(stack.interval, stack.dcgm_collect) if exporter == "dcgm" else stack.interval
            scrapers[exporter] = Scraper(start, step, n, every, float(rng.uniform(0, every)))
        sc = scrapers[exporter]
        own = resets if exporter == "cadvisor" else ()
        out[name] = _read(sc, truth, own, rng)
        if stack.gap is not None and stack.gap[0] == exporter:
            out[name][stack.gap[1] : stack.gap[1] + stack.gap[2]] = np.nan
    return out


def _read(sc: Scraper, truth: Truth, resets: tuple[float, ...], rng: np.random.Generator) -> FloatArray:
    if truth.kind == "gauge":
        return sc.gauge(truth.value)
    uptime = float(rng.uniform(3e3, 3e6))
    num = sc.rate(sc.counter(truth.value, float(np.nanmean(truth.value)) * uptime, resets))
    if truth.kind == "counter":
        return np.maximum(num, 0.0)
    assert truth.denominator is not None
    den = sc.rate(sc.counter(truth.denominator, float(np.mean(truth.denominator)) * uptime, resets))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, np.clip(num / den, 0.0, 1.0), np.nan)
