"""Drawing what differs between clusters' monitoring: field sets, intervals, layouts, families, window.

Nothing here changes what the Job does, only how it is seen (and the pauses a real run has).
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator_dev.familyak.loop import LoopRun
from bottleneck_operator_dev.familyak.spec import JobSpec, Telemetry
from bottleneck_operator_dev.familyak.stages import OOM_RESTART_S
from bottleneck_operator_dev.familyak.trace import Pause
from bottleneck_operator_dev.familyak.workloads import pick

TOO_SHORT_SHARE = 0.05  # Jobs whose window holds only a handful of steps
MIN_STEPS = 25  # a judged window holds at least this many steps


def draw_telemetry(rng: np.random.Generator, spec: JobSpec, step: float) -> tuple[Telemetry, bool]:
    """The monitoring stack and the window; the flag says the window is too short to judge."""
    fields = pick(rng, {"dev": 0.25, "default": 0.45, "full": 0.3})
    interval = float(rng.choice([5.0, 10.0, 15.0, 30.0, 60.0]))
    collect = float(pick(rng, {"1": 0.2, "5": 0.2, "10": 0.2, "15": 0.1, "30": 0.3}))
    too_short = bool(rng.random() < TOO_SHORT_SHARE)
    duration = rng.uniform(1.0, 6.0) * step if too_short else max(rng.uniform(900.0, 3600.0), MIN_STEPS * step)
    sidecar = bool(rng.random() < 0.75)
    layouts = (
        ("dcgm", pick(rng, {"exported-labels": 0.6, "pod-labels": 0.4})),
        ("node", pick(rng, {"pod-join": 0.6, "node-label": 0.4})),
        ("cadvisor", pick(rng, {"containers": 0.5, "pod-cgroup": 0.5})),
    )
    tel = Telemetry(
        dcgm_fields=fields,
        dcgm_power_clocks=bool(rng.random() < 0.5),
        dcgm_interval=interval,
        dcgm_collect=min(collect, 30.0),
        host_interval=float(rng.choice([10.0, 15.0, 30.0, 60.0])),
        sidecar=sidecar,
        sidecar_net=sidecar and bool(rng.random() < 0.6),
        node_psi=bool(rng.random() < 0.85),
        node_ib=spec.fabric.rdma and bool(rng.random() < 0.85),
        ksm=bool(rng.random() < 0.9),
        cadvisor=bool(rng.random() < 0.95),
        layouts=layouts,
        duration=float(duration),
        lead=rng.uniform(120.0, 1800.0),
        missed=rng.uniform(0.0, 0.03),
        restarts=int(rng.random() < 0.15),
        prometheus_major=int(pick(rng, {"2": 0.7, "3": 0.3})),
    )
    return tel, too_short


def draw_pauses(rng: np.random.Generator, tel: Telemetry, run: LoopRun, span: tuple[float, float]) -> list[Pause]:
    """Checkpoints, crash restarts, and the OOM kills the Job's memory growth leads to."""
    begin, end = span
    pauses: list[Pause] = []
    if rng.random() < 0.6:
        every = rng.uniform(600.0, 1800.0)
        for at in np.arange(begin + every, end, every):
            pauses.append(Pause(float(at), rng.uniform(5.0, 40.0), "checkpoint"))
    for _ in range(tel.restarts):
        pauses.append(Pause(rng.uniform(begin + 0.5 * tel.lead, end), rng.uniform(30.0, 90.0), "restart"))
    period = run.costs.oom_period
    if np.isfinite(period):
        at = begin + period
        while at < end:
            pauses.append(Pause(float(at), OOM_RESTART_S, "oom"))
            at += OOM_RESTART_S + period
    return _apart(sorted(pauses, key=lambda p: p.at))


def _apart(pauses: list[Pause]) -> list[Pause]:
    """Drop a pause that would start inside the one before (one thing stops the loop at a time)."""
    kept: list[Pause] = []
    for p in pauses:
        if not kept or p.at >= kept[-1].at + kept[-1].seconds + 5.0:
            kept.append(p)
    return kept
