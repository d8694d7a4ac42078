"""Report retention: delete finished Jobs' reports older than ``report_retention``.

Age counts from the end of the Job (the final window's end), so a long Job's report is kept as long
as a short one's. Reports of Jobs that vanished while the operator was down, never finalised, are
closed here too (phase Failed, Ready=False/JobDeleted) so they do not look alive forever.
"""

from __future__ import annotations

import fnmatch
import time
from typing import Any

from bottleneck_operator.controller.jobs import parse_time
from bottleneck_operator.controller.state import OperatorState, TrackedJob, logger
from bottleneck_operator.controller.status import FINAL_PHASES, READY, merge_patch, set_condition
from bottleneck_operator.reports import ReportStatus, read_status
from bottleneck_operator.settings import AnalysisSettings, OperatorSettings


def sweep_period(analysis: AnalysisSettings, operator: OperatorSettings) -> float:
    """Seconds between sweeps: often enough for the retention, never more than every pass."""
    retention = operator.report_retention or 3600.0
    return max(analysis.interval, min(600.0, retention / 4))


def finished_at(status: ReportStatus) -> float | None:
    """When the report's Job ended, as far as the report tells (window end, else last analysis)."""
    return parse_time(status.window.end if status.window else None) or parse_time(status.last_analysis_time)


async def _list(state: OperatorState) -> list[dict[str, Any]]:
    patterns = list(state.operator.namespaces)
    if not patterns or any(ch in p for p in patterns for ch in "*?[!"):
        items = await state.api.list(None)
        if patterns:
            items = [i for i in items if _matches((i.get("metadata") or {}).get("namespace") or "", patterns)]
        return items
    items = []
    for ns in patterns:
        items += await state.api.list(ns)
    return items


def _matches(namespace: str, patterns: list[str]) -> bool:
    included = [p for p in patterns if not p.startswith("!")]
    excluded = [p[1:] for p in patterns if p.startswith("!")]
    ok = not included or any(fnmatch.fnmatchcase(namespace, p) for p in included)
    return ok and not any(fnmatch.fnmatchcase(namespace, p) for p in excluded)


def _tracked_reports(state: OperatorState) -> dict[tuple[str, str], TrackedJob]:
    """(namespace, report name) -> its tracked workload; one whose report is in place wins."""
    out: dict[tuple[str, str], TrackedJob] = {}
    for job in sorted(state.jobs.values(), key=lambda j: j.report_ready):
        out[(job.namespace, job.report)] = job
    return out


async def sweep(state: OperatorState) -> int:
    """Delete expired reports and close orphaned ones.

    Returns:
        The number of reports deleted.
    """
    now = state.clock()
    retention = state.operator.report_retention
    # Orphans can only be told apart once the watch has listed every Job at least once.
    settled = time.monotonic() - state.started > 2 * state.analysis.interval
    deleted = 0
    by_report = _tracked_reports(state)
    for item in await _list(state):
        meta = item.get("metadata") or {}
        ns, name = meta.get("namespace") or "", meta.get("name") or ""
        status = read_status(item.get("status"), drop_invalid=True)
        tracked = by_report.get((ns, name))
        ref_kind = ((item.get("spec") or {}).get("jobRef") or {}).get("kind") or "Job"
        if tracked is not None and not tracked.report_ready and tracked.kind != ref_kind:
            tracked = None  # another kind's report of that name: this workload's will be named apart
        if status.phase in FINAL_PHASES:
            ended = finished_at(status)
            if retention and ended is not None and ended < now - retention:
                if tracked is not None and not tracked.finished:
                    continue  # a new Job of the same name owns it now
                if await state.api.delete(ns, name):
                    deleted += 1
                    logger.info("%s/%s: report deleted after the retention period", ns, name)
                if tracked is not None:
                    state.jobs.pop(tracked.key, None)
        elif tracked is None and settled:
            conditions = set_condition(
                status.conditions,
                READY,
                "False",
                "JobDeleted",
                "the Job is gone (or no longer profiled) and the report was never finalised",
                now,
            )
            closed = status.model_copy(update={"phase": "Failed", "conditions": conditions})
            await state.api.patch_status(ns, name, merge_patch(status, closed))
            logger.info("%s/%s: Job gone, report closed", ns, name)
    return deleted
