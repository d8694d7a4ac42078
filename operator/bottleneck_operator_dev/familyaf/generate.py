"""Family AF: labelled telemetry windows of GPU training Jobs from a bulk-synchronous step model.

Job ``i`` of a seed draws everything from ``numpy.random.default_rng((seed, i))``, apart from its
intended class, which comes from a shuffle of the five classes per block of five Jobs (its own
generator, keyed by the seed and the block): a Job never depends on how many were asked for, and
the classes stay balanced. The label is counterfactual (see :mod:`.stepmodel`); a Job whose label
misses its intent, or whose best resource is too close to another class's, is drawn again a few
times, and a Job that stays close is tagged ``hard``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import JobWindow
from bottleneck_operator_dev.familyaf.cluster import Cluster, draw_cluster
from bottleneck_operator_dev.familyaf.stepmodel import Verdict, judge, mechanism_of
from bottleneck_operator_dev.familyaf.window import build_window
from bottleneck_operator_dev.familyaf.workload import INTENT_RESOURCE, composition, cpu_budget, draw_stages

ATTEMPTS = 8
TOO_CLOSE = 1.02  # margins under this are redrawn
HARD = 1.10  # margins (or best speed-ups) under this are tagged "hard"
_BLOCK_KEY = 0xAF


@dataclass(frozen=True)
class FamilyAFJob:
    """One generated Job.

    Attributes:
        namespace: the Job's namespace.
        name: the Job's name.
        label: its bottleneck class (never Unknown).
        mechanism: how that class limits it (a member of ``MECHANISMS[label]``).
        tags: what was drawn (``gpu:``, ``pods:``, ``fabric:``, ``storage:``, ``scrape:``, ``fields:``,
            ..., ``too-short`` and ``hard`` where they apply).
        window: the telemetry window, one pod window per pod.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def intent_of(seed: int, i: int) -> Bottleneck:
    """Job ``i``'s intended class: its place in its block's shuffle of the five classes."""
    block = np.random.default_rng((seed, i // len(CLASSES), _BLOCK_KEY)).permutation(len(CLASSES))
    return CLASSES[int(block[i % len(CLASSES)])]


def _labelled(rng: np.random.Generator, intent: Bottleneck) -> tuple[Cluster, dict[str, np.ndarray], Verdict, bool]:
    """A cluster and stage times whose counterfactual label is the intent, drawn up to ATTEMPTS times."""
    cl, t, verdict = None, None, None
    mechs = MECHANISMS[intent]
    mech = mechs[int(rng.integers(len(mechs)))]
    for attempt in range(ATTEMPTS):
        cl = draw_cluster(rng, intent, mech)
        t = draw_stages(rng, cl, mech)
        verdict = judge(t, composition(cl))
        # the intended resource first; late attempts settle for the intended class
        wanted = verdict.resource == INTENT_RESOURCE[mech] or attempt >= ATTEMPTS // 2
        if verdict.label is intent and verdict.margin >= TOO_CLOSE and wanted:
            return cl, t, verdict, False
    assert cl is not None and t is not None and verdict is not None
    return cl, t, verdict, True


def _mechanism(cl: Cluster, verdict: Verdict) -> Mechanism:
    return mechanism_of(
        verdict.resource,
        storage_local=cl.storage.local,
        has_nvlink=cl.gpu.nvlink_bps > 0,
        cpu=cpu_budget(cl).mechanism,
    )


def _tags(cl: Cluster, verdict: Verdict, missed: bool) -> list[str]:
    tags = [
        f"gpu:{cl.gpu.key}",
        f"pods:{cl.pods}x{cl.gpus}",
        f"fabric:{cl.fabric.key if cl.fabric else 'none'}" + (f"x{cl.nics}" if cl.fabric else ""),
        f"storage:{cl.storage.key}",
        f"data:{cl.data}",
        f"precision:{cl.precision}",
        f"speedup:{verdict.best:.2f}",
    ]
    tags += [f"swap:{cl.swap}"] if cl.swap != "none" else []
    tags += ["cpu-limit"] if cl.cpu_limit is not None else []
    tags += [f"neighbours:{cl.neighbours}"] if cl.neighbours else []
    tags += [f"pcie:{cl.pcie_note}"] if cl.pcie_note else []
    tags += ["power-cap"] if cl.power_cap_w < cl.gpu.tdp_w else []
    tags += ["gdr"] if cl.gdr else []
    tags += ["no-prefetch"] if not cl.prefetch else []
    if missed:
        tags.append("intent-missed")
    if missed or verdict.margin < HARD or verdict.best < HARD:
        tags.append("hard")
    return tags


def make_job(seed: int, i: int, *, start: float, step: float) -> FamilyAFJob:
    """Job ``i`` of a seed (see the module)."""
    rng = np.random.default_rng((seed, i))
    intent = intent_of(seed, i)
    cl, t, verdict, missed = _labelled(rng, intent)
    mech = _mechanism(cl, verdict)
    namespace = ("ml-research", "vision", "llm-pretrain", "speech", "recsys", "team-a", "default")[int(rng.integers(7))]
    name = f"{('train', 'pretrain', 'finetune', 'exp', 'run')[int(rng.integers(5))]}-{rng.integers(16**6):06x}"
    window, wtags = build_window(rng, cl, t, namespace=namespace, job=name, start=start, step=step)
    tags = _tags(cl, verdict, missed) + wtags
    return FamilyAFJob(namespace, name, verdict.label, mech.value, tuple(tags), window)


def generate_family_af(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyAFJob]:
    """Family AF's first ``n`` Jobs for ``seed``, their windows starting at ``start`` on a ``step`` grid.

    Args:
        seed: the family's seed (>= 0).
        n: how many Jobs (>= 0); Job ``i`` is the same whatever ``n`` is.
        start: the windows' first timestamp, unix seconds.
        step: seconds between the windows' timestamps (> 0).

    Raises:
        ValueError: ``n < 0``, ``step <= 0`` or ``seed < 0``.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, not {n}")
    if not step > 0:
        raise ValueError(f"step must be > 0, not {step}")
    if seed < 0:
        raise ValueError(f"seed must be >= 0, not {seed}")
    return [make_job(seed, i, start=start, step=step) for i in range(n)]
