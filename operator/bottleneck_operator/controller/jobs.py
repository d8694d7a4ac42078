"""Profiled workloads: reading the annotation and the phase, and making sure each has its report.

A workload (a batch/v1 Job or a training operator's kind, see :mod:`.workloads`) is only read: its
status belongs to its controller, and the operator's state lives in the BottleneckReport.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast, get_args

from bottleneck_operator.contract.annotations import Choice, parse_switch, wants_collector, wants_host_cgroup
from bottleneck_operator.contract.names import (
    COLLECTOR_LABEL,
    COLLECTOR_NO_HOST_CGROUP_ANNOTATION,
    COLLECTOR_SKIPPED_ANNOTATION,
    PROFILE_ANNOTATION,
)
from bottleneck_operator.controller.pod_templates import volume_claims
from bottleneck_operator.controller.reports_api import report_body
from bottleneck_operator.controller.state import OperatorState, TrackedJob
from bottleneck_operator.controller.status import READY, merge_patch, needs_final, pending_status, set_condition
from bottleneck_operator.controller.workloads import (
    CUSTOM_KINDS,
    JOB,
    WorkloadKind,
    job_phase,
    parse_time,
    replica_type,
    suspended,
)
from bottleneck_operator.kube.errors import Conflict
from bottleneck_operator.reports import Phase, ReportStatus, read_report

__all__ = ["ensure_report", "job_phase", "missed_by_webhook", "observe", "parse_time", "report_names"]
COLLECTOR_CONDITION = "CollectorInjected"
CUSTOM_KIND_NAMES = frozenset(k.kind for k in CUSTOM_KINDS)


async def ensure_report(state: OperatorState, job: TrackedJob) -> None:
    """Create the Job's report, or adopt the existing one (a restart, or a retried create).

    Creation is idempotent: a 409 means the report exists, and its status becomes the cache. A
    report left by an older Job of the same name (different uid) is reset for the new Job. A report
    of a workload of another kind with the same name (a Job and a PyTorchJob both called "train")
    is left alone: this workload's report takes the next of :func:`report_names`. The "started"
    Event is posted only when a report is really created, so restarts post nothing.
    """
    async with job.lock:
        if job.report_ready:
            await _show_suspension(state, job)
            return
        for report in report_names(job):
            job.report = report
            if await _claim(state, job):
                job.report_ready = True
                await _show_suspension(state, job)
                return
        raise Conflict(f"every report name of {job.kind} {job.namespace}/{job.name} is another's")


SUSPENDED_MESSAGE = "suspended (spec.suspend, or preempted by a queue such as Kueue): not analysed until it resumes"


async def _show_suspension(state: OperatorState, job: TrackedJob) -> None:
    """Write the phase ``Suspended`` into the report of a suspended workload (passes skip it meanwhile).

    A resumed workload needs nothing here: it is Running again, and the next pass writes that.
    """
    status = job.status
    if job.phase != "Suspended" or status is None or status.phase == "Suspended":
        return
    now = state.clock()
    conditions = set_condition(status.conditions, READY, "False", "Suspended", SUSPENDED_MESSAGE, now)
    new = status.model_copy(update={"phase": "Suspended", "conditions": conditions})
    await state.api.patch_status(job.namespace, job.report, merge_patch(status, new))
    job.status = new
    state.post_event(job, "Normal", "Suspended", f"{job.kind} {SUSPENDED_MESSAGE}")


def report_names(job: TrackedJob) -> list[str]:
    """The names its report may take, in order: the workload's own, then with its kind (and uid)."""
    kind = job.kind.lower()
    return [job.name, f"{job.name}-{kind}", f"{job.name}-{kind}-{(job.uid or '0')[:8]}"]


def _body(job: TrackedJob) -> dict[str, Any]:
    return report_body(job.namespace, job.name, job.uid, kind=job.kind, api_version=job.api_version, report=job.report)


async def _claim(state: OperatorState, job: TrackedJob) -> bool:
    """Create ``job.report``, or adopt it when it is this workload's; False when another's has it."""
    api, now = state.api, state.clock()
    try:
        await api.create(job.namespace, _body(job))
    except Conflict:
        existing = await api.get(job.namespace, job.report)
        if existing is None:  # deleted between the two calls: try once more
            await api.create(job.namespace, _body(job))
        else:
            # Values an older operator wrote that this one refuses are left out of the status.
            found = read_report(existing, drop_invalid=True)
            ref = found.spec.job_ref if found.spec is not None else None
            if (found.job_kind, ref.name if ref else None) != (job.kind, job.name):
                return False
            ref_uid = ref.uid if ref else None
            if job.uid and ref_uid and ref_uid != job.uid:
                new_ref = {"name": job.name, "uid": job.uid, "kind": job.kind, "apiVersion": job.api_version}
                await api.patch(job.namespace, job.report, {"spec": {"jobRef": new_ref}})
                fresh = pending_status(now)
                await api.patch_status(job.namespace, job.report, merge_patch(found.status, fresh))
                job.status = fresh
                state.post_event(job, "Normal", "ReportCreated", _created_message(job, reset=True))
            else:
                job.status = found.status
                await api.mirror(existing)  # a report of an older operator, or one whose last mirror write failed
            return True
    job.status = with_collector_condition(pending_status(now), job, now)
    await api.patch_status(job.namespace, job.report, job.status.dump())
    state.post_event(job, "Normal", "ReportCreated", _created_message(job, reset=False))
    return True


def _warn_invalid(state: OperatorState, probe: TrackedJob, value: Any) -> None:
    state.post_event(
        probe,
        "Warning",
        "InvalidAnnotation",
        f'annotation {PROFILE_ANNOTATION}="{value}" is not understood: set it to "true" to profile '
        f"this {probe.kind} (or remove it); it is not analysed",
    )


def part_of_a_workload(meta: Mapping[str, Any]) -> bool:
    """Whether the object is owned by a training workload kind the operator profiles on its own."""
    return any(
        isinstance(ref, Mapping) and ref.get("kind") in CUSTOM_KIND_NAMES for ref in meta.get("ownerReferences") or ()
    )


NO_COLLECTOR = (
    "no collector: created while the webhook was unavailable (failurePolicy: Ignore admitted the Job "
    "unchanged); the verdict rests on the other exporters"
)


def missed_by_webhook(job: Mapping[str, Any]) -> bool:
    """A Job that asked for the collector but whose pod template has none, and not by the webhook's choice.

    The webhook labels every template it injects and annotates those it leaves alone on purpose
    (Pod Security); a template with neither was admitted while the webhook was down or unreachable,
    e.g. during an upgrade of the operator.
    """
    meta = job.get("metadata") or {}
    if not wants_collector(meta):
        return False
    template = (job.get("spec") or {}).get("template") or {}
    tmeta = template.get("metadata") or {}
    labels, annotations = tmeta.get("labels") or {}, tmeta.get("annotations") or {}
    return COLLECTOR_LABEL not in labels and COLLECTOR_SKIPPED_ANNOTATION not in annotations


def with_collector_condition(status: ReportStatus, job: TrackedJob, now: float) -> ReportStatus:
    """The status with the ``CollectorInjected=False`` condition of a Job the webhook missed."""
    if not job.no_collector:
        return status
    conditions = set_condition(status.conditions, COLLECTOR_CONDITION, "False", "WebhookUnavailable", NO_COLLECTOR, now)
    return status.model_copy(update={"conditions": conditions})


def no_host_cgroup_note(level: str) -> str:
    """What a collector without the host cgroup mount does not see, for the report's data quality."""
    return (
        f"the collector runs without the host cgroup mount (Pod Security level {level!r} forbids hostPath "
        "volumes): the pod's own cgroup (CPU pressure and throttling, IO and memory pressure) is not read "
        "by it; those signals come from cAdvisor and node-exporter alone"
    )


def annotate_status(status: ReportStatus, job: TrackedJob, now: float) -> ReportStatus:
    """What the operator knows of the workload beyond the telemetry: replica types, a missing collector
    or one that runs without the host cgroup mount."""
    status = with_collector_condition(with_replica_types(status, job), job, now)
    quality = status.data_quality
    notes = [NO_COLLECTOR] if job.no_collector else []
    if job.no_host_cgroup and not job.no_collector:
        notes.append(no_host_cgroup_note(job.no_host_cgroup))
    missing = [n for n in notes if quality is not None and n not in quality.notes]
    if quality is not None and missing:
        quality = quality.model_copy(update={"notes": [*quality.notes, *missing]})
        status = status.model_copy(update={"data_quality": quality})
    return status


def with_replica_types(status: ReportStatus, job: TrackedJob) -> ReportStatus:
    """The status with each pod's replica type (master, worker, launcher...) for a training workload."""
    if not status.pods:
        return status
    pods = []
    for pod in status.pods:
        replica = replica_type(job.kind, job.name, pod.pod)
        pods.append(pod if replica is None else pod.model_copy(update={"replica_type": replica}))
    return status.model_copy(update={"pods": pods})


def _report_phase(phase: str) -> Phase:
    """The workload's phase as a report phase (every workload kind reads its phase into these four)."""
    for known in get_args(Phase):
        if phase == known:
            return cast(Phase, known)
    raise ValueError(f"not a report phase: {phase!r}")


def _created_message(job: TrackedJob, *, reset: bool) -> str:
    what = "reset for this Job" if reset else "created"
    return (
        f"BottleneckReport {job.namespace}/{job.report} {what}; see `kubectl get bnr -n {job.namespace} {job.report}`"
    )


def observe(
    state: OperatorState, body: Mapping[str, Any], *, event_type: str | None, kind: WorkloadKind = JOB
) -> TrackedJob | None:
    """Update the tracked workloads from one watch event of an annotated workload of ``kind``.

    Returns:
        The tracked Job when it needs its report ensured or a pass (new, ended), else None.
    """
    meta = body.get("metadata") or {}
    if part_of_a_workload(meta):
        # A TrainJob's JobSet, a JobSet's child Job: the annotation came down from the top-level
        # workload (Trainer copies it to its JobSet), which has the report. Profiling the part too
        # would make two objects of the same name fight over one report.
        return None
    namespace, name, uid = meta.get("namespace") or "", meta.get("name") or "", meta.get("uid")
    key = (namespace, kind.kind, name)
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
            _warn_invalid(state, TrackedJob(namespace, name, uid, kind=kind.kind, api_version=kind.api_version), value)
        return None

    phase, start, end = kind.phase(body.get("status"), meta)
    if phase not in ("Completed", "Failed") and suspended(body):
        phase, start, end = "Suspended", None, None
    if tracked is None or (uid and tracked.uid != uid):
        retention = state.operation.report_retention
        if phase in ("Completed", "Failed") and retention and end and end < state.clock() - retention:
            return None  # ended before the retention horizon: its report would be deleted at once
        tracked = state.jobs[key] = TrackedJob(namespace, name, uid, kind=kind.kind, api_version=kind.api_version)
    was_finished, was_phase = tracked.finished, tracked.phase
    tracked.collector, tracked.host_cgroup = wants_collector(meta), wants_host_cgroup(meta)
    tracked.claims = volume_claims(kind.kind, body)
    tracked.no_collector = kind is JOB and state.injection.webhook_enabled and missed_by_webhook(body)
    cut = (meta.get("annotations") or {}).get(COLLECTOR_NO_HOST_CGROUP_ANNOTATION)
    tracked.no_host_cgroup = str(cut) if tracked.collector and cut else ""
    tracked.phase, tracked.start, tracked.end = _report_phase(phase), start, end
    if not tracked.report_ready:
        return tracked
    if tracked.phase != was_phase and "Suspended" in (tracked.phase, was_phase):
        return tracked  # ensure_report shows the suspension; the pass it requests picks up a resume
    if tracked.finished and (not was_finished or needs_final(tracked.status)):
        state.request_pass()
    return None
