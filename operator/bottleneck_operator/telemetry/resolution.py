"""How finely a window is read: a fixed number of points per series, however long the window.

A Job's memory in a pass is its pods' signals times the points of each series. Read at the base step
(``Settings.analysis.step``), a four-day run has 48 times the points of a two-hour one, and a long
enough Job needs more memory than the operator has. So a window longer than :data:`SERIES_POINTS`
base steps is read at a coarser step: the base step doubled as often as it takes. Doubling (rather
than dividing the window exactly) keeps the steps few, so Jobs of similar length share one batched
fetch, and keeps each step a multiple of the base one, so the grids still line up.

A coarser step costs detail, not correctness: a gauge is then sampled once a step, and a counter's
rate averages over the step, both fair estimates of a long run's means.
"""

from __future__ import annotations

import math

__all__ = ["SERIES_POINTS", "bounded_step"]

# Points kept per series: a two-hour window at the default 30 s step. bench_bounded shows the peak
# memory of a 4-day, 16-pod final analysis at this cap.
SERIES_POINTS = 240


def bounded_step(start: float, end: float, base_step: float, max_points: int = SERIES_POINTS) -> float:
    """The step that reads ``start..end`` in at most ``max_points`` points per series.

    Args:
        start: window start, unix seconds.
        end: window end, unix seconds.
        base_step: the configured step, seconds (a shorter window is read at it).
        max_points: the cap on points per series.

    Returns:
        ``base_step`` times the smallest power of two that fits the window in ``max_points`` steps.
    """
    if not (math.isfinite(start) and math.isfinite(end)) or base_step <= 0:
        return base_step
    ratio = max(0.0, end - start) / (base_step * max_points)
    if ratio <= 1.0:
        return base_step
    return base_step * float(2 ** math.ceil(math.log2(ratio)))
