"""Report retention: delete finished Jobs' reports older than ``report_retention``.

Age counts from the end of the Job (the final window's end), so a long Job's report is kept as long
as a short one's. Reports of Jobs that vanished while the operator was down, never finalised, are
closed here too (phase Failed, Ready=False/JobDeleted) so they do not look alive forever.

The sweep reads the reports a LIST page at a time (:data:`SWEEP_PAGE`, with ``limit``/``continue``),
and of each report only its metadata: the lifecycle mirror (:mod:`.lifecycle`) says whether it is
final and when its Job ended. So its memory is one page of metadata, and the event loop (the watch
streams, the admission webhook) decodes a few hundred bytes per report, never its ~50 KB status.
A report the mirror marks for deletion or closing, or one without a mirror (written by an older
operator), is read whole and decided on its status; the mirror is then brought in line, so the next
sweep reads it as metadata too. A server that answers whole reports to the metadata LIST is read as
before, each page's statuses decoded and decided on as they come.
"""

from __future__ import annotations

import asyncio
import fnmatch
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

from bottleneck_operator.controller.digest_mirror import restore as restore_digests
from bottleneck_operator.controller.jobs import parse_time
from bottleneck_operator.controller.lifecycle import lifecycle_of, whole
from bottleneck_operator.controller.state import OperatorState, logger
from bottleneck_operator.controller.status import READY, merge_patch, set_condition
from bottleneck_operator.reports import FINAL_PHASES, Lifecycle, ReportStatus, read_lifecycle, read_report
from bottleneck_operator.settings import AnalysisSettings, OperationSettings


def sweep_period(analysis: AnalysisSettings, operation: OperationSettings) -> float:
    """Seconds between sweeps: often enough for the retention, never more than every pass."""
    retention = operation.report_retention or 3600.0
    return max(analysis.interval, min(600.0, retention / 4))


def finished_at(status: ReportStatus) -> float | None:
    """When the report's Job ended, as far as the report tells (window end, else last analysis)."""
    return parse_time(status.window.end if status.window else None) or parse_time(status.last_analysis_time)


# Reports per LIST page. The sweep lists metadata alone (well under 1 KB a report); a server that
# answers whole reports (up to ~50 KB each) still keeps a page to a few MB.
SWEEP_PAGE = 100
# The sweep is not urgent: after each page it pauses as long as the page took (listing, deciding,
# acting), up to SWEEP_PAUSE_MAX seconds, so that it keeps the API server and the operator's own
# core (the webhook's) busy at most half the time. The cap keeps a sweep of a slow server well
# inside the life of its ``continue`` token (about five minutes on etcd's default compaction).
SWEEP_PACE = 1.0
SWEEP_PAUSE_MAX = 1.0


def pause_after(page_seconds: float) -> float:
    """Seconds to pause after a page that took ``page_seconds``."""
    return min(SWEEP_PAUSE_MAX, max(0.0, page_seconds) * SWEEP_PACE)


async def _pages(state: OperatorState) -> AsyncIterator[list[dict[str, Any]]]:
    """The reports to sweep, a page at a time (LIST with limit/continue: never all of them at once)."""
    patterns = list(state.operation.namespaces)
    if not patterns or any(ch in p for p in patterns for ch in "*?[!"):
        async for page in state.api.pages(None, limit=SWEEP_PAGE, metadata_only=True):
            if patterns:
                page = [i for i in page if _matches((i.get("metadata") or {}).get("namespace") or "", patterns)]
            yield page
        return
    for ns in patterns:
        async for page in state.api.pages(ns, limit=SWEEP_PAGE, metadata_only=True):
            yield page


def _matches(namespace: str, patterns: list[str]) -> bool:
    included = [p for p in patterns if not p.startswith("!")]
    excluded = [p[1:] for p in patterns if p.startswith("!")]
    ok = not included or any(fnmatch.fnmatchcase(namespace, p) for p in included)
    return ok and not any(fnmatch.fnmatchcase(namespace, p) for p in excluded)


@dataclass(frozen=True)
class _Tracked:
    """What the sweep needs of a tracked workload."""

    key: tuple[str, str, str]
    kind: str
    report_ready: bool
    finished: bool


def _tracked_reports(state: OperatorState) -> dict[tuple[str, str], _Tracked]:
    """(namespace, report name) -> its tracked workload; one whose report is in place wins."""
    out: dict[tuple[str, str], _Tracked] = {}
    for job in sorted(state.jobs.values(), key=lambda j: j.report_ready):
        out[(job.namespace, job.report)] = _Tracked(job.key, job.kind, job.report_ready, job.finished)
    return out


Verdict = Literal["delete", "close"] | None


@dataclass
class _Sweep:
    """One sweep's rules (fixed at its start) and its counts."""

    now: float
    retention: float
    settled: bool  # orphans can only be told apart once the watch has listed every Job once
    by_report: dict[tuple[str, str], _Tracked] = field(default_factory=dict)
    read: int = 0
    pages: int = 0
    deleted: int = 0
    closed: int = 0
    read_whole: int = 0  # reports read whole (the mirror marked them, or they had none)
    mirrored: int = 0  # mirrors written (a report of an older operator, or one out of date)

    def verdict(self, life: Lifecycle) -> tuple[Verdict, _Tracked | None]:
        """What to do about a report with this lifecycle, and its tracked workload if any."""
        tracked = self.by_report.get((life.namespace, life.name))
        if tracked is not None and not tracked.report_ready and tracked.kind != life.job_kind:
            tracked = None  # another kind's report of that name: this workload's will be named apart
        if life.phase in FINAL_PHASES:
            ended = parse_time(life.ended)
            expired = self.retention and ended is not None and ended < self.now - self.retention
            if expired and (tracked is None or tracked.finished):  # else a new Job of the same name owns it
                return "delete", tracked
            return None, tracked
        if tracked is None and self.settled:
            return "close", None
        return None, tracked


def _closing_patch(report: dict[str, Any], now: float) -> dict[str, Any]:
    """The status patch that closes an orphaned report (run in a thread: it reads the whole status)."""
    status: ReportStatus = read_report(report, drop_invalid=True).status
    conditions = set_condition(
        status.conditions,
        READY,
        "False",
        "JobDeleted",
        "the Job is gone (or no longer profiled) and the report was never finalised",
        now,
    )
    closed = status.model_copy(update={"phase": "Failed", "conditions": conditions})
    return merge_patch(status, closed)


async def _read(state: OperatorState, item: dict[str, Any]) -> dict[str, Any] | None:
    """The listed report read whole (None: gone meanwhile)."""
    meta = item.get("metadata") or {}
    return await state.api.get(str(meta.get("namespace") or ""), str(meta.get("name") or ""))


async def _sweep_one(state: OperatorState, run: _Sweep, item: dict[str, Any]) -> None:
    """Decide about one listed report and act; a listed mirror is only a reason to read the report."""
    life = lifecycle_of(item)
    if life is not None and run.verdict(life)[0] is None:
        return
    report = item if whole(item) else await _read(state, item)
    if report is None:
        return
    run.read_whole += report is not item
    life = read_lifecycle(report)
    verdict, tracked = run.verdict(life)
    if verdict == "delete":
        if await state.api.delete(life.namespace, life.name):
            run.deleted += 1
            logger.info("%s/%s: report deleted after the retention period", life.namespace, life.name)
        if tracked is not None:
            state.jobs.pop(tracked.key, None)
    elif verdict == "close":  # the status write brings the mirror in line too
        patch = await asyncio.to_thread(_closing_patch, report, run.now)
        await state.api.patch_status(life.namespace, life.name, patch)
        logger.info("%s/%s: Job gone, report closed", life.namespace, life.name)
        run.closed += 1
    elif report is not item:  # kept: its mirror (missing or out of date) is brought in line once
        run.mirrored += await state.api.mirror(report) is not report


async def sweep(state: OperatorState) -> int:
    """Delete expired reports and close orphaned ones, a LIST page of metadata at a time.

    Returns:
        The number of reports deleted.
    """
    settled = time.monotonic() - state.started > 2 * state.analysis.interval
    run = _Sweep(now=state.clock(), retention=state.operation.report_retention, settled=settled)
    started = page_started = time.monotonic()
    restored = 0
    async for page in _pages(state):
        run.read, run.pages = run.read + len(page), run.pages + 1
        if not state.digests_restored:  # a new operator's book: the week's finished Jobs, once
            restored += restore_digests(state, page)
        run.by_report = _tracked_reports(state)
        for n, item in enumerate(page, 1):
            await _sweep_one(state, run, item)
            if n % 10 == 0:  # a page is decided in slices: an admission waiting meanwhile is let in
                await asyncio.sleep(0)
        del page
        await asyncio.sleep(pause_after(time.monotonic() - page_started))
        page_started = time.monotonic()
    if not state.digests_restored:
        state.digests_restored = True
        logger.info("cluster summary: %d finished Jobs of the lookback taken back from their reports", restored)
    logger.info(
        "retention sweep: reports=%d pages=%d deleted=%d closed=%d seconds=%.2f whole=%d mirrored=%d",
        run.read,
        run.pages,
        run.deleted,
        run.closed,
        time.monotonic() - started,
        run.read_whole,
        run.mirrored,
    )
    return run.deleted
