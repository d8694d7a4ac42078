"""The family's interface: labelled Job windows, one generator per Job."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.sampling import rate_range
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, families_and_coverage

from .draw import draw_setup
from .exporters import Exporters, draw_exporters, pod_signals
from .steady import Steady, runner_up_ratio, second_utilisation, solve_window
from .truth import DT, draw_looks, pod_timeline
from .workload import Setup

_SQUEEZES = (1.0, 0.6, 0.3, 0.1, 0.03)
_REDRAWS = 40


@dataclass(frozen=True)
class FamilyYJob:
    """One labelled Job window.

    Attributes:
        namespace: the Job's namespace.
        name: the Job's name.
        label: the class of the capacity with the largest summed elasticity of throughput.
        mechanism: the mechanism of that class the shadow prices name (a contract Mechanism value).
        tags: what was drawn (model, GPU, storage, fabric, neighbour, field set, ...), for slicing results.
        window: the Job's telemetry as the data layer hands it to the analysis.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def target(seed: int, i: int) -> tuple[Bottleneck, Mechanism]:
    """The class and mechanism Job ``i`` leans towards.

    Jobs come in blocks of five, each block a deterministic shuffle of the five classes, so any ``n``
    holds each class ``n // 5`` or ``n // 5 + 1`` times and Job ``i`` never depends on ``n``. A class's
    mechanisms take turns from block to block.
    """
    block, pos = divmod(i, len(CLASSES))
    order = np.random.default_rng((seed, block, 0x59)).permutation(len(CLASSES))
    cls = CLASSES[int(order[pos])]
    mechs = MECHANISMS[cls]
    return cls, mechs[block % len(mechs)]


def _settle(
    rng: np.random.Generator, target: Bottleneck, mech: Mechanism, lead: float, duration: float
) -> tuple[Setup, Steady, np.random.Generator]:
    """Draw Jobs leaning towards the target until the program's shadow prices name it."""
    last: tuple[Setup, Steady, np.random.Generator] | None = None
    for _ in range(_REDRAWS):
        state = rng.bit_generator.state
        for squeeze in _SQUEEZES:
            rng.bit_generator.state = state  # the same Job, squeezed harder
            setup = draw_setup(rng, target, mech.value, squeeze)
            phase_rng = np.random.default_rng(rng.integers(2**63))
            steady = solve_window(setup, phase_rng, lead, duration)
            last = (setup, steady, phase_rng)
            if steady.label is target:
                return last
        # Another resource binds however deep the lean (a neighbour, a slow fabric): a fresh Job.
    # Not reached in practice (the tests check the balance); the program's own label stands.
    assert last is not None
    return last


def _job(seed: int, i: int, target: Bottleneck, mech: Mechanism, start: float, step: float) -> FamilyYJob:
    rng = np.random.default_rng((seed, i))
    duration = float(rng.uniform(30 * 60, 90 * 60))
    count = max(2, int(duration // step) + 1)
    at = np.arange(count, dtype=np.float64) * step
    duration = float(at[-1])
    lead = rate_range(step, 60.0) + 120.0  # telemetry before the window feeds its first rates
    setup, steady, phase_rng = _settle(rng, target, mech, lead, duration)
    ex = draw_exporters(rng, setup, duration)
    looks = draw_looks(rng, setup.nodes)
    grid = np.arange(-lead, duration + DT, DT)
    ns = str(rng.choice(["ml-research", "vision", "nlp", "recsys", "speech", "platform-ci"]))
    name = f"y-{setup.model.name}-{i:04d}"
    pods = []
    for p in range(setup.nodes):
        cols = pod_timeline(setup, steady, looks, p, grid, phase_rng)
        signals = pod_signals(setup, looks, ex, cols, p, grid, at, step, start, rng)
        pods.append(
            PodWindow(
                pod=f"{name}-worker-{p}",
                node=f"gpu-node-{int(rng.integers(100, 999))}",
                gpu_model=setup.gpu.model_name,
                gpu_count=setup.gpus_per_node,
                signals=signals,
                co_located_pods=int(rng.integers(1, 6)) if "shared-node" in setup.tags and p == 0 else 0,
            )
        )
    families, coverage = families_and_coverage(pods)
    notes = () if any(f.value.startswith("dcgm_prof") for f in families) else ("no PROF fields",)
    quality = DataQuality(families=families, coverage=coverage, scrape_interval=ex.scrape, notes=notes)
    window = JobWindow(ns, name, start, start + duration, step, start + at, tuple(pods), quality)
    return FamilyYJob(ns, name, steady.label, steady.mechanism.value, _tags(setup, steady, ex, target), window)


def _tags(setup: Setup, steady: Steady, ex: Exporters, target: Bottleneck) -> tuple[str, ...]:
    """What was drawn, and whether the Job is a hard case.

    Hard: a second class's shadow prices come close, a resource that does not bind sits near its
    limit, or a neighbour's load makes the node's own signals point elsewhere.
    """
    tags = [*setup.tags, f"scrape:{int(ex.scrape)}s", f"nodes:{setup.nodes}x{setup.gpus_per_node}"]
    ratio = runner_up_ratio(steady.by_class)
    near = second_utilisation(steady)
    fabric = setup.fabric.bps if setup.fabric is not None else math.inf
    lies = "shared-node" in setup.tags and (
        setup.neighbour_cores > 0.3 * setup.node_cpus
        or setup.neighbour_disk_bps > 0.3 * setup.storage.bps
        or setup.neighbour_net_bps > 0.3 * setup.nic_bps
        or setup.neighbour_rdma_bps > 0.3 * fabric
    )
    tags += ["close-shadow-prices"] if ratio >= 0.5 else []
    tags += ["near-binding-rival"] if near >= 0.85 else []
    tags += ["neighbour-lies"] if lies else []
    tags.append("hard" if ratio >= 0.5 or near >= 0.85 or lies else "easy")
    tags += ["lean-overruled"] if steady.label is not target else []
    tags += sorted({ph.kind for ph in steady.phases} - {"train"})
    tags += ["counter-reset"] if ex.collector_restart is not None else []
    tags += ["cache-warms"] if not math.isinf(setup.warm_at) else []
    return tuple(tags)


def generate_family_y(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyYJob]:
    """``n`` labelled Job windows; Job ``i`` depends on ``(seed, i)`` alone, never on ``n`` or the clock.

    Raises:
        ValueError: ``n`` is negative or ``step`` is not positive.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, not {n}")
    if not step > 0:
        raise ValueError(f"step must be > 0 seconds, not {step}")
    return [_job(seed, i, *target(seed, i), start, step) for i in range(n)]
