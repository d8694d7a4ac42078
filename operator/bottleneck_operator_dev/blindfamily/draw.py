"""Drawing one labelled job: a mechanism of the asked class, a cluster and workload it fits, settled.

The class is fixed by the caller (so the family's classes come out in equal numbers); everything
else is drawn here, and redrawn until the mechanism clearly bounds the job.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.blindfamily.clusters import CLUSTERS
from bottleneck_operator_dev.blindfamily.draft import Draft, base_draft
from bottleneck_operator_dev.blindfamily.hardware import BOARDS
from bottleneck_operator_dev.blindfamily.mechanisms import Mechanism, of_class, settle
from bottleneck_operator_dev.blindfamily.workloads import ARCHETYPES

MAX_TRIES = 400


def _pick(rng: np.random.Generator, weights: list[float]) -> int:
    w = np.asarray(weights, dtype=np.float64)
    return int(rng.choice(len(w), p=w / w.sum()))


def draw_job(rng: np.random.Generator, cls: Bottleneck) -> tuple[Draft, Mechanism]:
    """A settled job of class ``cls`` and its mechanism.

    Raises:
        RuntimeError: no job could be settled (a bug in the tables, not bad luck: every mechanism
            settles in a good share of its draws).
    """
    mechanisms = of_class(cls)
    for attempt in range(MAX_TRIES):
        # The mechanism is kept for a run of draws, so the mix follows the weights rather than
        # favouring mechanisms that settle easily; a mechanism that keeps failing is replaced.
        if attempt % 40 == 0:
            m = mechanisms[_pick(rng, [x.weight for x in mechanisms])]
        c = CLUSTERS[_pick(rng, [x.weight for x in CLUSTERS])]
        board = BOARDS[str(rng.choice(c.boards))]
        arch = ARCHETYPES[str(rng.choice(m.archetypes))]
        d = base_draft(rng, cls, m.name, c, board, arch)
        if not m.setup(d, rng):
            continue
        severity = float(np.exp(rng.uniform(np.log(m.severity[0]), np.log(m.severity[1]))))
        if settle(d, m, severity, rng):
            d.stage = m.stage
            _straggler(d, m, rng)
            return d, m
    raise RuntimeError(f"no {cls} job settled in {MAX_TRIES} draws")


def _straggler(d: Draft, m: Mechanism, rng: np.random.Generator) -> None:
    """Now and then one pod is worse at the bounding stage (a slower disk, a hotter GPU, a busier node).

    The job is still bound by the same stage, only harder on that pod; the other pods wait for it
    in the all-reduce, which is what makes stragglers confusing to read.
    """
    if d.n_pods >= 2 and m.stage in ("read", "cpu", "flop", "memstall") and rng.random() < 0.2:
        d.straggler = (int(rng.integers(0, d.n_pods)), float(rng.uniform(1.15, 1.6)))
        d.tags.append("straggler")
