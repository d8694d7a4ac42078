"""Family AG: labelled telemetry windows of GPU training Jobs, drawn blind from physics and public figures.

Job ``i`` of seed ``s`` draws everything from ``numpy.random.default_rng((s, i))``; its class intent
comes from a shuffled block of five (one per class) that depends on ``s`` and ``i // 5`` only, so a
Job never depends on how many Jobs are asked for.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.signals import SIGNALS
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck, Mechanism
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.familyag.assemble import pod_signals
from bottleneck_operator_dev.familyag.counterfactual import Outcome, judge
from bottleneck_operator_dev.familyag.exporters import PodContext
from bottleneck_operator_dev.familyag.host import settle_memory
from bottleneck_operator_dev.familyag.hostlevels import host_levels, memory_state, steady
from bottleneck_operator_dev.familyag.intents import tilt
from bottleneck_operator_dev.familyag.observe import Observation, draw_observation
from bottleneck_operator_dev.familyag.profile import Profile, gpu_levels
from bottleneck_operator_dev.familyag.scenario import Scenario, draw_scenario, refit
from bottleneck_operator_dev.familyag.segments import pod_timeline
from bottleneck_operator_dev.familyag.stages import StepCosts, step_costs
from bottleneck_operator_dev.familyag.timeline import Run, simulate

ATTEMPTS = 6  # draws per Job before a Job off its intent, or too close to call, is kept as it is
_BLOCK_KEY = 0x4147  # keeps the block generator's key apart from the Jobs' (seed, i)
NAMESPACES = ("ml-research", "vision", "speech-lab", "recsys", "llm-train", "platform-ml")


@dataclass(frozen=True)
class FamilyAGJob:
    """One labelled Job of family AG.

    Attributes:
        namespace: the Job's namespace.
        name: the Job's name.
        label: the class whose stages, made ample, shorten the step most (never Unknown).
        mechanism: how that class limits the Job (a ``Mechanism`` value of the label's class).
        tags: what was drawn (hardware, workload, fields, scrape, ...), plus ``too-short`` and ``hard``.
        window: the Job's telemetry as the data layer would hand it over.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def class_intent(seed: int, i: int) -> Bottleneck:
    """The class Job ``i`` is drawn towards: block ``i // 5`` is a shuffle of the five classes."""
    order = np.random.default_rng((seed, i // len(CLASSES), _BLOCK_KEY)).permutation(len(CLASSES))
    return CLASSES[int(order[i % len(CLASSES)])]


def _better(new: tuple[Scenario, Outcome], old: tuple[Scenario, Outcome] | None, intent: Bottleneck) -> bool:
    if old is None:
        return True
    on_new, on_old = new[1].label is intent, old[1].label is intent
    if on_new != on_old:
        return on_new
    return new[1].margin > old[1].margin


def draw_job(rng: np.random.Generator, intent: Bottleneck) -> tuple[Scenario, Outcome]:
    """Draw Jobs towards ``intent`` until one is clearly of that class (at most :data:`ATTEMPTS` draws)."""
    best: tuple[Scenario, Outcome] | None = None
    for _ in range(ATTEMPTS):
        sc = settle_memory(refit(tilt(draw_scenario(rng), intent, rng), rng))
        outcome = judge(sc)
        if _better((sc, outcome), best, intent):
            best = (sc, outcome)
        if outcome.label is intent and outcome.clear:
            break
    assert best is not None
    return best


def _fabric_bytes(spans: list[tuple[float, float, float]]) -> float:
    return float(sum((e - s) * v for s, e, v in spans))


def pod_context(
    rng: np.random.Generator, sc: Scenario, obs: Observation, run: Run, costs: StepCosts, p: int, start: float
) -> PodContext:
    """Pod ``p``'s timeline and exporter context, from a recorded run (pods beyond the simulated ones repeat them).

    Args:
        rng: the Job's generator.
        sc: the Job.
        obs: how it is observed.
        run: the recorded simulation of the Job's steps.
        costs: the stage costs it ran with.
        p: the pod's index.
        start: the Job's start, unix seconds.

    Returns:
        The pod's context.
    """
    q = p % len(costs.pods)
    trace, pc = run.traces[q], costs.pods[q]
    span = trace.end - trace.start
    fabric = _fabric_bytes(trace.spans.get("fabric", []))
    st = steady(run.shares[q], span, trace.steps, sc.workers, costs.comm, fabric)
    train = Profile.of(
        span, gpu_levels(trace, costs.comm, sc.gpus_per_pod), host_levels(sc, pc.host, st, obs.spin, obs.floors)
    )
    timeline = pod_timeline(rng, sc, pc.host, obs, train, start)
    return PodContext(timeline, pc, memory_state(sc, pc.host, obs.fb_frac), sc, obs, start)


def build_window(
    rng: np.random.Generator, sc: Scenario, obs: Observation, names: tuple[str, str], start: float, step: float
) -> JobWindow:
    """Simulate the Job's steps, lay out each pod's timeline, scrape it, and read the signals.

    Args:
        rng: the Job's generator.
        sc: the Job.
        obs: how it is observed.
        names: (namespace, Job name).
        start: the Job's start and the window's start, unix seconds.
        step: the window's step, seconds.

    Returns:
        The window.
    """
    costs = step_costs(sc)
    run = simulate(costs, sc.gpus_per_pod, record=True)
    timestamps = np.asarray(start + step * np.arange(int(np.floor(obs.duration / step)) + 1), dtype=np.float64)
    pods = []
    rack = int(rng.integers(10, 90)) * 10  # the pods sit on neighbouring nodes of one rack, one pod a node
    for p in range(sc.pods):
        signals = pod_signals(rng, pod_context(rng, sc, obs, run, costs, p, start), timestamps, step)
        pods.append(
            PodWindow(
                pod=f"{names[1]}-worker-{p}",
                node=f"gpu-{sc.gpu.key}-{rack + p:03d}",
                gpu_model=sc.gpu.model_name,
                gpu_count=sc.gpus_per_pod,
                signals=SignalBlock.of(signals, timestamps.size),
                co_located_pods=sc.neighbours.count,
            )
        )
    families, coverage = families_and_coverage(pods)
    notes = tuple(note for note, on in (("no PROF fields", obs.fields == "dev"),) if on)
    quality = DataQuality(families, coverage, obs.scrape["cadvisor"], notes, dict(obs.layout))
    return JobWindow(names[0], names[1], start, start + obs.duration, step, timestamps, tuple(pods), quality)


def job_tags(sc: Scenario, obs: Observation, hard: bool) -> tuple[str, ...]:
    """What was drawn for the Job, plus ``too-short`` and ``hard`` where they apply."""
    tags = [
        f"gpu:{sc.gpu.key}",
        f"pods:{sc.pods}",
        f"gpus-per-pod:{sc.gpus_per_pod}",
        f"fabric:{sc.fabric.key if sc.fabric else 'none'}",
        f"storage:{sc.storage.key}",
        f"scrape:{obs.scrape['cadvisor']:g}s",
        f"collect:{obs.collect:g}s",
        f"fields:{obs.fields}",
        f"workload:{sc.model.kind}",
        f"model:{sc.model.name}",
        f"comm:{sc.model.comm if sc.ranks > 1 else 'none'}",
        f"mode:{sc.mode}",
        f"loader:{'gpu-decode' if sc.gpu_decode else 'cpu'}",
        f"labels:{obs.layout['dcgm']}/{obs.layout['node']}",
        f"neighbours:{sc.neighbours.count}",
        f"cpu-limit:{'yes' if sc.cpu_limit is not None else 'no'}",
        f"swap:{sc.swap}",
        *(f"missing:{f.value}" for f in sorted({s.family for s in SIGNALS.values()} - obs.families)),
        *(f"reset:{name}" for name, _ in obs.resets),
        *(f"gap:{name}" for name, _, _ in obs.gaps),
        *sorted({f"pauses:{kind}" for kind, _, _ in obs.pauses}),
    ]
    if sc.power_cap < sc.gpu.tdp_w:
        tags.append(f"power-cap:{sc.power_cap:.0f}w")
    if obs.too_short:
        tags.append("too-short")
    if hard:
        tags.append("hard")
    return tuple(tags)


def make_job(seed: int, i: int, *, start: float, step: float) -> FamilyAGJob:
    """Job ``i`` of ``seed``: drawn, labelled by counterfactual, observed and windowed."""
    rng = np.random.default_rng((seed, i))
    sc, outcome = draw_job(rng, class_intent(seed, i))
    obs = draw_observation(rng, sc)
    namespace = NAMESPACES[int(rng.integers(len(NAMESPACES)))]
    name = f"ag-{sc.model.name.replace('.', '-')}-{i:05d}-{int(rng.integers(16**4)):04x}"
    window = build_window(rng, sc, obs, (namespace, name), start, step)
    mechanism = Mechanism(outcome.mechanism)
    return FamilyAGJob(namespace, name, outcome.label, mechanism.value, job_tags(sc, obs, not outcome.clear), window)


def generate_family_ag(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyAGJob]:
    """``n`` labelled Jobs of family AG.

    Args:
        seed: the family's seed; Job ``i`` depends on ``seed`` and ``i`` only.
        n: how many Jobs (>= 0).
        start: the Jobs' start, and their windows', unix seconds.
        step: seconds between the windows' timestamps (> 0).

    Returns:
        The Jobs, in order.

    Raises:
        ValueError: ``n`` is negative or ``step`` is not positive.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, not {n}")
    if not step > 0:
        raise ValueError(f"step must be > 0, not {step}")
    return [make_job(seed, i, start=start, step=step) for i in range(n)]
