"""Family L's public entry: labelled job windows, deterministic per seed, balanced over the classes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.signals import SIGNALS, Family, Kind
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck, Mechanism
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.familyl import scrape
from bottleneck_operator_dev.familyl.host import io_truth, memory_truth, net_truth
from bottleneck_operator_dev.familyl.truth import Arr, Phases, cpu_truth, gpu_truth, phases, power_clock
from bottleneck_operator_dev.familyl.workloads import CLASS_MECHS, Scenario, scenario

F = Family
# dcgm-exporter's field sets: DEV fields only, the shipped counters files, a custom "full" file.
FIELD_SETS: dict[str, frozenset[Family]] = {
    "dev-only": frozenset({F.DCGM_DEV}),
    "default": frozenset({F.DCGM_DEV, F.DCGM_PROF}),
    "full": frozenset({F.DCGM_DEV, F.DCGM_PROF, F.DCGM_PROF_SM, F.DCGM_PROF_NVLINK, F.DCGM_PROF_PIPES}),
}
INTERVALS = (5.0, 10.0, 15.0, 30.0, 30.0, 60.0, 60.0)


@dataclass(frozen=True)
class FamilyLJob:
    """One labelled job of family L.

    Attributes:
        namespace: the Job's namespace.
        name: the Job's name.
        label: the class of the stage whose removal shortens the step most (the step model's verdict).
        mechanism: how that stage bounds the job (a :class:`Mechanism` value).
        tags: the workload, hardware and cluster variety this job carries.
        window: the telemetry, as the data layer would hand it over.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def _families(rng: np.random.Generator, sc: Scenario) -> tuple[frozenset[Family], str]:
    field_set = str(rng.choice(["dev-only", "default", "default", "full", "full"]))
    if not sc.board.has_prof:
        field_set = "dev-only"
    fams = set(FIELD_SETS[field_set])
    if rng.random() < 0.5:
        fams.add(F.DCGM_POWER_CLOCKS)
    node = rng.random() < 0.9
    for fam, p, ok in (
        (F.CADVISOR, 0.9, True),
        (F.CADVISOR_CFS, 1.0, sc.cpu_limit is not None),
        (F.KSM, 0.85, sc.cpu_limit is not None),
        (F.NODE, 1.0, node),
        (F.NODE_PSI, 0.8, node),
        (F.NODE_IB, 0.85, node and sc.fabric.rdma),
        (F.SIDECAR, 0.6, True),
    ):
        if ok and rng.random() < p:
            fams.add(fam)
    if F.CADVISOR not in fams:
        fams.discard(F.CADVISOR_CFS)
    return frozenset(fams), field_set


def _truth(rng: np.random.Generator, sc: Scenario, ph: Phases, n: int, neigh: int) -> dict[str, Arr]:
    load = neigh * rng.uniform(1.0, 8.0)
    gpu, act = gpu_truth(rng, sc, ph, n)
    out = {**gpu, **power_clock(rng, sc, act, n), **cpu_truth(rng, sc, ph, n, load)}
    io = io_truth(rng, sc, ph, n, neigh * rng.uniform(0.0, 0.08))
    mmap = io["fs_read_bps"] if rng.random() < 0.3 else 0.0 * io["fs_read_bps"]
    out.update(io)
    out.update(memory_truth(rng, sc, n, mmap))
    out.update(net_truth(rng, sc, ph, n, io))
    return out


def _observe(
    rng: np.random.Generator, truth: dict[str, Arr], fams: frozenset[Family], grid: Arr, step: float, interval: float
) -> dict[str, Arr]:
    """The signals of the present families as Prometheus reads them, exporter by exporter."""
    out: dict[str, Arr] = {}
    names = [k for k in truth if k in SIGNALS and SIGNALS[k].family in fams and np.isfinite(truth[k]).any()]
    for exporter in sorted({SIGNALS[k].family.exporter_name for k in names}):
        mine = [k for k in names if SIGNALS[k].family.exporter_name == exporter]
        ivl = 15.0 if exporter == "sidecar" and interval > 15 else interval
        sc = scrape.scraper(rng, grid[0], grid[-1], ivl, 30.0 if exporter == "dcgm" else 0.0, exporter != "ksm")
        gs = [k for k in mine if SIGNALS[k].kind is Kind.GAUGE]
        cs = [k for k in mine if SIGNALS[k].kind is Kind.COUNTER]
        if gs:
            out.update(zip(gs, scrape.gauges(sc, np.stack([truth[k] for k in gs]), grid, step), strict=True))
        if cs:
            rates = np.stack([truth[k] for k in cs])
            raw = scrape.counters(sc, rates, grid, step, rng.uniform(1e3, 1e9, len(cs)))
            out.update(zip(cs, scrape.rate(sc, raw, grid, ivl, step), strict=True))
    return out


def _job(seed: int, i: int, label: Bottleneck, mech: Mechanism, start: float, step: float) -> FamilyLJob:
    rng = np.random.default_rng((seed, i))
    sc = scenario(rng, label, mech)
    n = int(rng.integers(20, 121))
    grid = start + step * np.arange(n, dtype=np.float64)
    ph = phases(rng, n)
    fams, field_set = _families(rng, sc)
    interval = float(rng.choice(INTERVALS))
    name = f"{sc.workload}-{i:04d}"
    pods = []
    for p in range(sc.pods):
        neigh = int(rng.choice([0, 0, 0, 0, 0, 1, 2, 3]))
        sig = _observe(rng, _truth(rng, sc, ph, n, neigh), fams, grid, step, interval)
        block = SignalBlock.of(sig, n)
        pods.append(PodWindow(f"{name}-{p}", f"gpu-node-{i % 97}-{p}", sc.board.model, sc.gpus, block, neigh))
    families, coverage = families_and_coverage(pods)
    notes = ("no PROF fields",) if field_set == "dev-only" else ()
    quality = DataQuality(families, coverage, interval, notes)
    window = JobWindow("family-l", name, float(grid[0]), float(grid[-1]), step, grid, tuple(pods), quality)
    tags = _tags(sc, field_set, interval, ph, pods)
    return FamilyLJob("family-l", name, label, sc.mechanism.value, tags, window)


def _strength(gain: float) -> str:
    return "moderate" if gain < 1.5 else "clear" if gain < 2.0 else "strong"


def _tags(sc: Scenario, field_set: str, interval: float, ph: Phases, pods: list[PodWindow]) -> tuple[str, ...]:
    tags = [sc.workload, sc.board.model, f"storage:{sc.storage.kind}", f"fabric:{sc.fabric.name}"]
    tags += [f"dcgm:{field_set}", f"scrape:{int(interval)}s", f"gain:{_strength(sc.gain)}"]
    if sc.runner_up > 0.85 * sc.gain:
        tags.append("close-second")
    if any(p.co_located_pods for p in pods):
        tags.append("shared-node")
    if ph.ckpt.any():
        tags.append("checkpoint")
    if sc.cpu_limit is not None:
        tags.append("cpu-limit")
    return tuple(tags)


def generate_family_l(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyLJob]:
    """``n`` labelled jobs of family L, the five classes in equal numbers (n a multiple of 5 for exact
    balance) in an order shuffled by ``seed``; job ``i`` draws only from its own generator ``(seed, i)``.

    Args:
        seed: the family's seed.
        n: how many jobs.
        start: every window's first timestamp (unix seconds).
        step: seconds between the windows' timestamps.
    """
    if n < 0 or step <= 0:
        raise ValueError("n must be >= 0 and step > 0")
    order = np.random.default_rng((seed, 0x4C)).permutation(n)
    jobs = []
    for i in range(n):
        rank = int(order[i])
        label = CLASSES[rank % len(CLASSES)]
        mechs = CLASS_MECHS[label]
        mech = mechs[(rank // len(CLASSES)) % len(mechs)]
        jobs.append(_job(seed, i, label, mech, start, step))
    return jobs
