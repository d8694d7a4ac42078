"""Family S: labelled job windows built from an event timeline of each pod's training steps."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck, Mechanism
from bottleneck_operator.contract.window import DataQuality, FloatArray, JobWindow, PodWindow, families_and_coverage
from bottleneck_operator_dev.familys.exporters import Track, rates_of
from bottleneck_operator_dev.familys.label import Label, label_of
from bottleneck_operator_dev.familys.readings import LOOKBACK, Pod, pod_signals
from bottleneck_operator_dev.familys.scenario import Scenario, draw, mechanism_of
from bottleneck_operator_dev.familys.timeline import TICK, Segment, paint, simulate

NAMESPACES = ("vision", "nlp-research", "recsys", "genai", "graph-ml", "ml-platform")
MAX_ATTEMPTS = 40  # draws per job until the timeline's label is the job's class


@dataclass(frozen=True)
class FamilySJob:
    """One labelled job window of family S.

    Attributes:
        namespace, name: the Job.
        label: the class whose stage's removal shortens the timeline most.
        mechanism: how that stage limits the job (a value of the contract's ``Mechanism``).
        tags: what the job is made of (workload, GPU, fabric, storage, field set, hard/easy, ...).
        window: the job's telemetry as the data layer would hand it to the analysis.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def _pause(length: float, channels: dict[str, float], pattern: dict[str, float] | None = None) -> Segment:
    """A checkpoint or evaluation stretch: constant activity, or a periodic on/off pattern (share on)."""
    n = max(1, round(length / TICK))
    out = {k: np.full(n, v) for k, v in channels.items()}
    for k, share in (pattern or {}).items():
        out[k] = ((np.arange(n) % 20) < round(20 * share)).astype(float)
    return Segment(n * TICK, out)


def _blocks(
    rng: np.random.Generator, lengths: tuple[float, float, float], t0: float, t_end: float, every: tuple[float, float]
) -> tuple[FloatArray, npt.NDArray[np.int64]]:
    """The window as training stretches (kind 0) with a checkpoint (1) and an evaluation (2) every so often.

    A length of 0 leaves that pause out. Returns the blocks' start times and kinds.
    """
    train, ckpt, ev = lengths
    starts: list[float] = []
    kinds: list[int] = []
    t = t0 - float(rng.uniform(0, train))
    next_ckpt = t0 + float(rng.uniform(0, every[0]))
    next_eval = t0 + float(rng.uniform(0, every[1]))
    while t < t_end:
        starts.append(t)
        if ckpt > 0 and t >= next_ckpt:
            kinds.append(1)
            t += ckpt
            next_ckpt += every[0]
        elif ev > 0 and t >= next_eval:
            kinds.append(2)
            t += ev
            next_eval += every[1]
        else:
            kinds.append(0)
            t += train
    return np.asarray(starts), np.asarray(kinds, dtype=np.int64)


# Which stage a job of each class is drawn around (Memory alternates its two mechanisms).
def _target_stage(rng: np.random.Generator, cls: Bottleneck, index: int) -> str:
    if cls is Bottleneck.MEMORY:
        return "host_stall" if (index // len(CLASSES)) % 2 == 0 else "hbm"
    if cls is Bottleneck.INTERCONNECT:
        return "collective" if rng.random() < 0.7 else "h2d"
    return {Bottleneck.IO: "read", Bottleneck.CPU: "decode", Bottleneck.GPU: "compute"}[cls]


FIELD_SETS = {
    "dev-only": {Family.DCGM_DEV},
    "default": {Family.DCGM_DEV, Family.DCGM_PROF},
    "full": {Family.DCGM_DEV, Family.DCGM_PROF, Family.DCGM_PROF_SM, Family.DCGM_PROF_PIPES, Family.DCGM_POWER_CLOCKS},
}


def _conditions(rng: np.random.Generator, sc: Scenario) -> tuple[dict[str, float], set[Family], list[str]]:
    """The cluster around the job: exporters present, scrape intervals, misses, restarts, neighbours."""
    field_set = str(rng.choice(list(FIELD_SETS), p=[0.2, 0.4, 0.4]))
    fams = set(FIELD_SETS[field_set])
    if field_set == "full" and sc.gpu.nvlink_bps > 0 and rng.random() < 0.7:
        fams.add(Family.DCGM_PROF_NVLINK)
    for fam, p in ((Family.CADVISOR, 0.95), (Family.KSM, 0.85), (Family.NODE, 0.92), (Family.SIDECAR, 0.7)):
        if rng.random() < p:
            fams.add(fam)
    if Family.CADVISOR in fams and sc.cpu_limit is not None:
        fams.add(Family.CADVISOR_CFS)
    if Family.NODE in fams and rng.random() < 0.9:
        fams.add(Family.NODE_PSI)
    if Family.NODE in fams and sc.fabric in ("ib", "roce") and rng.random() < 0.85:
        fams.add(Family.NODE_IB)
    si = float(rng.choice((10.0, 15.0, 30.0, 60.0), p=[0.15, 0.35, 0.4, 0.1]))
    shared = any(sc.neighbours)
    pressure = sc.host_pressure
    cfg = {
        "si_dcgm": si,
        "collect": float(rng.choice((10.0, 15.0, 30.0))),
        "phase": float(rng.uniform(0, 30.0)),
        "si_cadvisor": float(rng.choice((10.0, 15.0, 30.0))),
        "si_ksm": 30.0,
        "si_node": float(rng.choice((15.0, 30.0, 60.0))) if rng.random() < 0.5 else si,
        "si_sidecar": float(rng.choice((10.0, 15.0, 30.0))),
        "misses": float(rng.uniform(0.0, 0.04)),
        "resets": 0.15,
        "fb": float(rng.uniform(0.86, 0.98)) if sc.workload.min_memory_gb >= 24 else float(rng.uniform(0.35, 0.97)),
        "nb_cores": sc.neighbour_cores,
        "nb_dstate": float(rng.uniform(0, 1.5)) if shared else 0.0,
        "nb_disk": float(rng.uniform(0, 4e8)) if shared else float(rng.uniform(0, 5e6)),
        "nb_disk_busy": float(rng.uniform(0, 0.4)) if shared else 0.0,
        "nb_faults": float(rng.uniform(0, 300)) if shared else float(rng.uniform(0, 5)),
        "nb_net": float(rng.uniform(0, 2e9)) if shared else float(rng.uniform(1e5, 5e6)),
        "nb_ib": float(rng.uniform(0, 5e9)) if shared else 0.0,
        "nb_psi": float(rng.uniform(0, 0.05)) if shared else 0.0,
        "req": float(rng.choice((131072.0, 262144.0, 1048576.0))),
        "mem_avail": float(rng.uniform(0.01, 0.05)) if pressure else float(rng.uniform(0.25, 0.8)),
        "swap_used": float(rng.uniform(0.2, 0.9)) if pressure else 0.0,
    }
    tags = [f"fields:{field_set}", f"scrape:{int(si)}s", f"collect:{int(cfg['collect'])}s"]
    if Family.SIDECAR not in fams:
        tags.append("no-sidecar")
    return cfg, fams, tags


def _labelled(rng: np.random.Generator, cls: Bottleneck, index: int) -> tuple[Scenario, Label]:
    """Draw until the timeline's label is the job's class (for Memory: the intended mechanism's stage)."""
    stage = _target_stage(rng, cls, index)
    hard = bool(rng.random() < 0.35)
    for attempt in range(MAX_ATTEMPTS):
        sc = draw(rng, stage, hard and attempt < MAX_ATTEMPTS // 2)
        lab = label_of(sc.costs)
        if (lab.stage == stage) if cls is Bottleneck.MEMORY else (lab.bottleneck is cls):
            break
        if attempt % 4 == 3 and cls is Bottleneck.INTERCONNECT:
            stage = "collective" if stage == "h2d" else "h2d"
    return sc, lab


def _kernels(rng: np.random.Generator) -> dict[str, float]:
    """How busy each unit is inside each kind of kernel, for this job's code."""
    return {
        "sm_c": float(rng.uniform(0.85, 0.98)),
        "sm_m": float(rng.uniform(0.7, 0.92)),  # warps waiting on memory count as active
        "sm_nccl": float(rng.uniform(0.05, 0.2)),  # NCCL kernels run on a few SMs
        "occ_c": float(rng.uniform(0.3, 0.6)),
        "occ_m": float(rng.uniform(0.4, 0.8)),
        "dram_c": float(rng.uniform(0.15, 0.4)),
        "dram_m": float(rng.uniform(0.72, 0.86)),  # ~0.8 is the practical peak
        "copy_c": float(rng.uniform(0.25, 0.5)),
    }


def _pods(
    rng: np.random.Generator, sc: Scenario, at: FloatArray, step: float, name: str
) -> tuple[list[PodWindow], dict[str, float], set[Family], list[str]]:
    """Every pod's window: its timeline laid across the window with pauses, read by the cluster's exporters."""
    run = simulate(sc.costs, record=True)
    every = (float(rng.uniform(600.0, 1800.0)), float(rng.uniform(900.0, 2400.0)))
    with_ckpt, with_eval = bool(rng.random() < 0.6), bool(rng.random() < 0.4)
    cfg, fams, tags = _conditions(rng, sc)
    vals = _kernels(rng)
    ckpt = _pause(float(rng.uniform(10.0, 60.0)), {"d2h": 0.2, "ckpt_cpu": 1.0, "wait": 1.0})
    ev = _pause(
        float(rng.uniform(20.0, 90.0)), {"decode": 0.5 * sc.workers, "wait": 0.15}, {"compute": 0.6, "hbm": 0.25}
    )
    lengths = (run.wall, ckpt.length if with_ckpt else 0.0, ev.length if with_eval else 0.0)
    starts, kinds = _blocks(rng, lengths, float(at[0]) - LOOKBACK, float(at[-1]) + 120.0, every)
    pause_rates = [rates_of(ckpt, sc, vals), rates_of(ev, sc, vals)]
    pods = []
    for p in range(sc.pods):
        track = Track(starts, kinds, [rates_of(paint(run.events[p], run.origin, run.wall), sc, vals), *pause_rates])
        pods.append(
            PodWindow(
                pod=f"{name}-{p}-{rng.integers(0, 36**5):x}"[:63],
                node=f"gpu-node-{rng.integers(0, 10000):04d}",
                gpu_model=sc.gpu.model_name,
                gpu_count=sc.gpus_per_pod,
                signals=pod_signals(Pod(rng, sc, p, track, at, step, cfg, fams)),
                co_located_pods=sc.neighbours[p],
            )
        )
    tags += ["checkpoints"] if with_ckpt else []
    tags += ["evaluation"] if with_eval else []
    return pods, cfg, fams, tags


def _tags(sc: Scenario, lab: Label) -> list[str]:
    tags = [
        f"workload:{sc.workload.name}",
        f"gpu:{sc.gpu.model_name}",
        f"gpus:{sc.gpus_per_pod}x{sc.pods}",
        f"storage:{sc.storage.kind}",
        f"fabric:{sc.fabric}",
        f"stage:{lab.stage}",
        "hard" if lab.margin < 0.25 else "easy",
        f"runner-up:{lab.runner_up or 'none'}",
    ]
    tags += ["power-capped"] if sc.power_limit_w < sc.gpu.tdp_w else []
    tags += ["shared-node"] if any(sc.neighbours) else []
    return tags


def _job(seed: int, index: int, cls: Bottleneck, start: float, step: float) -> FamilySJob:
    rng = np.random.default_rng((seed, index))
    sc, lab = _labelled(rng, cls, index)
    mechanism: Mechanism = mechanism_of(lab.stage, sc)
    m = max(2, round(float(rng.uniform(900.0, 2400.0)) / step) + 1)
    at = start + step * np.arange(m, dtype=np.float64)
    name = f"{sc.workload.name.replace('_', '-')}-{rng.integers(0, 16**5):05x}"
    pods, cfg, fams, tags = _pods(rng, sc, at, step, name)
    families, coverage = families_and_coverage(pods)
    notes = [
        text
        for fam, text in ((Family.DCGM_PROF, "no PROF fields"), (Family.SIDECAR, "no collector sidecar"))
        if fam not in fams
    ]
    quality = DataQuality(families=families, coverage=coverage, scrape_interval=cfg["si_dcgm"], notes=tuple(notes))
    namespace = str(rng.choice(NAMESPACES))
    window = JobWindow(namespace, name, float(at[0]), float(at[-1]), step, at, tuple(pods), quality)
    tags += _tags(sc, lab) + ([] if lab.bottleneck is cls else ["off-target"])
    return FamilySJob(namespace, name, lab.bottleneck, mechanism.value, tuple(tags), window)


def generate_family_s(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilySJob]:
    """``n`` labelled job windows of family S.

    Args:
        seed: the family's seed; job ``i`` draws only from ``default_rng((seed, i))``.
        n: how many jobs (the five classes in equal numbers as near as ``n`` allows).
        start: every window's first timestamp, unix seconds.
        step: seconds between timestamps.

    Raises:
        ValueError: ``n`` is negative or ``step`` is not positive.
    """
    if n < 0:
        raise ValueError(f"n must be 0 or more, not {n}")
    if not step > 0:
        raise ValueError(f"step must be positive seconds, not {step}")
    return [_job(seed, i, class_of(seed, i), float(start), float(step)) for i in range(n)]


def class_of(seed: int, index: int) -> Bottleneck:
    """Job ``index``'s class: each run of five jobs holds the five classes in a shuffled order.

    The order of a run comes from its own generator, so a job's class does not depend on ``n``, and
    any ``n`` holds every class ``n // 5`` or ``n // 5 + 1`` times.
    """
    block, within = divmod(index, len(CLASSES))
    order = np.random.default_rng((seed, block, len(CLASSES))).permutation(len(CLASSES))
    return CLASSES[int(order[within])]


__all__ = ["FamilySJob", "class_of", "generate_family_s"]
