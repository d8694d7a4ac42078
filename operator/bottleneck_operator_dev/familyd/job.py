"""One family-D job: draw it, label it from its step model, simulate it, and read its window."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.sampling import rate_range
from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.familyd.activity import PodActivity, simulate
from bottleneck_operator_dev.familyd.dcgm import dcgm_scrapes
from bottleneck_operator_dev.familyd.host import (
    cadvisor_scrapes,
    ksm_scrapes,
    node_scrapes,
    sidecar_scrapes,
    throttled_share,
)
from bottleneck_operator_dev.familyd.mechanisms import (
    MECHANISMS,
    RUNNERS,
    TARGET_STAGE,
    draw_times,
    make_workload,
    settle_clocks,
    shape_for,
)
from bottleneck_operator_dev.familyd.nodes import node_activity
from bottleneck_operator_dev.familyd.scrapes import GRID, Scrapes, scrape_plan
from bottleneck_operator_dev.familyd.stages import STAGES, Plan, bounding_stage
from bottleneck_operator_dev.familyd.window import keep, sample
from bottleneck_operator_dev.familyd.workload import Workload
from bottleneck_operator_dev.familyd.world import Rng, Setup, draw_setup, finish_setup

HARD_SHARE = 0.25
BORDERLINE_GAIN = 1.2
NAMESPACES = ("ml-research", "vision", "speech", "nlp-train", "recsys", "foundation", "applied-ml", "perception")
NETWORK_STORAGE = ("nfs", "object-store")
CPU_MECHANISM = {
    "throttled": Mechanism.THROTTLED,
    "saturated": Mechanism.SATURATED,
    "few-workers": Mechanism.TOO_FEW_WORKERS,
}


@dataclass(frozen=True)
class Drawn:
    """A job before its telemetry: setup, workload, plan, label and how it was reached."""

    setup: Setup
    workload: Workload
    plan: Plan
    mechanism_draw: str
    stage: str
    gain: float
    runner_up: float


@dataclass(frozen=True)
class Simulated:
    """A job with its telemetry: the draw, the activity and every exporter's samples."""

    drawn: Drawn
    activity: PodActivity
    scrapes: dict[str, Scrapes]
    window: JobWindow


def _mechanism_draw(rng: Rng, target: Bottleneck, memory: str) -> str:
    options = dict(MECHANISMS[target])
    if target is Bottleneck.MEMORY:
        options = {k: v for k, v in options.items() if (k == "hbm") == (memory == "hbm")}
    names = list(options)
    p = np.asarray([options[k] for k in names])
    return names[int(rng.choice(len(names), p=p / p.sum()))]


def draw(rng: Rng, target: Bottleneck, memory: str = "hbm", attempts: int = 200) -> Drawn:
    """A job whose step model is bounded by a stage of ``target`` (for Memory, of ``memory``'s kind).

    Raises:
        RuntimeError: no draw came out with that bound (a defect of the model's ranges).
    """
    for _ in range(attempts):
        mech = _mechanism_draw(rng, target, memory)
        setup = shape_for(rng, draw_setup(rng), mech)
        stage = TARGET_STAGE[mech]
        hard = str(rng.choice(RUNNERS[stage])) if rng.random() < HARD_SHARE else None
        w, plan = settle_clocks(setup, make_workload(rng, setup, mech, draw_times(rng, stage, hard)))
        got, gain, runner = bounding_stage(plan, setup.total_gpus > 1)
        if got == stage:
            return Drawn(finish_setup(setup), w, plan, mech, got, gain, runner)
    raise RuntimeError(f"no draw of {target} bounded the step after {attempts} tries")


def mechanism_of(d: Drawn) -> Mechanism:
    """The mechanism the bounding stage names, refined by how the job reaches it."""
    cls, mech = STAGES[d.stage]
    if cls is Bottleneck.IO:
        return Mechanism.NETWORK_STORAGE if d.workload.io_kind in NETWORK_STORAGE else Mechanism.LOCAL_DISK
    if cls is Bottleneck.CPU:
        return CPU_MECHANISM.get(d.workload.cpu_kind, Mechanism.SATURATED)
    return mech


def tags_of(d: Drawn, sim_scrapes: dict[str, Scrapes]) -> tuple[str, ...]:
    """Searchable facts about a job: its variant, its cluster and whether it is a hard case."""
    s, w = d.setup, d.workload
    tags = [d.mechanism_draw, s.board.model, s.exporters.field_set, f"pods={s.pods}", f"gpus={s.gpus}"]
    if d.runner_up - 1.0 >= 0.5 * (d.gain - 1.0):
        tags.append("mixed")  # removing another class's stage would help at least half as much
    if d.gain < BORDERLINE_GAIN:
        tags.append("borderline")  # another stage is right behind: removing the bound helps little
    tags += ["power-capped"] * (s.power_cap_w < s.board.tdp_w) + ["clocks-locked"] * (s.clock_lock < 1.0)
    tags += ["checkpoints"] * (s.checkpoint is not None) + ["neighbours"] * (max(s.neighbours) > 0)
    if s.fabric is not None:
        tags.append(s.fabric.kind)
    if any(m.any() for sc in sim_scrapes.values() for m in sc.resets.values()):
        tags.append("counter-reset")
    tags += [f"no-{e}" for e in ("cadvisor", "ksm", "node", "sidecar") if Family(e) not in s.exporters.families]
    tags += ["node-memory-pressure"] * w.node_pressure + ["straggler"] * bool((w.slow_gpu < 1.0).any())
    return tuple(tags)


def _grid(setup: Setup, start: float, end: float, step: float) -> np.ndarray:
    lead = max(rate_range(step, si) + 2 * si for si in setup.exporters.interval.values()) + 30.0
    first = start - np.ceil(lead / GRID) * GRID
    return np.arange(first, end + GRID / 2, GRID)


def _pod_signals(rows: dict[str, dict[str, np.ndarray]], setup: Setup, pod: int, length: int) -> dict[str, np.ndarray]:
    fam = setup.exporters.families
    out: dict[str, np.ndarray] = {}
    for exporter, signal_rows in rows.items():
        row = setup.node_of(pod) if exporter == "node" else pod
        out.update({k: v[row] for k, v in keep(signal_rows, fam).items()})
    limit = rows.get("ksm", {}).get("mem_limit_bytes", rows.get("sidecar", {}).get("mem_limit_bytes"))
    out.pop("mem_limit_bytes", None)
    if Family.CADVISOR in fam and (Family.KSM in fam or Family.SIDECAR in fam):
        out["mem_limit_bytes"] = limit[pod] if limit is not None else np.full(length, np.nan)
    return out


def simulate_job(
    rng: Rng,
    d: Drawn,
    namespace: str,
    name: str,
    start: float,
    step: float,
    samples: int,
    own_rng: Rng | None = None,
) -> Simulated:
    """The job's telemetry over ``samples`` timestamps from ``start``, as a window.

    ``own_rng`` draws for the pod's own network bytes alone, so that they leave ``rng``'s stream as it was.
    """
    s, w = d.setup, d.workload
    end = start + (samples - 1) * step
    grid = _grid(s, start, end, step)
    act = simulate(rng, s, w, d.plan, grid)
    node = node_activity(rng, s, w, act)
    thr = throttled_share(s, act, rng)
    plans = {
        e: scrape_plan(rng, grid, s.exporters.interval[e], grid[0])
        for e in ("dcgm", "cadvisor", "ksm", "sidecar", "node")
    }
    scrapes = {"dcgm": dcgm_scrapes(rng, s, w, act, *plans["dcgm"], grid)}
    fam = s.exporters.families
    if Family.CADVISOR in fam:
        scrapes["cadvisor"] = cadvisor_scrapes(rng, s, w, act, thr, Scrapes("cadvisor", *plans["cadvisor"]))
    if Family.KSM in fam:
        scrapes["ksm"] = ksm_scrapes(s, Scrapes("ksm", *plans["ksm"]))
    if Family.SIDECAR in fam:
        scrapes["sidecar"] = sidecar_scrapes(rng, s, w, act, node, thr, Scrapes("sidecar", *plans["sidecar"]), own_rng)
    if Family.NODE in fam:
        scrapes["node"] = node_scrapes(rng, s, node, Scrapes("node", *plans["node"]))
    at = np.asarray(start + step * np.arange(samples), dtype=np.float64)
    rows = sample(scrapes, at, step, s.exporters.interval, s.exporters.prometheus_major)
    suffix = "".join(rng.choice(list("bcdfghjklmnpqrstvwxz2456789"), size=5))
    nodes = [
        f"gpu-{s.board.model.split()[-1].lower()[:8].strip('-')}-{int(rng.integers(100, 999))}" for _ in range(s.nodes)
    ]
    pods = tuple(
        PodWindow(
            pod=f"{name}-{i}-{suffix}",
            node=nodes[s.node_of(i)],
            gpu_model=s.board.model,
            gpu_count=s.gpus,
            signals=SignalBlock.of(_pod_signals(rows, s, i, samples), samples),
            co_located_pods=s.neighbours[s.node_of(i)],
        )
        for i in range(s.pods)
    )
    families, coverage = families_and_coverage(pods)
    quality = DataQuality(families=families, coverage=coverage, scrape_interval=s.exporters.interval["dcgm"])
    window = JobWindow(namespace, name, start, end, step, at, pods, quality)
    return Simulated(d, act, scrapes, window)
