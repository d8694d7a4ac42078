"""Drawing one Job: its model, cluster, neighbours and what its exporters are configured to show.

A Job is drawn for an intended class by placing that stage's capacity below what the GPU's step
would need, by a drawn margin; everything else gets drawn slack. The intent only steers the draw:
the label is what the closed loop then shows (see :mod:`.label`), and a Job whose loop disagrees
with its intent is drawn again from the same generator.

The draft is a namespace each stage (:mod:`.stages`) fills in, in order, from the Job's generator.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyz.plan import LEAD_S, Plan, View
from bottleneck_operator_dev.familyz.pod_draw import finish, lanes, lanes_host, noise, view
from bottleneck_operator_dev.familyz.stages import STAGES

__all__ = ["LEAD_S", "Plan", "View", "draw"]


def draw(rng: np.random.Generator, intent: Bottleneck, index: int, start: float, step: float) -> Plan:
    """Draw one Job meant to be bound by ``intent``."""
    d = SimpleNamespace(rng=rng, intent=intent, index=index, start=start, step=step)
    for stage in (*STAGES, lanes, lanes_host, noise, view):
        stage(d)
    return finish(d)
