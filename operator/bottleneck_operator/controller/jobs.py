"""Profiled Jobs: reading the annotation and the Job's phase, and making sure each has its report.

The Job itself is only read: its status belongs to the Job controller, and the operator's state
lives in the BottleneckReport.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from bottleneck_operator.contract.annotations import Choice, parse_switch
from bottleneck_operator.contract.names import PROFILE_ANNOTATION
from bottleneck_operator.controller.reports_api import ReportConflict, report_body
from bottleneck_operator.controller.state import OperatorState, TrackedJob
from bottleneck_operator.controller.status import merge_patch, needs_final, pending_status


def parse_time(value: Any) -> float | None:
    """An RFC 3339 time from the API as unix seconds, None when absent or unreadable."""
    if not value or not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def job_phase(status: Mapping[str, Any] | None) -> tuple[str, float | None, float | None]:
    """The Job's phase and its start/end times from ``.status``.

    A Job has ended when its ``Complete`` or ``Failed`` condition is True, or when it has a
    ``completionTime``; a Failed Job has no completionTime, so the condition's time is the end.

    Returns:
        (phase, start, end): phase in "Pending", "Running", "Completed", "Failed".
    """
    status = status or {}
    start = parse_time(status.get("startTime"))
    end = parse_time(status.get("completionTime"))
    for cond in status.get("conditions") or ():
        if str(cond.get("status")) != "True":
            continue
        if cond.get("type") in ("Complete", "Failed"):
            end = end or parse_time(cond.get("lastTransitionTime")) or parse_time(cond.get("lastProbeTime"))
            return ("Completed" if cond["type"] == "Complete" else "Failed"), start, end
    if end is not None:
        return "Completed", start, end
    return ("Running" if start is not None else "Pending"), start, None


async def ensure_report(state: OperatorState, job: TrackedJob) -> None:
    """Create the Job's report, or adopt the existing one (a restart, or a retried create).

    Creation is idempotent: a 409 means the report exists, and its status becomes the cache. A
    report left by an older Job of the same name (different uid) is reset for the new Job. The
    "started" Event is posted only when a report is really created, so restarts post nothing.
    """
    async with job.lock:
        if job.report_ready:
            return
        api, now = state.api, state.clock()
        created = False
        try:
            await api.create(job.namespace, report_body(job.namespace, job.name, job.uid))
            created = True
        except ReportConflict:
            existing = await api.get(job.namespace, job.name)
            if existing is None:  # deleted between the two calls: try once more
                await api.create(job.namespace, report_body(job.namespace, job.name, job.uid))
                created = True
            else:
                ref_uid = ((existing.get("spec") or {}).get("jobRef") or {}).get("uid")
                if job.uid and ref_uid and ref_uid != job.uid:
                    await api.patch(job.namespace, job.name, {"spec": {"jobRef": {"name": job.name, "uid": job.uid}}})
                    fresh = pending_status(now)
                    await api.patch_status(job.namespace, job.name, merge_patch(existing.get("status"), fresh))
                    job.status = fresh
                    state.post_event(job, "Normal", "ReportCreated", _created_message(job, reset=True))
                else:
                    job.status = dict(existing.get("status") or {})
        if created:
            job.status = pending_status(now)
            await api.patch_status(job.namespace, job.name, job.status)
            state.post_event(job, "Normal", "ReportCreated", _created_message(job, reset=False))
        job.report_ready = True


def _created_message(job: TrackedJob, *, reset: bool) -> str:
    what = "reset for this Job" if reset else "created"
    return f"BottleneckReport {job.namespace}/{job.name} {what}; see `kubectl get bnr -n {job.namespace} {job.name}`"


def observe(state: OperatorState, body: Mapping[str, Any], *, event_type: str | None) -> TrackedJob | None:
    """Update the tracked Jobs from one watch event of an annotated Job.

    Returns:
        The tracked Job when it needs its report ensured or a pass (new, ended), else None.
    """
    meta = body.get("metadata") or {}
    namespace, name, uid = meta.get("namespace") or "", meta.get("name") or "", meta.get("uid")
    key = (namespace, name)
    value = (meta.get("annotations") or {}).get(PROFILE_ANNOTATION)
    tracked = state.jobs.get(key)

    if event_type == "DELETED":
        if tracked is not None and (uid is None or tracked.uid == uid):
            tracked.deleted = True
            if not tracked.finished and tracked.report_ready:
                tracked.phase, tracked.end = "Failed", tracked.end or state.clock()
                state.request_pass()
            else:
                del state.jobs[key]
        return None

    choice = parse_switch(value)
    if choice is not Choice.ON:
        if tracked is not None and not tracked.finished:
            del state.jobs[key]  # opted out while running: stop analysing, keep the report
        if choice is Choice.INVALID and uid and state.warned.get(uid) != value:
            state.warned[uid] = value or ""
            probe = TrackedJob(namespace=namespace, name=name, uid=uid)
            state.post_event(
                probe,
                "Warning",
                "InvalidAnnotation",
                f'annotation {PROFILE_ANNOTATION}="{value}" is not understood: set it to "true" to profile '
                "this Job (or remove it); the Job is not analysed",
            )
        return None

    phase, start, end = job_phase(body.get("status"))
    if tracked is None or (uid and tracked.uid != uid):
        retention = state.settings.report_retention
        if phase in ("Completed", "Failed") and retention and end and end < state.clock() - retention:
            return None  # ended before the retention horizon: its report would be deleted at once
        tracked = TrackedJob(namespace=namespace, name=name, uid=uid)
        state.jobs[key] = tracked
    was_finished = tracked.finished
    tracked.phase, tracked.start, tracked.end = phase, start, end
    if not tracked.report_ready:
        return tracked
    if tracked.finished and (not was_finished or needs_final(tracked.status)):
        state.request_pass()
    return None
