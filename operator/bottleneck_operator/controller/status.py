"""Pure helpers that turn an analysis result into a report's ``.status``: conditions, timeline, patches.

No I/O here, so the rules (when ``lastTransitionTime`` moves, how long the timeline grows, which
fields a merge patch must clear) are tested without a cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from bottleneck_operator.contract.verdict import Abstention
from bottleneck_operator.reports import FINAL_PHASES, Condition, Phase, ReportStatus, TimelineEntry, rfc3339

READY = "Ready"
METRICS = "MetricsAvailable"
# Ready=False with this reason marks a finished Job whose final analysis still has to run (for
# example Prometheus was down when the Job ended): a restarted operator finds it in the report.
FINAL_PENDING = "FinalAnalysisPending"

ConditionStatus = Literal["True", "False", "Unknown"]


def set_condition(
    conditions: Sequence[Condition] | None,
    type_: str,
    status: ConditionStatus,
    reason: str,
    message: str,
    now: float,
) -> list[Condition]:
    """Conditions with ``type_`` set; ``lastTransitionTime`` moves only when ``status`` flips.

    Args:
        conditions: the current list (not modified).
        type_: condition type, e.g. "Ready".
        status: "True", "False" or "Unknown".
        reason: CamelCase reason.
        message: one human-readable sentence.
        now: unix seconds of this observation.

    Returns:
        A new list, other conditions kept in their order.
    """
    out: list[Condition] = []
    found = False
    for cond in conditions or ():
        if cond.type != type_:
            out.append(cond)
            continue
        found = True
        since = rfc3339(now) if cond.status != status else cond.last_transition_time
        out.append(Condition(type=type_, status=status, reason=reason, message=message, last_transition_time=since))
    if not found:
        out.append(
            Condition(type=type_, status=status, reason=reason, message=message, last_transition_time=rfc3339(now))
        )
    return out


def append_timeline(timeline: Sequence[TimelineEntry] | None, entry: TimelineEntry, limit: int) -> list[TimelineEntry]:
    """The timeline with ``entry`` appended (replacing an entry for the same window), last ``limit`` kept."""
    items = [e for e in timeline or () if not (e.start == entry.start and e.end == entry.end)]
    items.append(entry)
    return items[-limit:]


def pending_status(now: float) -> ReportStatus:
    """The status of a freshly created report."""
    conditions = set_condition(None, READY, "False", "Pending", "waiting for the first analysis pass", now)
    conditions = set_condition(conditions, METRICS, "Unknown", "Pending", "Prometheus not queried yet", now)
    return ReportStatus(phase="Pending", conditions=conditions)


def analysed_status(
    previous: ReportStatus | None,
    result: ReportStatus,
    *,
    phase: Phase,
    now: float,
    timeline_length: int,
) -> ReportStatus:
    """The full new status after a successful analysis of one window.

    Args:
        previous: the report's current status (its timeline and conditions carry over).
        result: the pipeline's status for the window (classes, evidence, window, quality...).
        phase: "Running", "Completed" or "Failed".
        now: unix seconds of the analysis.
        timeline_length: entries kept in the timeline.

    Returns:
        The new status: the result's fields, the carried timeline and conditions, this analysis's time.
    """
    prev = previous or ReportStatus()
    bottleneck = result.bottleneck or "Unknown"
    confidence = float(result.confidence or 0.0)
    timeline = prev.timeline or []
    if result.window is not None:
        entry = TimelineEntry(
            start=result.window.start, end=result.window.end, bottleneck=bottleneck, confidence=round(confidence, 4)
        )
        timeline = append_timeline(timeline, entry, timeline_length)
    conditions = _metrics_condition(prev.conditions, result, now)
    final = phase in FINAL_PHASES
    if bottleneck != "Unknown":
        what = f"{bottleneck} ({confidence:.0%})"
        message = f"final verdict over the whole run: {what}" if final else f"verdict for the last window: {what}"
        conditions = set_condition(conditions, READY, "True", "Finalised" if final else "Analysed", message, now)
    else:
        conditions = set_condition(conditions, READY, "False", *_abstained(result), now)
    return result.model_copy(
        update={"phase": phase, "timeline": timeline, "conditions": conditions, "last_analysis_time": rfc3339(now)}
    )


def _metrics_condition(conditions: Sequence[Condition] | None, result: ReportStatus, now: float) -> list[Condition]:
    quality = result.data_quality
    if quality is not None and quality.pods > 0 and quality.coverage > 0:
        families = ", ".join(quality.families) or "none"
        return set_condition(conditions, METRICS, "True", "MetricsFound", f"families used: {families}", now)
    why = result.reason or "no telemetry for the Job's pods in the window"
    return set_condition(conditions, METRICS, "False", "NoData", why, now)


def _abstained(result: ReportStatus) -> tuple[str, str]:
    """The Ready condition's reason and message for an Unknown verdict, from its abstention."""
    if result.abstention is Abstention.LOW_CONFIDENCE:
        return "LowConfidence", result.reason or "the model is not confident enough in any class"
    return "InsufficientData", result.reason or "not enough telemetry for a verdict"


def unavailable_status(
    previous: ReportStatus | None,
    message: str,
    *,
    now: float,
    phase: Phase | None = None,
) -> ReportStatus:
    """The status when Prometheus could not be queried: last verdict kept, MetricsAvailable=False.

    Args:
        previous: the report's current status.
        message: why (the error's message).
        now: unix seconds.
        phase: a new phase (the Job ended meanwhile), else the previous one is kept.

    Returns:
        The full new status.
    """
    return fault_status(previous, "PrometheusUnavailable", message, now=now, phase=phase)


def fault_status(
    previous: ReportStatus | None,
    reason: str,
    message: str,
    *,
    now: float,
    phase: Phase | None = None,
) -> ReportStatus:
    """The status when this Job's analysis failed: last verdict kept, MetricsAvailable=False with the reason.

    A finished Job's report is marked to have its final analysis tried again on the next pass.

    Args:
        previous: the report's current status.
        reason: the condition's reason (see ``controller.faults.describe``), e.g. ``DataInvalid``.
        message: what went wrong, in one sentence.
        now: unix seconds.
        phase: a new phase (the Job ended meanwhile), else the previous one is kept.

    Returns:
        The full new status.
    """
    prev = previous or ReportStatus()
    conditions = set_condition(prev.conditions, METRICS, "False", reason, message, now)
    if phase in FINAL_PHASES:
        conditions = set_condition(
            conditions,
            READY,
            "False",
            FINAL_PENDING,
            f"the Job ended; the final analysis is retried on the next pass ({reason})",
            now,
        )
    update: dict[str, Any] = {"conditions": conditions}
    if phase is not None:
        update["phase"] = phase
    return prev.model_copy(update=update)


def condition(status: ReportStatus | None, type_: str) -> Condition | None:
    """The condition of that type in a status, or None."""
    for cond in (status.conditions if status else None) or ():
        if cond.type == type_:
            return cond
    return None


def needs_final(status: ReportStatus | None) -> bool:
    """True when a report still lacks its final analysis (not finished, or marked pending)."""
    if status is None or status.phase not in FINAL_PHASES:
        return True
    ready = condition(status, READY)
    return bool(ready and ready.reason == FINAL_PENDING)


def merge_patch(previous: ReportStatus | None, new: ReportStatus) -> dict[str, Any]:
    """The JSON merge patch (the API's camelCase) that turns ``previous`` into ``new`` at the top level.

    Fields ``previous`` had and ``new`` lacks are sent as null, so the API drops them.
    """
    body = new.dump()
    patch: dict[str, Any] = {key: None for key in (previous.dump() if previous else {}) if key not in body}
    patch.update(body)
    return patch
