"""Cluster practices: how a fleet's clusters watch their Jobs, drawn per Job.

Scrape intervals of 5-60 s (kube-prometheus-stack's 30 s default, the dcgm-exporter chart's 15 s
ServiceMonitor), dcgm-exporter's own 30 s collection, the three DCGM field sets, exporters that a
cluster may lack, missed scrapes and the odd restart (TELEMETRY.md, DESIGN.md, the issue).
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator.contract.signals import Family
from bottleneck_operator_dev.familyab.config import Config, Practices
from bottleneck_operator_dev.familyab.fleet import Rng, pick_int, pick_str

SCRAPE_WEIGHTS = {5: 0.07, 10: 0.08, 15: 0.35, 30: 0.40, 60: 0.10}
FIELDSET_WEIGHTS = {"dev": 0.30, "default": 0.45, "full": 0.25}
XIDS = (13, 31, 43, 48, 63, 74, 79, 94)


def draw_practices(rng: Rng, cfg: Config) -> Practices:
    """Exporters, intervals and faults of the cluster that runs ``cfg``."""
    scrape = float(pick_int(rng, SCRAPE_WEIGHTS))
    exporters = {name for name, p in (("cadvisor", 0.97), ("ksm", 0.9), ("node", 0.95)) if rng.random() < p}
    if "node" in exporters and rng.random() < 0.85:  # PSI needs kernel >= 4.20 and the collector on
        exporters.add("psi")
    if "node" in exporters and cfg.nic is not None and cfg.nic.rdma and rng.random() < 0.9:
        exporters.add("ib")
    if rng.random() < 0.7:  # the collector is opted out of, or not yet rolled out, elsewhere
        exporters.add("sidecar")
        if rng.random() < 0.5:
            exporters.add("sidecar_net")
    return Practices(
        scrape_s=scrape,
        dcgm_collect_s=30.0 if rng.random() < 0.6 else scrape,
        fieldset=pick_str(rng, FIELDSET_WEIGHTS),
        exporters=frozenset(exporters),
        drop=float(rng.uniform(0.0, 0.03)),
        sidecar_reset=bool("sidecar" in exporters and rng.random() < 0.05),
        xid=int(rng.choice(XIDS)) if rng.random() < 0.02 else 0,
        layout=(
            "dcgm=exported" if rng.random() < 0.7 else "dcgm=pod",
            "node=instance" if rng.random() < 0.6 else "node=nodename",
        ),
    )


def families_exported(cfg: Config, prac: Practices) -> frozenset[Family]:
    """The signal families this Job's cluster exports for its pods."""
    fams = {Family.DCGM_DEV}
    prof = cfg.gpu.prof != "none"  # DCGM profiling needs a Volta-or-newer datacenter GPU
    if prac.fieldset in ("default", "full") and prof:
        fams.add(Family.DCGM_PROF)
    if prac.fieldset == "full":
        fams.add(Family.DCGM_POWER_CLOCKS)
        if prof:
            fams |= {Family.DCGM_PROF_SM, Family.DCGM_PROF_PIPES}
            if cfg.gpu.nvlink_gbs > 0:
                fams.add(Family.DCGM_PROF_NVLINK)
    named = {
        "cadvisor": Family.CADVISOR,
        "ksm": Family.KSM,
        "node": Family.NODE,
        "psi": Family.NODE_PSI,
        "ib": Family.NODE_IB,
        "sidecar": Family.SIDECAR,
        "sidecar_net": Family.SIDECAR_NET,
    }
    fams |= {named[e] for e in prac.exporters}
    if Family.CADVISOR in fams and cfg.cpu_limit:  # CFS counters exist only under a CPU limit
        fams.add(Family.CADVISOR_CFS)
    if not cfg.cpu_limit:
        fams.discard(Family.KSM)  # no limit: kube-state-metrics has no cpu limit series
    return frozenset(fams)


def drop_signals(cfg: Config, names: set[str]) -> set[str]:
    """Signals a family carries in general but this Job's hardware or limits do not produce."""
    dropped = set()
    if cfg.gpu.nvlink_gbs <= 0:
        dropped.add("nvlink_total_bps")  # unsupported field on PCIe cards
    if not cfg.cpu_limit:
        dropped.add("sc_throttled_frac")  # a pod cgroup without quota counts no periods
    if not cfg.gpu.tensor_cores:
        dropped.add("tensor_active")
    return names - dropped


def scrape_times(rng: Rng, t0: float, t1: float, interval: float, drop: float) -> np.ndarray:
    """One exporter's scrape times over [t0, t1]: a fixed offset, millisecond jitter, missed scrapes
    and, now and then, a short outage of a few scrapes."""
    offset = rng.uniform(0.0, interval)
    times = np.arange(t0 + offset, t1, interval)
    times = times + rng.normal(0.0, 0.002 * interval, times.size)
    keep = rng.random(times.size) >= drop
    if times.size > 10 and rng.random() < 0.1:
        gap = int(rng.integers(0, times.size - 5))
        keep[gap : gap + int(rng.integers(2, 6))] = False
    return np.sort(times[keep])
