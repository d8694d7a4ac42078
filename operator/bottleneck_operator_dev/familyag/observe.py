"""How a Job of family AG is observed: scrape intervals, field sets, missing exporters, resets, pauses.

Everything here differs between real clusters and says nothing about the Job's bottleneck: it is
drawn from the Job's own generator after the physics, and it is what the tags report.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.signals import Family
from bottleneck_operator_dev.familyag.scenario import Scenario

EXPORTERS = ("dcgm", "cadvisor", "ksm", "node", "sidecar")
SHORT_WINDOW = 300.0  # a window shorter than this (or with under 10 timestamps) is tagged too-short
PROF_FIELDS = {
    "dev": (),
    "default": (Family.DCGM_PROF,),
    "full": (Family.DCGM_PROF, Family.DCGM_PROF_SM, Family.DCGM_PROF_PIPES, Family.DCGM_POWER_CLOCKS),
}


@dataclass(frozen=True)
class Observation:
    """The observation setup of one Job.

    Attributes:
        duration: seconds from the Job's start to the window's end.
        scrape: exporter -> scrape interval, seconds.
        collect: dcgm-exporter's collect interval (its values are refreshed this often), seconds.
        fields: dcgm field set: "dev" (DEV fields only), "default" (the shipped counters) or "full".
        families: the families that deliver series.
        layout: exporter -> label layout the series were read in.
        resets: (exporter, seconds after start) of counter resets (an exporter or collector restart).
        gaps: (exporter, from, to) seconds after start when an exporter was not scraped.
        miss: chance that any one scrape fails.
        spin: the trainer's main thread spins in CUDA synchronisation (a full core while waiting).
        startup: seconds from the pods' start to the first step.
        pauses: (kind, seconds after start, duration) of checkpoints and evaluations.
        noise: relative jitter of counter increments and gauge readings.
        fb_frac: framebuffer share the caching allocator holds.
        floors: background CPU and I/O pressure of the pod (scheduler latency, logging, the collector).
    """

    duration: float
    scrape: dict[str, float]
    collect: float
    fields: str
    families: frozenset[Family]
    layout: dict[str, str]
    resets: tuple[tuple[str, float], ...]
    gaps: tuple[tuple[str, float, float], ...]
    miss: float
    spin: bool
    startup: float
    pauses: tuple[tuple[str, float, float], ...]
    noise: float
    fb_frac: float
    floors: tuple[float, float]

    @property
    def too_short(self) -> bool:
        return self.duration < SHORT_WINDOW


def _scrapes(rng: np.random.Generator) -> dict[str, float]:
    """Scrape intervals: one for the cluster, sometimes another for dcgm-exporter (its chart's 15 s)."""
    base = float(rng.choice([5.0, 10.0, 15.0, 20.0, 30.0, 60.0], p=[0.08, 0.14, 0.28, 0.08, 0.34, 0.08]))
    out = dict.fromkeys(EXPORTERS, base)
    if rng.random() < 0.25:
        out["dcgm"] = 15.0
    if rng.random() < 0.15:
        out["sidecar"] = 5.0 if base > 5.0 else 10.0
    return out


def _families(rng: np.random.Generator, sc: Scenario, fields: str) -> frozenset[Family]:
    fams = {Family.DCGM_DEV, Family.CADVISOR, *PROF_FIELDS[fields]}
    if fields == "full" and sc.gpu.nvlink_bps > 0 and rng.random() < 0.5:
        fams.add(Family.DCGM_PROF_NVLINK)
    if sc.cpu_limit is not None:
        fams.add(Family.CADVISOR_CFS)
    if rng.random() < 0.92:
        fams.add(Family.KSM)
    if rng.random() < 0.97:
        fams.add(Family.NODE)
        if rng.random() < 0.88:
            fams.add(Family.NODE_PSI)
        rdma = sc.fabric is not None and sc.fabric.rdma
        if rdma or (sc.gpu.nvlink_bps > 0 and rng.random() < 0.4):
            fams.add(Family.NODE_IB)
    if rng.random() < 0.7:
        fams.add(Family.SIDECAR)
        if rng.random() < 0.6:
            fams.add(Family.SIDECAR_NET)
    return frozenset(fams)


def _pauses(rng: np.random.Generator, duration: float, startup: float) -> tuple[tuple[str, float, float], ...]:
    """Checkpoints every 10-40 min (half the Jobs) and evaluations every 15-30 min (a third)."""
    out: list[tuple[str, float, float]] = []
    if rng.random() < 0.5:
        every = float(rng.uniform(600, 2400))
        out += [("checkpoint", t, float(rng.uniform(20, 120))) for t in np.arange(startup + every, duration, every)]
    if rng.random() < 0.33:
        every = float(rng.uniform(900, 1800))
        out += [("eval", t, float(rng.uniform(30, 180))) for t in np.arange(startup + every * 0.7, duration, every)]
    out.sort(key=lambda p: p[1])
    kept: list[tuple[str, float, float]] = []
    for kind, at, length in out:
        if (not kept or at > kept[-1][1] + kept[-1][2] + 30.0) and at + length < duration:
            kept.append((kind, float(at), length))
    return tuple(kept)


def _troubles(
    rng: np.random.Generator, duration: float
) -> tuple[tuple[tuple[str, float], ...], tuple[tuple[str, float, float], ...]]:
    """Counter resets (a tenth of the Jobs) and exporter outages (a tenth)."""
    resets: tuple[tuple[str, float], ...] = ()
    gaps: tuple[tuple[str, float, float], ...] = ()
    if rng.random() < 0.1:
        resets = ((str(rng.choice(["node", "sidecar", "cadvisor"])), float(rng.uniform(0.2, 0.8) * duration)),)
    if rng.random() < 0.1:
        at = float(rng.uniform(0.1, 0.7) * duration)
        gaps = ((str(rng.choice(["dcgm", "node", "sidecar"])), at, at + float(rng.uniform(120, 600))),)
    return resets, gaps


def draw_observation(rng: np.random.Generator, sc: Scenario) -> Observation:
    """The observation setup of a Job (drawn after its physics, from the same generator)."""
    short = rng.random() < 0.06
    duration = float(rng.uniform(90, 280)) if short else float(np.exp(rng.uniform(np.log(900), np.log(5400))))
    startup = min(float(rng.uniform(20, 200)), duration * 0.3)
    fields = str(rng.choice(["dev", "default", "full"], p=[0.25, 0.45, 0.3]))
    resets, gaps = _troubles(rng, duration)
    layout = {
        "dcgm": str(rng.choice(["exported-labels", "direct-labels"], p=[0.7, 0.3])),
        "node": str(rng.choice(["pod-join", "node-label"], p=[0.6, 0.4])),
        "cadvisor": str(rng.choice(["containers", "pod-cgroup"], p=[0.7, 0.3])),
    }
    return Observation(
        duration=duration,
        scrape=_scrapes(rng),
        collect=float(rng.choice([1.0, 5.0, 10.0, 30.0], p=[0.1, 0.15, 0.25, 0.5])),
        fields=fields,
        families=_families(rng, sc, fields),
        layout=layout,
        resets=resets,
        gaps=gaps,
        miss=float(rng.uniform(0.0, 0.02)),
        spin=rng.random() < 0.7,
        startup=startup,
        pauses=_pauses(rng, duration, startup),
        noise=float(rng.uniform(0.01, 0.05)),
        fb_frac=float(rng.uniform(0.55, 0.97)),
        floors=(float(rng.uniform(0.001, 0.03)), float(rng.uniform(0.0, 0.008))),
    )
