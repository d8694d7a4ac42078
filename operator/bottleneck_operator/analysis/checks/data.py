"""Whether a window holds enough data to judge at all: pods, samples and GPU coverage.

A window yields a verdict only when it spans ``min_window``. The count that should matter is the
number of distinct scrapes, not grid points (a 60 s scrape on a 15 s grid repeats each value four
times): :func:`samples_seen` counts them, and a window with fewer than ``MIN_SAMPLES`` abstains
``ShortWindow`` whatever its length in seconds.
"""

from __future__ import annotations

from bottleneck_operator.contract.verdict import Abstention
from bottleneck_operator.contract.window import JobWindow

# The features are p10/p50/p90 of each series. numpy's p90 of n samples sits at index 0.9 (n - 1),
# which touches the largest sample while 0.9 (n - 1) >= n - 2, that is for n <= 11: below 12
# readings one outlier sets the p90 (and the p10). The default 900 s window holds 15 at a 60 s
# scrape, the slowest interval of common set-ups, so a default install does not abstain for this.
MIN_SAMPLES = 12


def samples_seen(window: JobWindow) -> float:
    """Distinct scrapes in the window: its span over the larger of the grid step and the scrape interval."""
    if len(window.timestamps) == 0:
        return 0.0
    interval = max(window.step, window.quality.scrape_interval or 0.0)
    span = float(window.timestamps[-1] - window.timestamps[0]) + window.step
    return span / interval if interval > 0 else float(len(window.timestamps))


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
    seen = samples_seen(window)
    if seen < MIN_SAMPLES:
        interval = max(window.step, window.quality.scrape_interval or 0.0)
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
