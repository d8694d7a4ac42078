"""The per-window verdict timeline that ``analyze --html`` draws, made as the operator makes it.

The operator analyses a running Job every ``interval`` seconds over the last ``window`` seconds and
keeps the last ``timeline_length`` verdicts in the report. ``analyze`` sees the whole run at once,
so it replays those passes: windows ending every ``interval`` seconds (spaced wider when the run
would need more than ``timeline_length`` of them), each reaching ``window`` seconds back, none
shorter than ``min_window``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bottleneck_operator.reports import TimelineEntry, rfc3339

if TYPE_CHECKING:
    from bottleneck_operator.pipeline import Analyzer
    from bottleneck_operator.settings import AnalysisSettings


def pass_windows(
    start: float, end: float, *, interval: float, window: float, min_window: float, limit: int
) -> list[tuple[float, float]]:
    """The (start, end) of each replayed pass, oldest first; at most ``limit``, the last ending at ``end``.

    Args:
        start, end: the analysed run (unix seconds).
        interval: seconds between the operator's passes.
        window: seconds each pass looks back.
        min_window: the shortest window a pass reports on.
        limit: the most windows kept (the report's timeline length).
    """
    first = start + min(min_window, end - start)
    if end <= start or limit < 1:
        return []
    span = end - first
    step = max(interval, span / (limit - 1)) if limit > 1 else max(span, interval)
    count = min(limit, int(span // step) + 1)
    ends = [end - step * i for i in range(count)][::-1]
    return [(max(start, e - window), e) for e in ends]


def timeline(
    analyzer: Analyzer, namespace: str, job: str, start: float, end: float, analysis: AnalysisSettings, limit: int
) -> list[TimelineEntry]:
    """The timeline entries (as the report's ``status.timeline``) of the replayed passes.

    One analysis per window: an analysis batch holds one window per Job.
    """
    from bottleneck_operator.pipeline import JobRequest

    entries = []
    windows = pass_windows(
        start, end, interval=analysis.interval, window=analysis.window, min_window=analysis.min_window, limit=limit
    )
    for a, b in windows:
        status = analyzer.analyze_jobs([JobRequest(namespace=namespace, job=job, start=a, end=b)])[0].status
        entries.append(
            TimelineEntry(
                start=rfc3339(a),
                end=rfc3339(b),
                bottleneck=status.bottleneck or "Unknown",
                confidence=status.confidence if status.confidence is not None else 0.0,
            )
        )
    return entries
