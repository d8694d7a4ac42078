"""Report retention: delete finished Jobs' reports older than ``report_retention``.

Age counts from the end of the Job (the final window's end), so a long Job's report is kept as long
as a short one's. Reports of Jobs that vanished while the operator was down, never finalised, are
closed here too (phase Failed, Ready=False/JobDeleted) so they do not look alive forever.

The sweep reads the reports a LIST page at a time (:data:`SWEEP_PAGE`, with ``limit``/``continue``)
and decides about each page in a thread, so its memory is one page and the event loop (the watch
streams, the admission webhook) is never held up by the number of reports kept.
"""

from __future__ import annotations

import asyncio
import fnmatch
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from bottleneck_operator.controller.digest_mirror import restore as restore_digests
from bottleneck_operator.controller.jobs import parse_time
from bottleneck_operator.controller.state import OperatorState, logger
from bottleneck_operator.controller.status import FINAL_PHASES, READY, merge_patch, set_condition
from bottleneck_operator.reports import ReportStatus, read_lifecycle, read_report
from bottleneck_operator.settings import AnalysisSettings, OperationSettings


def sweep_period(analysis: AnalysisSettings, operation: OperationSettings) -> float:
    """Seconds between sweeps: often enough for the retention, never more than every pass."""
    retention = operation.report_retention or 3600.0
    return max(analysis.interval, min(600.0, retention / 4))


def finished_at(status: ReportStatus) -> float | None:
    """When the report's Job ended, as far as the report tells (window end, else last analysis)."""
    return parse_time(status.window.end if status.window else None) or parse_time(status.last_analysis_time)


# Reports per LIST page. A report weighs up to ~50 KB: a page is decoded on the event loop (the
# HTTP client's JSON), so pages stay small enough that decoding one costs a few milliseconds.
SWEEP_PAGE = 100


async def _pages(state: OperatorState) -> AsyncIterator[list[dict[str, Any]]]:
    """The reports to sweep, a page at a time (LIST with limit/continue: never all of them at once)."""
    patterns = list(state.operation.namespaces)
    if not patterns or any(ch in p for p in patterns for ch in "*?[!"):
        async for page in state.api.pages(None, limit=SWEEP_PAGE):
            if patterns:
                page = [i for i in page if _matches((i.get("metadata") or {}).get("namespace") or "", patterns)]
            yield page
        return
    for ns in patterns:
        async for page in state.api.pages(ns, limit=SWEEP_PAGE):
            yield page


def _matches(namespace: str, patterns: list[str]) -> bool:
    included = [p for p in patterns if not p.startswith("!")]
    excluded = [p[1:] for p in patterns if p.startswith("!")]
    ok = not included or any(fnmatch.fnmatchcase(namespace, p) for p in included)
    return ok and not any(fnmatch.fnmatchcase(namespace, p) for p in excluded)


@dataclass(frozen=True)
class _Tracked:
    """What the sweep needs of a tracked workload, copied on the event loop for the sweep's thread."""

    key: tuple[str, str, str]
    kind: str
    report_ready: bool
    finished: bool


@dataclass(frozen=True)
class _Action:
    """One thing to do about one report: delete it (``patch`` None) or close it with ``patch``."""

    namespace: str
    name: str
    tracked: _Tracked | None
    patch: dict[str, Any] | None = None


def _tracked_reports(state: OperatorState) -> dict[tuple[str, str], _Tracked]:
    """(namespace, report name) -> its tracked workload; one whose report is in place wins."""
    out: dict[tuple[str, str], _Tracked] = {}
    for job in sorted(state.jobs.values(), key=lambda j: j.report_ready):
        out[(job.namespace, job.report)] = _Tracked(job.key, job.kind, job.report_ready, job.finished)
    return out


def _decide(
    page: list[dict[str, Any]],
    by_report: dict[tuple[str, str], _Tracked],
    *,
    now: float,
    retention: float,
    settled: bool,
) -> list[_Action]:
    """What to do about one page of reports (run in a thread: reading each status is the sweep's work)."""
    actions: list[_Action] = []
    for item in page:
        life = read_lifecycle(item)  # the whole status is read only for a report to close
        ns, name = life.namespace, life.name
        tracked = by_report.get((ns, name))
        if tracked is not None and not tracked.report_ready and tracked.kind != life.job_kind:
            tracked = None  # another kind's report of that name: this workload's will be named apart
        if life.phase in FINAL_PHASES:
            ended = parse_time(life.ended)
            expired = retention and ended is not None and ended < now - retention
            if expired and (tracked is None or tracked.finished):  # else a new Job of the same name owns it
                actions.append(_Action(ns, name, tracked))
        elif tracked is None and settled:
            status = read_report(item, drop_invalid=True).status
            conditions = set_condition(
                status.conditions,
                READY,
                "False",
                "JobDeleted",
                "the Job is gone (or no longer profiled) and the report was never finalised",
                now,
            )
            closed = status.model_copy(update={"phase": "Failed", "conditions": conditions})
            actions.append(_Action(ns, name, None, merge_patch(status, closed)))
    return actions


async def sweep(state: OperatorState) -> int:
    """Delete expired reports and close orphaned ones, a LIST page at a time, deciding off the event loop.

    Returns:
        The number of reports deleted.
    """
    now = state.clock()
    retention = state.operation.report_retention
    # Orphans can only be told apart once the watch has listed every Job at least once.
    settled = time.monotonic() - state.started > 2 * state.analysis.interval
    started = time.monotonic()
    deleted = closed = read = pages = restored = 0
    async for page in _pages(state):
        read, pages = read + len(page), pages + 1
        restored += restore_digests(state, page)
        by_report = _tracked_reports(state)
        actions = await asyncio.to_thread(_decide, page, by_report, now=now, retention=retention, settled=settled)
        del page
        for action in actions:
            if action.patch is not None:
                await state.api.patch_status(action.namespace, action.name, action.patch)
                logger.info("%s/%s: Job gone, report closed", action.namespace, action.name)
                closed += 1
                continue
            if await state.api.delete(action.namespace, action.name):
                deleted += 1
                logger.info("%s/%s: report deleted after the retention period", action.namespace, action.name)
            if action.tracked is not None:
                state.jobs.pop(action.tracked.key, None)
    if restored:
        logger.info("cluster summary: %d finished Jobs of the lookback taken back from their reports", restored)
    logger.info(
        "retention sweep: reports=%d pages=%d deleted=%d closed=%d seconds=%.2f",
        read,
        pages,
        deleted,
        closed,
        time.monotonic() - started,
    )
    return deleted
