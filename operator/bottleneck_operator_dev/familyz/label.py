"""The label: where the Job's training loop was blocked or busy for the largest share of the window.

Each tick, the Job moves at its slowest pod's pace and the other pods wait for that one in the
all-reduce, so a wait on a peer is a wait on whatever holds the peer: the tick's account is the
account of the pod that took the fewest steps. Summed over the window's ticks (pauses for
checkpoints and evaluation left out), the class with the most seconds is the label and its largest
category the mechanism.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import CLASSES, Bottleneck, Mechanism
from bottleneck_operator_dev.familyz.loop import CATEGORIES

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Profile:
    """Seconds of the window per class and the label they give."""

    seconds: dict[Bottleneck, float]
    label: Bottleneck
    mechanism: Mechanism

    @property
    def runner_up_ratio(self) -> float:
        """The second class's seconds over the first's (1.0: a tie)."""
        top = sorted(self.seconds.values(), reverse=True)
        return top[1] / top[0] if top[0] > 0 else 0.0


def profile(blocked: FloatArray) -> Profile:
    """The label of one Job from its pods' accounts.

    Args:
        blocked: seconds per category over the window, each tick counted on the pod that held the
            Job back, shape (pods, len(CATEGORIES)).

    Returns:
        The per-class seconds, the label and its mechanism.
    """
    totals = blocked.sum(axis=0)
    seconds = {c: 0.0 for c in CLASSES}
    for (cls, _), value in zip(CATEGORIES, totals, strict=True):
        seconds[cls] += float(value)
    label = max(CLASSES, key=lambda c: seconds[c])
    inside = [(float(totals[i]), mech) for i, (cls, mech) in enumerate(CATEGORIES) if cls is label]
    mechanism = max(inside, key=lambda pair: pair[0])[1]
    return Profile(seconds, label, mechanism)
