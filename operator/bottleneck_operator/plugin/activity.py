"""GPU activity over a report's timeline, read back from Prometheus when the user gives its address.

A report keeps per-window verdicts but not the signals behind them; with ``--prometheus-url``,
``show`` fetches the Job's window through the data layer (the same queries as an analysis) and
averages the Job's GPU activity over each timeline window, so the timeline gains a GPU row.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import numpy as np

from bottleneck_operator.contract.times import parse_rfc3339
from bottleneck_operator.contract.window import JobWindow
from bottleneck_operator.errors import UsageError
from bottleneck_operator.reports import ReportStatus

# The analysis's own order (analysis/summary.py), so the row measures what the report's "GPU active" does.
GPU_SIGNALS = ("sm_active", "gr_engine_active", "gpu_util")
COLUMNS = 60


def spans(status: ReportStatus) -> list[tuple[float, float]]:
    """The timeline's windows as unix seconds; without a timeline, the analysed window in equal columns.

    Raises:
        UsageError: a time in the report is not RFC 3339.
    """
    try:
        entries = [e for e in status.timeline or [] if e.start and e.end]
        if entries:
            return [(parse_rfc3339(e.start), parse_rfc3339(e.end)) for e in entries]
        window = status.window
        if window is None or not window.start or not window.end:
            return []
        start, end = parse_rfc3339(window.start), parse_rfc3339(window.end)
    except ValueError as exc:
        raise UsageError(f"--prometheus-url: the report's timeline cannot be read: {exc}") from exc
    width = (end - start) / COLUMNS
    return [(start + i * width, start + (i + 1) * width) for i in range(COLUMNS)] if width > 0 else []


def fetch(
    args: argparse.Namespace, namespace: str, job: str, windows: Sequence[tuple[float, float]]
) -> JobWindow | None:
    """The Job's telemetry over the span of ``windows`` (None: Prometheus holds none of its pods)."""
    from bottleneck_operator.commands._common import settings_from_args
    from bottleneck_operator.telemetry.fetch.client import PrometheusClient
    from bottleneck_operator.telemetry.windows import WindowRequest, fetch_windows

    if not windows:
        raise UsageError("--prometheus-url: the report has no analysed window to read GPU activity for")
    settings = settings_from_args(args)
    client = PrometheusClient(settings.prometheus)
    try:
        start, end = min(s for s, _ in windows), max(e for _, e in windows)
        request = WindowRequest(namespace, job, start, end)
        found = fetch_windows(
            client,
            [request],
            settings.labels,
            step=settings.analysis.step,
            max_query_bytes=settings.prometheus.max_query_bytes,
        )
    finally:
        client.close()
    return found.get((namespace, job))


def per_window(window: JobWindow | None, windows: Sequence[tuple[float, float]]) -> list[float | None]:
    """The Job's mean GPU activity (0..1, over its pods and samples) in each of ``windows``; None where no sample."""
    if window is None:
        return [None] * len(windows)
    signal = next((s for s in GPU_SIGNALS if any(s in p.signals for p in window.pods)), None)
    if signal is None:
        return [None] * len(windows)
    rows = np.vstack([p.signals[signal] for p in window.pods if signal in p.signals])
    out: list[float | None] = []
    for start, end in windows:
        inside = (window.timestamps >= start) & (window.timestamps < end)
        values = rows[:, inside]
        finite = values[np.isfinite(values)]
        out.append(float(finite.mean()) if finite.size else None)
    return out
