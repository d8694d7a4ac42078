"""Whether a window holds enough data to judge at all: pods, samples and GPU coverage.

A window yields a verdict only when it spans ``min_window``. The count that should matter is the
number of distinct scrapes, not grid points (a 60 s scrape on a 15 s grid repeats each value four
times): :func:`samples_seen` counts them, and a window with fewer than ``MIN_SAMPLES`` abstains
``ShortWindow`` whatever its length in seconds.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator.contract.verdict import Abstention
from bottleneck_operator.contract.window import JobWindow

# The features are p10/p50/p90 of each series. numpy's p90 of n samples sits at index 0.9 (n - 1),
# which touches the largest sample while 0.9 (n - 1) >= n - 2, that is for n <= 11: below 12
# readings one outlier sets the p90 (and the p10). The default 900 s window holds 15 at a 60 s
# scrape, the slowest interval of common set-ups, so a default install does not abstain for this.
MIN_SAMPLES = 12


# GPU gauges whose readings change from one DCGM collection to the next (power above all: a board's
# draw moves by tenths of a watt between readings), read to tell a new reading from a repeated one.
_READINGS = ("power_w", "gpu_util", "gr_engine_active", "sm_active")


def samples_seen(window: JobWindow) -> float:
    """Distinct scrapes in the window.

    The larger of two counts: the window's span over the larger of the grid step and the scrape
    interval Prometheus showed, and the grid points at which some pod's GPU gauges hold a new reading
    (a value that differs from the one before it: a reading held over several grid points counts
    once). The first is too small when the interval estimate is thrown off (an exporter that restarts
    leaves one pod two short series, and a long gap between them); the second when every gauge sat still.
    """
    return max(_by_span(window), float(_new_readings(window)))


def _interval(window: JobWindow) -> float:
    return max(window.step, window.quality.scrape_interval or 0.0)


def _by_span(window: JobWindow) -> float:
    """The window's span over the larger of its grid step and the scrape interval seen."""
    if len(window.timestamps) == 0:
        return 0.0
    interval = _interval(window)
    span = float(window.timestamps[-1] - window.timestamps[0]) + window.step
    return span / interval if interval > 0 else float(len(window.timestamps))


def _new_readings(window: JobWindow) -> int:
    """The most grid points at which one pod's GPU gauges hold a reading not held the point before."""
    n = len(window.timestamps)
    best = 0
    for pod in window.pods:
        rows = [np.asarray(pod.signals[k][:n], dtype=np.float64) for k in _READINGS if k in pod.signals]
        rows = [r for r in rows if len(r) == n]
        if not rows:
            continue
        m = np.vstack(rows)
        finite = np.isfinite(m)
        new = finite.copy()
        new[:, 1:] &= ~(finite[:, :-1] & (m[:, 1:] == m[:, :-1]))
        best = max(best, int(new.any(axis=0).sum()))
    return best


def data_reason(window: JobWindow, *, min_coverage: float, min_window: float) -> tuple[Abstention, str] | None:
    """Why the window cannot be judged, or None when it can.

    Args:
        window: the job window.
        min_coverage: the least share of samples with a GPU reading.
        min_window: the shortest window, in seconds.

    Returns:
        The abstention and its reason in words, or None.
    """
    if not window.pods:
        return Abstention.NO_PODS, "no pods of the job were found in the window"
    if window.duration < min_window:
        return Abstention.SHORT_WINDOW, f"window too short: {window.duration:.0f} s < min_window {min_window:.0f} s"
    # the readings are counted only when the span alone falls short: most windows never need it
    if _by_span(window) < MIN_SAMPLES and (seen := samples_seen(window)) < MIN_SAMPLES:
        interval = _interval(window)
        return Abstention.SHORT_WINDOW, (
            f"too few samples: {seen:.0f} scrapes at {interval:.0f} s < {MIN_SAMPLES}; "
            f"a window of at least {MIN_SAMPLES * interval:.0f} s is needed at this interval"
        )
    if window.quality.coverage < min_coverage:
        return Abstention.LOW_COVERAGE, (
            f"too little GPU data: coverage {100 * window.quality.coverage:.0f} % < "
            f"min_coverage {100 * min_coverage:.0f} %"
        )
    return None
