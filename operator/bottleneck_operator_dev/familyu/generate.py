"""Family U: labelled Job windows from contention for shared resources (see docs/familyu.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import rate_range
from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck, Mechanism
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, families_and_coverage
from bottleneck_operator_dev.familyu.allocation import PodPhase, build_phases
from bottleneck_operator_dev.familyu.exporters import TICK, Scraping, draw_families, render_pod, signals_for
from bottleneck_operator_dev.familyu.scenario import Scenario, draw_scenario, pushed
from bottleneck_operator_dev.familyu.step import RESOURCES, label_resource, step_time
from bottleneck_operator_dev.familyu.values import draw_render, pod_values

# The class each resource's doubling names.
CLASS_OF: dict[str, Bottleneck] = {
    "storage": Bottleneck.IO,
    "cpu": Bottleneck.CPU,
    "hostmem": Bottleneck.MEMORY,
    "pcie": Bottleneck.INTERCONNECT,
    "nvlink": Bottleneck.INTERCONNECT,
    "network": Bottleneck.INTERCONNECT,
    "sm": Bottleneck.GPU,
    "hbm": Bottleneck.MEMORY,
}

_RANDOM_DRAWS = 4  # plain draws before the target's demand is pushed
_PUSHES = 30
# a draw whose pushes never bind the target (a rare setting) is dropped for a fresh one; the draws a
# first round already binds are the same as before, so the family's other Jobs do not change
_ROUNDS = 8

# a labelled draw: the scenario, its phases, the resource it binds, each resource's gain, and whether the
# target's demand had to be pushed
Drawn = tuple[Scenario, list[tuple[float, list[PodPhase]]], str, dict[str, float], bool]


@dataclass(frozen=True)
class FamilyUJob:
    """One labelled Job window of family U."""

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def job_class(seed: int, i: int) -> Bottleneck:
    """Job i's class: each block of five consecutive jobs holds every class once, shuffled per block.

    So the classes come in equal numbers as near as ``n`` allows, and a job's class (like the rest
    of it) does not depend on ``n``.
    """
    perm = np.random.default_rng((seed, i // 5, 0x5EED)).permutation(len(CLASSES))
    return CLASSES[int(perm[i % 5])]


def target_resource(rng: np.random.Generator, cls: Bottleneck, i: int) -> str:
    if cls is Bottleneck.MEMORY:
        return "hostmem" if (i // 5) % 2 == 0 else "hbm"  # both mechanisms, alternately
    if cls is Bottleneck.INTERCONNECT:
        return str(rng.choice(["network", "network", "nvlink", "pcie"]))
    return {Bottleneck.IO: "storage", Bottleneck.CPU: "cpu", Bottleneck.GPU: "sm"}[cls]


def _accepts(target: str, got: str) -> bool:
    if CLASS_OF[target] is Bottleneck.INTERCONNECT:
        return CLASS_OF[got] is Bottleneck.INTERCONNECT
    return got == target


def draw_labelled(rng: np.random.Generator, cls: Bottleneck, i: int) -> Drawn:
    """A scenario whose computed label is of class ``cls`` (draws, then pushes the target's demand)."""
    target = target_resource(rng, cls, i)
    others = [r for r in RESOURCES if CLASS_OF[r] is not cls]
    runner = str(rng.choice(others)) if rng.random() < 0.45 else None
    for _ in range(_ROUNDS):
        found = _bind(rng, target, runner)
        if found is not None:
            return found
    raise RuntimeError(f"job {i}: no draw binds {target}")


def _bind(rng: np.random.Generator, target: str, runner: str | None) -> Drawn | None:
    """One round of draws and pushes of ``target``'s demand; None when none binds it."""
    scn = draw_scenario(rng, target, runner)
    for attempt in range(_RANDOM_DRAWS + _PUSHES):
        if attempt:
            scn = (
                draw_scenario(rng, target, runner)
                if attempt < _RANDOM_DRAWS
                else pushed(scn, target, 1.15 if target == "hostmem" else 1.6)
            )
        phases = build_phases(scn)
        got, gains = label_resource([(d, [p.step for p in pods]) for d, pods in phases])
        if _accepts(target, got):
            if rng.random() < 0.5:
                # relax: a lighter target demand (and heavier others) if it still binds
                soft = pushed(scn, target, float(rng.uniform(0.3, 0.8)))
                soft_phases = build_phases(soft)
                soft_got, soft_gains = label_resource([(d, [p.step for p in pods]) for d, pods in soft_phases])
                if _accepts(target, soft_got):
                    return soft, soft_phases, soft_got, soft_gains, attempt >= _RANDOM_DRAWS
            return scn, phases, got, gains, attempt >= _RANDOM_DRAWS
    return None


def _mechanism(resource: str, scn: Scenario, phases: list[tuple[float, list[PodPhase]]]) -> Mechanism:
    if resource == "storage":
        return Mechanism.LOCAL_DISK if scn.storage.startswith("local:") else Mechanism.NETWORK_STORAGE
    if resource == "cpu":
        _, pods = max(phases, key=lambda ph: ph[0])
        worst = max(pods, key=lambda p: p.step.input_time())
        if worst.cpu_bound == "cpu/limit":
            return Mechanism.THROTTLED
        if worst.cpu_bound == "cpu/workers":
            return Mechanism.TOO_FEW_WORKERS
        return Mechanism.SATURATED
    return {
        "hostmem": Mechanism.HOST_MEMORY_PRESSURE,
        "hbm": Mechanism.HBM_BANDWIDTH,
        "pcie": Mechanism.PCIE,
        "nvlink": Mechanism.NVLINK,
        "network": Mechanism.NETWORK,
        "sm": Mechanism.COMPUTE,
    }[resource]


def _pauses(rng: np.random.Generator, tick_t: np.ndarray, start: float) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Checkpoint and evaluation pauses on the truth grid."""
    ckpt = np.zeros(tick_t.size, dtype=bool)
    ev = np.zeros(tick_t.size, dtype=bool)
    tags: list[str] = []
    if rng.random() < 0.5:
        period, length = float(rng.uniform(900, 2700)), float(rng.uniform(60, 240))
        ckpt = ((tick_t - start - float(rng.uniform(0, period))) % period) < length
        tags.append("checkpoints")
    if rng.random() < 0.25:
        period, length = float(rng.uniform(1200, 3600)), float(rng.uniform(120, 360))
        ev = (((tick_t - start - float(rng.uniform(0, period))) % period) < length) & ~ckpt
        tags.append("eval-pauses")
    return ckpt, ev, tags


@dataclass(frozen=True)
class _Grid:
    """The window's evaluation grid and the truth grid under it, with each tick's state."""

    timestamps: npt.NDArray[np.float64]
    t_begin: float
    tick_state: npt.NDArray[np.int64]
    used: tuple[bool, bool, bool]  # running, checkpoint, evaluation states present
    tags: tuple[str, ...]


def _grid(rng: np.random.Generator, scn: Scenario, start: float, step: float, si: float) -> _Grid:
    timestamps = start + step * np.arange(int(rng.integers(40, 161)), dtype=np.float64)
    end = float(timestamps[-1])
    # the truth starts early enough for the first rate() range and a gauge's look-back
    t_begin = start - rate_range(step, si) - 2 * si - TICK
    tick_t = t_begin + TICK * np.arange(math.ceil((end - t_begin) / TICK) + 2)
    # phases over the window (the lead-in before start belongs to the first)
    bounds = start + np.cumsum([0.0, *scn.phases]) * max(end - start, step)
    phase_of_tick = np.clip(np.searchsorted(bounds, tick_t, side="right") - 1, 0, len(scn.phases) - 1)
    ckpt, ev, tags = _pauses(rng, tick_t, start)
    n_ph = len(scn.phases)
    state = (phase_of_tick + n_ph * ckpt + 2 * n_ph * ev).astype(np.int64)
    return _Grid(timestamps, t_begin, state, (True, bool(ckpt.any()), bool(ev.any())), tuple(tags))


# (GPU activity, host activity) while running, during a checkpoint, during an evaluation pass
_STATES = ((1.0, 1.0), (0.03, 0.05), (0.55, 0.3))


def _pods(
    rng: np.random.Generator,
    scn: Scenario,
    phases: list[tuple[float, list[PodPhase]]],
    names: list[str],
    grid: _Grid,
    how: Scraping,
    job: str,
) -> tuple[PodWindow, ...]:
    rd = draw_render(rng, scn)
    job_T = [step_time([p.step for p in pods]) for _, pods in phases]
    upper = np.array(
        [scn.power_cap if n == "power_w" else scn.gpu.max_clock_mhz if n == "sm_clock_mhz" else np.inf for n in names]
    )
    n_ph, node_base = len(phases), int(rng.integers(1, 400))
    out = []
    for p in range(scn.pods):
        states = np.zeros((len(names), 3 * n_ph))
        for k, (_, pods) in enumerate(phases):
            for s, (ga, ha) in enumerate(_STATES):
                if grid.used[s]:
                    vals = pod_values(scn, rd, pods, p, job_T[k], gpu_act=ga, host_act=ha)
                    states[:, k + s * n_ph] = [vals[n] for n in names]
        signals = render_pod(rng, names, states, grid.tick_state, grid.t_begin, grid.timestamps, how, upper)
        out.append(
            PodWindow(
                pod=f"{job}-worker-{p}",
                node=f"gpu-node-{node_base + p:03d}",
                gpu_model=scn.gpu.model,
                gpu_count=scn.gpus_per_pod,
                signals=signals,
                co_located_pods=len(scn.neighbours[p]),
            )
        )
    return tuple(out)


def _quality(rng: np.random.Generator, pods: tuple[PodWindow, ...], si: float) -> DataQuality:
    families, coverage = families_and_coverage(pods)
    notes = []
    if Family.DCGM_PROF not in families:
        notes.append("no PROF fields")
    if Family.SIDECAR not in families:
        notes.append("no collector metrics")
    return DataQuality(
        families=families,
        coverage=coverage,
        scrape_interval=si,
        notes=tuple(notes),
        layout={"dcgm": str(rng.choice(["exported-labels", "pod-labels"])), "node": "pod-join"},
    )


def _near(resource: str, gains: dict[str, float]) -> tuple[str, ...]:
    """A runner-up class whose doubling gains at least 60 % of what the label's does (a hard case)."""
    runner = max((r for r in RESOURCES if r != resource), key=lambda r: gains[r])
    if gains[runner] > 0 and gains[runner] >= 0.6 * gains[resource]:
        return (f"near:{CLASS_OF[runner].value}",)
    return ()


def make_job(seed: int, i: int, start: float, step: float) -> FamilyUJob:
    """Job ``i`` of the family drawn with ``seed``."""
    rng = np.random.default_rng((seed, i))
    scn, phases, resource, gains, forced = draw_labelled(rng, job_class(seed, i), i)
    fields, fams = draw_families(rng, scn)
    names = signals_for(fams, scn)
    si = float(rng.choice([10.0, 15.0, 15.0, 20.0, 30.0, 30.0, 60.0]))
    how = Scraping(si, float(rng.choice([10.0, 30.0, 30.0])), step, float(rng.choice([0.0, 0.01, 0.03, 0.08])), 0.12)
    grid = _grid(rng, scn, start, step, si)
    name = f"u{seed % 1000:03d}-{i:05d}-{scn.workload.family}"
    namespace = str(rng.choice(["ml-research", "vision", "llm-train", "recsys", "speech-ai"]))
    pods = _pods(rng, scn, phases, names, grid, how, name)
    end = float(grid.timestamps[-1])
    window = JobWindow(namespace, name, start, end, step, grid.timestamps, pods, _quality(rng, pods, si))
    tags = (
        *scn.tags,
        f"fields:{fields}",
        f"scrape:{si:g}s",
        f"dcgm-collect:{how.dcgm_collect:g}s",
        f"resource:{resource}",
        *grid.tags,
        *_near(resource, gains),
        *(("pushed",) if forced else ()),
    )
    mechanism = _mechanism(resource, scn, phases)
    return FamilyUJob(namespace, name, CLASS_OF[resource], mechanism.value, tags, window)


def generate_family_u(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyUJob]:
    """``n`` labelled Job windows, all starting at ``start`` on a ``step`` grid.

    Raises:
        ValueError: ``n`` is negative or ``step`` is not positive.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if not step > 0:
        raise ValueError(f"step must be > 0 seconds, got {step}")
    return [make_job(seed, i, float(start), float(step)) for i in range(n)]
