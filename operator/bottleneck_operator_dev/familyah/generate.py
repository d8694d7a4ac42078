"""Family AH: labelled telemetry windows of GPU training Jobs from an operator-level roofline model.

``generate_family_ah(seed, n, start=...)`` hands out ``n`` Jobs; Job ``i`` draws everything from
``numpy.random.default_rng((seed, i))`` and a class intent shuffled in blocks of five, so a Job
never depends on ``n`` and the classes stay balanced.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.signals import SIGNALS, Family, signals_of
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.contract.window import DataQuality, FloatArray, JobWindow, PodWindow, families_and_coverage
from bottleneck_operator_dev.familyah.hardware import pick
from bottleneck_operator_dev.familyah.host import host_values
from bottleneck_operator_dev.familyah.rates import PHASES, gpu_values, load_of
from bottleneck_operator_dev.familyah.roofline import Setup, Step
from bottleneck_operator_dev.familyah.scenario import Env, draw_job
from bottleneck_operator_dev.familyah.scrape import Schedule, Scrape, sample_exporter

TOO_SHORT_S = 300.0  # windows under five minutes are tagged too-short
F = Family
FIELD_SETS = {
    "dev": (F.DCGM_DEV,),
    "default": (F.DCGM_DEV, F.DCGM_PROF),
    "full": (F.DCGM_DEV, F.DCGM_PROF, F.DCGM_PROF_SM, F.DCGM_PROF_NVLINK, F.DCGM_PROF_PIPES, F.DCGM_POWER_CLOCKS),
}
NAMESPACES = ("ml-research", "team-vision", "llm-pretrain", "recsys", "default", "platform-ml")


@dataclass(frozen=True)
class FamilyAHJob:
    """One labelled Job of family AH.

    Attributes:
        namespace: the Job's namespace.
        name: the Job's name.
        label: the class with the largest share of the step's critical path (never Unknown).
        mechanism: how that class limits the step (a ``Mechanism`` value of the label's class).
        tags: what was drawn (hardware, workload, fields, scrape), plus ``too-short`` / ``hard``.
        window: the Job's telemetry window.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def intent_of(seed: int, i: int) -> Bottleneck:
    """Job ``i``'s class intent: each block of five consecutive Jobs holds every class once."""
    order = np.random.default_rng((seed, i // 5, 5)).permutation(len(CLASSES))
    return CLASSES[int(order[i % 5])]


def _schedule(rng: np.random.Generator, t0: float, t1: float, start: float) -> tuple[Schedule, list[str]]:
    """Phases over ``[t0, t1]``: training, with drawn warm-up, periodic evaluation and checkpoint pauses."""
    grid = np.arange(t0, t1 + 5.0, 5.0)
    ph = np.zeros(grid.size, dtype=np.int64)
    dur, tags = t1 - start, []
    if rng.random() < 0.2:
        ph[grid < start + rng.uniform(0.05, 0.2) * dur] = PHASES.index("warmup")
        tags.append("warmup")
    if rng.random() < 0.3:
        period, length = rng.uniform(480, 1500), rng.uniform(60, 180)
        ph[((grid - start - rng.uniform(0, period)) % period) < length] = PHASES.index("eval")
        tags.append("eval")
    if rng.random() < 0.25:
        period, length = rng.uniform(600, 1800), rng.uniform(20, 120)
        ph[((grid - start - rng.uniform(0, period)) % period) < length] = PHASES.index("ckpt")
        tags.append("checkpoint")
    change = np.concatenate([[True], ph[1:] != ph[:-1]])
    return Schedule(grid[change], ph[change]), tags


def _families(rng: np.random.Generator, setup: Setup, env: Env) -> tuple[str, list[Family], list[str]]:
    """(field set, families exported, families missing) of this cluster."""
    fields = str(pick(rng, tuple(FIELD_SETS), (2, 5, 3)))
    fams = list(FIELD_SETS[fields])
    if fields == "default" and rng.random() < 0.3:
        fams.append(F.DCGM_POWER_CLOCKS)
    optional = {F.CADVISOR: 0.97, F.KSM: 0.9, F.NODE: 0.95, F.NODE_PSI: 0.85, F.SIDECAR: 0.75}
    missing: list[str] = []
    for fam, p in optional.items():
        (fams.append(fam) if rng.random() < p else missing.append(fam.value))
    if env.cpu_limit is not None and F.CADVISOR in fams:
        fams.append(F.CADVISOR_CFS)
    if setup.fabric is not None and setup.fabric.rdma and F.NODE in fams and rng.random() < 0.85:
        fams.append(F.NODE_IB)
    if F.SIDECAR in fams and rng.random() < 0.6:
        fams.append(F.SIDECAR_NET)
    if F.NODE not in fams:
        fams = [f for f in fams if f is not F.NODE_PSI]
    return fields, fams, missing


def _scrapes(rng: np.random.Generator) -> dict[str, Scrape]:
    """Scrape settings of each exporter (intervals 5-60 s, dcgm-exporter's collect interval, resets)."""
    out: dict[str, Scrape] = {}
    choices = {
        "dcgm": (15, 30, 60),
        "cadvisor": (10, 15, 30),
        "ksm": (30, 60),
        "node": (15, 30, 60),
        "sidecar": (5, 15, 30),
    }
    for exporter, intervals in choices.items():
        si = float(pick(rng, intervals))
        hold = float(pick(rng, (10.0, 30.0), (1, 2))) if exporter == "dcgm" else 0.0
        resets = (float(rng.uniform(0.2, 0.9)),) if rng.random() < 0.08 else ()
        out[exporter] = Scrape(
            si, min(hold, si) if hold else 0.0, float(rng.uniform(0, 0.03)), resets, float(rng.uniform(0.02, 0.07))
        )
    return out


def _pod_signals(
    rng: np.random.Generator,
    parts: tuple[Setup, Env, Step],
    fams: list[Family],
    schedule: Schedule,
    at: FloatArray,
    scrapes: dict[str, Scrape],
) -> dict[str, FloatArray]:
    """One pod's window signals, exporter by exporter."""
    setup, env, step = parts
    per_phase = []
    for phase in PHASES:
        ld = load_of(setup, step, phase)
        per_phase.append({**gpu_values(setup, env, ld), **host_values(setup, env, ld)})
    signals: dict[str, FloatArray] = {}
    for exporter, scrape in scrapes.items():
        names = [
            n
            for f in fams
            if f.exporter_name == exporter
            for n in signals_of(f, context=True)
            if not (np.isnan(per_phase[0][n]) and SIGNALS[n].kind.value == "gauge")
        ]
        if not names:
            continue
        values = np.array([[row[n] for n in names] for row in per_phase], dtype=np.float64)
        signals.update(sample_exporter(rng, names, values, schedule, at, scrape))
    return signals


def _tags(setup: Setup, env: Env, fields: str, missing: list[str], scrapes: dict[str, Scrape]) -> list[str]:
    """What was drawn, in words (nothing here follows from the label)."""
    fabric = setup.fabric.key if setup.fabric is not None else "none"
    return [
        f"gpu:{setup.gpu.key}",
        f"pods:{setup.pods}",
        f"gpus-per-pod:{setup.gpus_per_pod}",
        f"fabric:{fabric}",
        f"storage:{setup.storage.key}",
        f"arch:{setup.arch.key}",
        f"batch:{setup.batch}",
        f"mode:{setup.mode}",
        f"workers:{setup.workers}",
        f"cpu-limit:{'none' if env.cpu_limit is None else int(env.cpu_limit)}",
        f"power-cap:{round(env.power_cap * 100)}%",
        f"neighbours:{env.neighbours}",
        f"scrape:{int(scrapes['dcgm'].interval)}s",
        f"fields:{fields}",
        *(f"missing:{m}" for m in missing),
        *(f"reset:{e}" for e, sc in scrapes.items() if sc.resets),
    ]


def _job(seed: int, i: int, start: float, step: float) -> FamilyAHJob:
    rng = np.random.default_rng((seed, i))
    setup, env, st, hard = draw_job(rng, intent_of(seed, i))
    short = rng.random() < 0.05
    duration = float(rng.uniform(60, 240)) if short else float(rng.uniform(900, 5400))
    at = start + step * np.arange(max(2, int(duration // step) + 1), dtype=np.float64)
    schedule, phase_tags = _schedule(rng, start - 900.0, float(at[-1]), start)
    fields, fams, missing = _families(rng, setup, env)
    scrapes = _scrapes(rng)
    job = f"train-{setup.arch.key}-{i:05d}"
    pods = []
    for k in range(setup.pods):
        signals = _pod_signals(rng, (setup, env, st), fams, schedule, at, scrapes)
        node = f"{setup.gpu.key}-node-{int(rng.integers(0, 1000)):03d}"
        pods.append(
            PodWindow(
                f"{job}-{k}-{int(rng.integers(0, 36**5)):x}",
                node,
                setup.gpu.model_name,
                setup.gpus_per_pod,
                signals,
                env.neighbours,
            )
        )
    families, coverage = families_and_coverage(pods)
    layout = {
        "dcgm": str(pick(rng, ("exported-labels", "pod-labels"))),
        "node": str(pick(rng, ("instance", "node-label"))),
    }
    notes = tuple(f"no {f} fields" for f in ("dcgm_prof",) if F.DCGM_PROF not in fams)
    quality = DataQuality(families, coverage, scrapes["dcgm"].interval, notes, layout)
    window = JobWindow(str(pick(rng, NAMESPACES)), job, float(at[0]), float(at[-1]), step, at, tuple(pods), quality)
    tags = [*_tags(setup, env, fields, missing, scrapes), f"phases:{'+'.join(phase_tags) or 'train'}"]
    tags += [f"layout:{k}={v}" for k, v in layout.items()]
    tags += ["too-short"] if duration < TOO_SHORT_S else []
    tags += ["hard"] if hard else []
    return FamilyAHJob(window.namespace, job, st.label, st.mechanism.value, tuple(tags), window)


def generate_family_ah(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyAHJob]:
    """``n`` labelled Jobs of family AH.

    Args:
        seed: the family's seed; Job ``i`` draws from ``numpy.random.default_rng((seed, i))``.
        n: how many Jobs (>= 0).
        start: the windows' first timestamp, unix seconds.
        step: seconds between a window's timestamps (> 0).

    Raises:
        ValueError: ``n`` negative or ``step`` not positive.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, not {n}")
    if not step > 0:
        raise ValueError(f"step must be > 0, not {step}")
    return [_job(seed, i, start, step) for i in range(n)]
