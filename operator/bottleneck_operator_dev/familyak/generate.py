"""Family AK: labelled Jobs from a simulated training loop, for one blind evaluation.

Job ``i`` of a seed draws everything from ``numpy.random.default_rng((seed, i))``; its intended
class comes from a permutation of the five classes drawn per block of five Jobs, so a Job never
depends on how many are generated and each class gets about a fifth of them. The intent only
biases the draws: the label is what the counterfactual runs say (:mod:`.label`). A draw whose
label misses its intent is redrawn a few times (keeping the classes balanced); if none hits, the
last one is kept with its own label and tagged ``off-intent``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import JobWindow
from bottleneck_operator_dev.familyak.assemble import Names, Rendered, render_window
from bottleneck_operator_dev.familyak.draws import draw_spec
from bottleneck_operator_dev.familyak.label import Labelled, label_job
from bottleneck_operator_dev.familyak.loop import draw_noise, steps_for
from bottleneck_operator_dev.familyak.spec import JobSpec, Telemetry
from bottleneck_operator_dev.familyak.stack import draw_telemetry
from bottleneck_operator_dev.familyak.trace import Trace

TRIES = 6  # draws per Job before keeping one whose label misses its intent
NAMESPACES = ("ml-vision", "ml-speech", "ml-llm", "recsys", "research", "team-a", "team-b")


@dataclass(frozen=True)
class FamilyAKJob:
    """One labelled Job.

    Attributes:
        namespace, name: the Job's.
        label: the class whose stage, made ample, speeds the simulated step up most.
        mechanism: how it limits (one of ``MECHANISMS[label]``).
        tags: what was drawn, plus ``too-short`` (a window too short to judge) and ``hard`` (close call).
        window: the telemetry, as the data layer would hand it to the analysis.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: Mechanism
    tags: tuple[str, ...]
    window: JobWindow


def intent_of(seed: int, i: int) -> Bottleneck:
    """Job ``i``'s intended class: its place in its block's permutation of the classes."""
    order = np.random.default_rng((seed, i // 5, 5)).permutation(len(CLASSES))
    return CLASSES[int(order[i % 5])]


def _draw_labelled(rng: np.random.Generator, intent: Bottleneck) -> tuple[JobSpec, Labelled, Mechanism, bool]:
    """Draw until the counterfactual label matches the intent (at most :data:`TRIES` draws)."""
    mechanisms = MECHANISMS[intent]
    for _ in range(TRIES):
        wanted = mechanisms[int(rng.integers(len(mechanisms)))]
        spec, _hot = draw_spec(rng, wanted)
        noise = draw_noise(rng, spec.pods, steps_for(spec), spec.loader.jitter)
        labelled = label_job(spec, noise)
        if labelled.label is intent:
            return spec, labelled, wanted, True
    return spec, labelled, wanted, False


def _tags(spec: JobSpec, tel: Telemetry, labelled: Labelled, extra: dict[str, bool]) -> tuple[str, ...]:
    ld, h = spec.loader, spec.host
    tags = [
        f"workload:{spec.workload}",
        f"board:{spec.board.key}",
        f"gpus:{spec.gpus}",
        f"pods:{spec.pods}",
        f"fabric:{spec.fabric.value}",
        f"storage:{ld.storage.value}",
        f"workers:{ld.workers}",
        "pinned" if ld.pinned else "pageable",
        "cpu-limit" if h.cpu_limit is not None else "no-cpu-limit",
        "memory-limit" if h.mem_limit is not None else "no-memory-limit",
        f"dcgm:{tel.dcgm_fields}",
        f"scrape:{tel.dcgm_interval:g}s",
        f"collect:{tel.dcgm_collect:g}s",
        f"host-scrape:{tel.host_interval:g}s",
        f"prometheus:{tel.prometheus_major}",
        *(f"layout-{exporter}:{layout}" for exporter, layout in tel.layouts),
    ]
    flags = {
        "power-capped": spec.power_cap < 1.0,
        "neighbours": h.neighbours > 0,
        "swap": h.swap,
        "oom": bool(np.isfinite(labelled.base.costs.oom_period)),
        "no-sidecar": not tel.sidecar,
        "no-psi": not tel.node_psi,
        "no-ksm": not tel.ksm,
        "no-cadvisor": not tel.cadvisor,
        "dcgm-power-clocks": tel.dcgm_power_clocks,
        "hard": labelled.hard,
        **extra,
    }
    return tuple(tags + [name for name, on in flags.items() if on])


@dataclass(frozen=True)
class Made:
    """A Job with what it was made from: its setup, its verdict, its trace and the exporters' raw series."""

    job: FamilyAKJob
    spec: JobSpec
    labelled: Labelled
    trace: Trace
    rendered: tuple[Rendered, ...]


def make_job(seed: int, i: int, start: float, step: float) -> Made:
    """Job ``i`` of ``seed``, with the drawn setup and the counterfactual verdict behind it."""
    rng = np.random.default_rng((seed, i))
    intent = intent_of(seed, i)
    spec, labelled, wanted, hit = _draw_labelled(rng, intent)
    tel, too_short = draw_telemetry(rng, spec, step)
    namespace = NAMESPACES[int(rng.integers(len(NAMESPACES)))]
    name = f"ak-{seed % 100000}-{i:04d}-{spec.workload}"
    suffix = "".join(rng.choice(list("bcdfghjklmnpqrstvwxz2456789"), size=5))
    names = Names(
        namespace,
        name,
        tuple(f"{name}-{p}-{suffix}" for p in range(spec.pods)),
        tuple(f"gpu-{spec.board.key}-{seed % 1000}-{i}-{p}" for p in range(spec.pods)),
    )
    window, trace, rendered = render_window(spec, tel, labelled.base, rng, names, (start, step))
    extra = {
        "too-short": too_short,
        "off-intent": not hit,
        "counter-reset": bool(trace.restarts()) and tel.cadvisor,
        "checkpoints": any(p.kind == "checkpoint" for p in trace.pauses),
    }
    tags = (f"intent:{intent.value}", f"intent-mechanism:{wanted.value}", *_tags(spec, tel, labelled, extra))
    job = FamilyAKJob(namespace, name, labelled.label, labelled.mechanism, tags, window)
    return Made(job, spec, labelled, trace, tuple(rendered))


def generate_family_ak(seed: int, n: int, start: float = 1_700_000_000.0, step: float = 30.0) -> list[FamilyAKJob]:
    """``n`` labelled Jobs of family AK.

    Args:
        seed: the family's seed.
        n: how many Jobs (>= 0).
        start: the windows' first timestamp, unix seconds.
        step: seconds between the windows' timestamps (> 0).

    Raises:
        ValueError: ``n`` is negative or ``step`` is not positive.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, not {n}")
    if not step > 0:
        raise ValueError(f"step must be > 0, not {step}")
    return [make_job(seed, i, start, step).job for i in range(n)]
