"""Family AJ's Jobs: placed in a shared fleet, costed stage by stage, labelled by measurement, observed.

Job ``i`` depends on ``(seed, i)`` alone. Every block of five Jobs aims once at each class; a Job is
drawn for its aim (see :mod:`.aim`) until the stage that, made ample, shortens its step most is that
class, by a clear margin (see :mod:`.label`). The label is always what was measured.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, families_and_coverage
from bottleneck_operator_dev.familyaj.aim import draw_aimed
from bottleneck_operator_dev.familyaj.assemble import levels, pod_window
from bottleneck_operator_dev.familyaj.fleet import Placement
from bottleneck_operator_dev.familyaj.gpu_truth import draw_texture
from bottleneck_operator_dev.familyaj.label import Account, account
from bottleneck_operator_dev.familyaj.names import job_names, job_tags
from bottleneck_operator_dev.familyaj.observe import draw_observation
from bottleneck_operator_dev.familyaj.scrape import Timeline
from bottleneck_operator_dev.familyaj.workload import Workload

SALT = 0xA7  # family AJ's stream
MIN_MARGIN = 1.3  # the label's saving over the runner-up's
MIN_SAVING = 0.1  # the label's stage must cost at least this share of the step
ATTEMPTS = 60
# How often each mechanism is aimed at within its class.
MECH_WEIGHTS: dict[Mechanism, float] = {
    Mechanism.COMPUTE: 0.5,
    Mechanism.LAUNCH_BOUND: 0.5,
    Mechanism.HOST_MEMORY_PRESSURE: 0.5,
    Mechanism.HBM_BANDWIDTH: 0.5,
    Mechanism.PCIE: 1 / 3,
    Mechanism.NVLINK: 1 / 3,
    Mechanism.NETWORK: 1 / 3,
    Mechanism.LOCAL_DISK: 0.45,
    Mechanism.NETWORK_STORAGE: 0.55,
    Mechanism.THROTTLED: 0.35,
    Mechanism.SATURATED: 0.3,
    Mechanism.TOO_FEW_WORKERS: 0.35,
}


@dataclass(frozen=True)
class FamilyAJJob:
    """One labelled Job window of family AJ.

    Attributes:
        namespace: the Job's namespace.
        name: the Job's name.
        label: the class of the stage that limits its step (never Unknown).
        mechanism: how that class limits it (a contract ``Mechanism`` value of the label's class).
        tags: what was drawn for it (hardware, telemetry setup, window), never its class.
        window: its telemetry, as the data layer would hand it to the analysis.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def _rng(seed: int, i: int, *purpose: int) -> np.random.Generator:
    return np.random.default_rng([seed & 0xFFFFFFFFFFFFFFFF, i, SALT, *purpose])


def aim_of(seed: int, i: int) -> Bottleneck:
    """The class Job ``i`` aims at: each block of five aims at each class once, in a drawn order."""
    order = _rng(seed, i // 5, 1).permutation(len(CLASSES))
    return CLASSES[int(order[i % 5])]


def _mechanism(rng: np.random.Generator, target: Bottleneck) -> Mechanism:
    mechs = MECHANISMS[target]
    w = np.array([MECH_WEIGHTS[m] for m in mechs])
    return mechs[int(rng.choice(len(mechs), p=w / w.sum()))]


def _draw(seed: int, i: int, target: Bottleneck, lead: float, duration: float) -> tuple[Placement, Workload, Account]:
    """Draw for the aim until the measured label is it (and its mechanism the aimed one, if possible)."""
    mech = _mechanism(_rng(seed, i, 2), target)
    fallback: tuple[Placement, Workload, Account] | None = None
    last: tuple[Placement, Workload, Account] | None = None
    for k in range(ATTEMPTS):
        sev = 1.0 if k < ATTEMPTS // 2 else 1.0 + 0.15 * (k - ATTEMPTS // 2 + 1)
        if k == 2 * ATTEMPTS // 3 and fallback is not None:
            break
        pl, w = draw_aimed(_rng(seed, i, 3, k), mech, lead, duration, sev)
        acc = account(w, pl, duration)
        last = (pl, w, acc)
        if acc.label is target and acc.margin >= MIN_MARGIN and acc.savings[target] >= MIN_SAVING:
            if acc.mechanism is mech:
                return last
            fallback = fallback or last
    if fallback is not None:
        return fallback
    assert last is not None
    return last


def _timeline(rng: np.random.Generator, pl: Placement, duration: float, startup: float | None) -> Timeline:
    pauses: list[tuple[float, float]] = []
    if rng.random() < 0.5:
        period, length = float(rng.uniform(600.0, 2400.0)), float(rng.uniform(15.0, 90.0))
        t = float(pl.seg_edges[0]) + float(rng.uniform(0.0, period))
        while t < duration:
            pauses.append((t, t + length))
            t += period
    return Timeline(pl.seg_edges, startup, tuple(pauses))


def make_job(seed: int, i: int, start: float, step: float) -> FamilyAJJob:
    """Job ``i`` of family AJ for ``seed``, its window starting at ``start`` with timestamps ``step`` apart."""
    rng = _rng(seed, i, 4)
    short = bool(rng.random() < 0.04)
    duration = float(rng.uniform(45.0, 150.0)) if short else float(np.exp(rng.uniform(np.log(300.0), np.log(3600.0))))
    launch = not short and bool(rng.random() < 0.2)
    lead = 0.0 if launch else float(rng.uniform(600.0, 4 * 3600.0))
    startup = float(rng.uniform(60.0, 240.0)) if launch else None
    target = aim_of(seed, i)
    pl, w, acc = _draw(seed, i, target, lead, duration)
    first = 5.0 if launch else -lead
    obs = draw_observation(rng, pl, w, duration, first)
    timeline = _timeline(rng, pl, duration, startup)
    tex = draw_texture(rng, pl.gpu.sms)
    xid = (
        (float(rng.uniform(0.0, duration)), float(rng.choice([13.0, 31.0, 43.0, 94.0])))
        if rng.random() < 0.02
        else (np.inf, 0.0)
    )
    namespace, name, pods, nodes = job_names(_rng(seed, i, 5), pl)
    at = start + step * np.arange(int(duration // step) + 1, dtype=np.float64)
    windows: list[PodWindow] = []
    for p in range(pl.pods):
        lv = levels(w, pl, acc, p, tex)
        windows.append(pod_window(rng, w, pl, p, lv, obs, timeline, start, at, step, (pods[p], nodes[p]), xid))
    families, coverage = families_and_coverage(windows)
    quality = DataQuality(
        families=families,
        coverage=coverage,
        scrape_interval=obs.schedules["dcgm"][0].interval,
        notes=obs.notes,
        layout=dict(obs.layout),
    )
    window = JobWindow(namespace, name, float(at[0]), float(at[-1]), step, at, tuple(windows), quality)
    tags = job_tags(pl, obs, timeline, duration, short=short, launch=launch, xid=np.isfinite(xid[0]))
    return FamilyAJJob(namespace, name, acc.label, acc.mechanism.value, tags, window)


def generate_family_aj(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyAJJob]:
    """Family AJ's first ``n`` Jobs for ``seed``.

    Args:
        seed: the family's seed; Job ``i`` depends on ``(seed, i)`` only.
        n: how many Jobs (>= 0).
        start: the windows' start, unix seconds.
        step: seconds between a window's timestamps (> 0).

    Raises:
        ValueError: ``n`` negative or ``step`` not positive.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, not {n}")
    if not step > 0:
        raise ValueError(f"step must be > 0, not {step}")
    return [make_job(int(seed), i, float(start), float(step)) for i in range(n)]
