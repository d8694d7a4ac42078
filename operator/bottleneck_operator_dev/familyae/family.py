"""Family AE: healthy training Jobs with one documented misconfiguration each, labelled by a step account.

Each Job starts as a well-tuned data-parallel Job (cluster.py), gets one fault from the performance
guides practitioners read (faults.py) at a severity the per-stage step account (stages.py) confirms as
the limit of the step (label.py), and is rendered as every exporter would report it (render.py).

Job ``i`` draws everything from ``numpy.random.default_rng((seed, i))``; its class intent comes from
its block of five (``(seed, 1_000_003, i // 5)`` shuffles each block), so a Job does not depend on
``n`` and the five classes come out in equal numbers as near as ``n`` allows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.contract.window import JobWindow
from bottleneck_operator_dev.familyae.label import Labelled, draw_labelled, intended_mechanism
from bottleneck_operator_dev.familyae.render import Rendered, render
from bottleneck_operator_dev.familyae.telemetry import draw_names, draw_telemetry, window_length

BLOCK_SALT = 1_000_003


@dataclass(frozen=True)
class FamilyAEJob:
    """One generated Job.

    Attributes:
        namespace: the Job's namespace.
        name: the Job's name.
        label: the class of the stage that limits its step (never Unknown).
        mechanism: the contract mechanism of the injected fault (a ``Mechanism`` value of the class).
        tags: what was drawn ("fault:...", "gpu:...", "dcgm:...", "hard", ...).
        window: the telemetry window, one PodWindow per pod.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def block_intent(seed: int, i: int) -> Bottleneck:
    """Job i's class intent: its place in its block of five, the block's classes shuffled."""
    order = np.random.default_rng((seed, BLOCK_SALT, i // 5)).permutation(len(CLASSES))
    return CLASSES[int(order[i % 5])]


def _tags(lab: Labelled, rendered: Rendered, extra: tuple[str, ...]) -> tuple[str, ...]:
    c = lab.cfg
    tags = [
        f"fault:{lab.fault.key}",
        f"variant:{c.variant}",
        f"severity:{lab.severity:.2f}",
        f"limit:{lab.acct.limit}",
        f"gpu:{c.gpu.key}",
        f"node:{c.node.key}",
        f"model:{c.model.key}",
        f"precision:{c.precision}",
        f"batch:{c.batch}",
        f"gpus-per-pod:{c.gpus_per_pod}",
        f"pods:{c.pods}",
        f"nodes:{c.nodes}",
        f"fabric:{c.fabric.kind}",
        f"intra:{c.intra}",
        f"storage:{c.storage.label}",
        f"workers:{c.workers}",
        f"cpu-limit:{c.cpu_limit:g}" if c.cpu_limit > 0 else "cpu-limit:none",
        f"swap:{c.swap}",
        f"decode:{'gpu' if c.gpu_decode else 'cpu'}",
        f"neighbours:{c.neighbours}",
    ]
    tags += ["power-capped"] if c.power_limit_w < c.gpu.tdp_w else []
    tags += ["hard"] if lab.hard else []
    return tuple(tags) + extra + rendered.tags


def family_job(seed: int, i: int, *, start: float, step: float) -> tuple[FamilyAEJob, Labelled, Rendered]:
    """Job i of the family with what it was made from (the labelled configuration, the raw targets)."""
    rng = np.random.default_rng((seed, i))
    intent = block_intent(seed, i)
    lab = draw_labelled(rng, intent, intended_mechanism(intent, i // 5))
    tele = draw_telemetry(rng)
    names = draw_names(rng, lab.cfg)
    at = start + step * np.arange(window_length(rng, tele, step), dtype=np.float64)
    rendered = render(rng, lab, tele, names, at, step)
    job = FamilyAEJob(
        names[0], names[1], lab.label, lab.mechanism.value, _tags(lab, rendered, tele.tags()), rendered.window
    )
    return job, lab, rendered


def generate_family_ae(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyAEJob]:
    """``n`` Jobs of family AE, every window starting at ``start`` with timestamps ``step`` apart.

    Raises:
        ValueError: ``n`` is negative or ``step`` is not positive.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, not {n}")
    if not step > 0:
        raise ValueError(f"step must be > 0, not {step}")
    return [family_job(seed, i, start=start, step=step)[0] for i in range(n)]
