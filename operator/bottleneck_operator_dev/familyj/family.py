"""Family J: the public entry. Jobs of the five classes in equal numbers, each from its own generator."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import CLASSES, Bottleneck, Mechanism
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.familyj import recipes
from bottleneck_operator_dev.familyj.plan import Plan, Rng, draw_base, loguniform
from bottleneck_operator_dev.familyj.render import keep_families, render
from bottleneck_operator_dev.familyj.scrape import Scrape, Scraper
from bottleneck_operator_dev.familyj.stepmodel import Account, Factors, account, stages
from bottleneck_operator_dev.familyj.variety import draw_cluster, draw_factors, draw_telemetry, make_grid, pauses

# Each class's mechanisms, drawn in turn; Memory alternates host pressure and HBM bandwidth.
_MECHANISMS: dict[Bottleneck, tuple[Mechanism, ...]] = {
    Bottleneck.IO: (Mechanism.LOCAL_DISK, Mechanism.NETWORK_STORAGE),
    Bottleneck.CPU: (Mechanism.THROTTLED, Mechanism.SATURATED, Mechanism.TOO_FEW_WORKERS),
    Bottleneck.INTERCONNECT: (Mechanism.NETWORK, Mechanism.NETWORK, Mechanism.NVLINK, Mechanism.PCIE),
    Bottleneck.GPU: (Mechanism.COMPUTE,),
    Bottleneck.MEMORY: (Mechanism.HOST_MEMORY_PRESSURE, Mechanism.HBM_BANDWIDTH),
}
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
_TEAMS = ("ml-research", "vision", "speech", "ranking", "llm-platform", "genai", "perception", "applied-ml")


@dataclass(frozen=True)
class FamilyJJob:
    """One labelled job of family J.

    Attributes:
        namespace: the Job's namespace.
        name: the Job's name (says nothing of its class).
        label: the class whose removal shortens the step most, by the job's own step model.
        mechanism: how that class binds (a :class:`Mechanism` value).
        tags: what the job and its cluster are like (workload, storage, fabric, field set, ...).
        window: the telemetry as the data layer would hand it to the analysis.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def generate_family_j(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyJJob]:
    """Family J's ``n`` jobs: the five classes in equal numbers (±1), in an order shuffled by ``seed``.

    Args:
        seed: the family's seed; job ``i`` is drawn from its own generator seeded ``(seed, i)``.
        n: number of jobs.
        start: the start of every window, unix seconds (never the clock).
        step: seconds between the window's timestamps.

    Returns:
        The jobs, in order.
    """
    if n < 0 or step <= 0:
        raise ValueError(f"n must be >= 0 and step > 0, not n={n}, step={step}")
    # the order's generator is keyed apart from every job's (seed, i)
    order = np.random.default_rng([seed, 1 << 40]).permutation(n)
    labels = [CLASSES[int(k) % len(CLASSES)] for k in order]
    seen: dict[Bottleneck, int] = {}
    jobs = []
    for i, cls in enumerate(labels):
        k = seen.get(cls, 0)
        seen[cls] = k + 1
        mechs = _MECHANISMS[cls]
        jobs.append(build_job(seed, i, cls, mechs[k % len(mechs)], start=start, step=step)[0])
    return jobs


def _draw_plan(rng: Rng, cls: Bottleneck, mech: Mechanism) -> Plan | None:
    """A plan whose nominal step is bound by ``cls``, or None when this draw cannot be."""
    plan = draw_base(rng, cls.value, mech.value)
    draw_cluster(rng, plan)
    recipes.prepare(rng, plan, cls)
    mixed = recipes.rival(rng, plan, cls) if rng.random() < 0.2 else None
    if mixed is not None:
        plan.tags.append(f"rival:{mixed.value}")
    borderline = mixed is not None or rng.random() < 0.1
    margin = rng.uniform(1.03, 1.25) if borderline else rng.uniform(1.3, 3.0)
    # how much faster the job would run without its bottleneck: mild, moderate or severe
    severity = float(
        rng.choice([rng.uniform(1.1, 1.35), rng.uniform(1.35, 2.0), loguniform(rng, 2.0, 5.0)], p=[0.35, 0.4, 0.25])
    )
    if borderline:
        plan.tags.append("borderline")
    return plan if recipes.settle(plan, cls, margin, 1.05 if borderline else severity) else None


def build_job(
    seed: int, i: int, cls: Bottleneck, mech: Mechanism, *, start: float, step: float
) -> tuple[FamilyJJob, Scrape, Account]:
    """One job of the family, with its raw scrapes and its step account (for tests)."""
    rng = np.random.default_rng([seed, i])
    samples = int(rng.integers(20, 121))
    for _ in range(40):
        plan = _draw_plan(rng, cls, mech)
        if plan is None:
            continue
        tel = draw_telemetry(rng, plan)
        grid = make_grid(start, step, samples, max(tel.scrape.values()))
        f = draw_factors(rng, plan, grid)
        pause = pauses(rng, plan, grid)
        training = np.flatnonzero(pause[grid.window] == 0.0) + grid.window.start
        acc = _agreed(plan, f, training, cls)
        if acc is not None:
            break
    else:
        raise RuntimeError(f"family J job {i} (seed {seed}): no draw bound by {cls.value}")
    sc = Scraper(rng, plan, grid, tel, step)
    signals = keep_families(render(rng, plan, stages(plan, f), f, pause, sc), tel.families)
    name = f"fj-{i:04d}-{int(rng.integers(16**5)):05x}"
    pods = _pods(rng, plan, name, signals)
    families, coverage = families_and_coverage(pods)
    window = JobWindow(
        namespace=str(rng.choice(_TEAMS)),
        job=name,
        start=float(grid.timestamps[0]),
        end=float(grid.timestamps[-1]),
        step=step,
        timestamps=grid.timestamps,
        pods=pods,
        quality=DataQuality(
            families=families, coverage=coverage, scrape_interval=tel.scrape["dcgm"], layout=tel.layout
        ),
    )
    tags = (
        f"workload:{plan.workload}",
        f"board:{plan.board.model_name}",
        f"scrape:{tel.scrape['dcgm']:g}s",
        *plan.tags,
    )
    if tel.restart is not None:
        tags += (f"exporter-restart:{tel.restart[0]}",)
    job = FamilyJJob(window.namespace, name, acc.label, _mechanism(plan, acc), tags, window)
    return job, sc.raw, acc


def _mechanism(plan: Plan, acc: Account) -> str:
    """The mechanism, read from the account where the class has two paths the model tells apart."""
    if acc.label is Bottleneck.MEMORY:
        host = acc.hostmem_saving > acc.hbm_saving
        return (Mechanism.HOST_MEMORY_PRESSURE if host else Mechanism.HBM_BANDWIDTH).value
    if acc.label is Bottleneck.INTERCONNECT:
        if acc.h2d_saving > acc.comm_saving or plan.pcie_peer:
            return Mechanism.PCIE.value
        return (Mechanism.NETWORK if plan.nodes > 1 and plan.comm_intra_share < 0.5 else Mechanism.NVLINK).value
    return plan.mechanism


def _pods(rng: Rng, plan: Plan, job: str, signals: dict[str, FloatArray]) -> tuple[PodWindow, ...]:
    names = sorted(signals)
    block = np.stack([signals[k] for k in names], axis=1) if names else np.zeros((plan.pods, 0, 0))
    pool = f"{plan.board.model_name.split()[-1].lower().replace('-', '')[:10]}-{int(rng.integers(100, 999))}"
    out = []
    for p in range(plan.pods):
        pod = f"{job}-{p}-{int(rng.integers(36**5)):05x}"[:63]
        node = f"gpu-{pool}-{plan.node_of(p):02d}"
        out.append(
            PodWindow(
                pod=pod,
                node=node,
                gpu_model=plan.board.model_name,
                gpu_count=plan.gpus_per_pod,
                signals=SignalBlock(names, block[p]),
                co_located_pods=plan.neighbours,
            )
        )
    return tuple(out)


def _agreed(plan: Plan, f: Factors, training: IntArray, cls: Bottleneck) -> Account | None:
    """The account over the training ticks, strengthening the class a little if noise tipped it."""
    sel = training if training.size else np.arange(f.work.shape[1])
    for _ in range(8):
        acc = account(plan, f, sel)
        if acc.label is cls and _mechanism(plan, acc) == plan.mechanism:
            return acc
        for name in recipes.knobs_of(plan, cls):
            setattr(plan, name, getattr(plan, name) * 1.15)
    return None
