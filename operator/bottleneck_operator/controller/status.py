"""Pure helpers that turn an analysis result into a report's ``.status``: conditions, timeline, patches.

No I/O here, so the rules (when ``lastTransitionTime`` moves, how long the timeline grows, which
fields a merge patch must clear) are tested without a cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bottleneck_operator.contract.verdict import Abstention
from bottleneck_operator.reports import Condition, ReportStatus, TimelineEntry, rfc3339

READY = "Ready"
METRICS = "MetricsAvailable"
FINAL_PHASES = frozenset({"Completed", "Failed"})
# Ready=False with this reason marks a finished Job whose final analysis still has to run (for
# example Prometheus was down when the Job ended): a restarted operator finds it in the report.
FINAL_PENDING = "FinalAnalysisPending"


def set_condition(
    conditions: Sequence[Mapping[str, Any]] | None,
    type_: str,
    status: str,
    reason: str,
    message: str,
    now: float,
) -> list[dict[str, Any]]:
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
    out: list[dict[str, Any]] = []
    found = False
    for cond in conditions or ():
        if cond.get("type") != type_:
            out.append(dict(cond))
            continue
        found = True
        changed = cond.get("status") != status
        since = rfc3339(now) if changed else cond.get("lastTransitionTime", rfc3339(now))
        out.append(_condition(type_, status, reason, message, since))
    if not found:
        out.append(_condition(type_, status, reason, message, rfc3339(now)))
    return out


def _condition(type_: str, status: str, reason: str, message: str, since: str) -> dict[str, Any]:
    # Built through the model, so a condition the operator writes always has the CRD's shape.
    model = Condition.model_validate(
        {"type": type_, "status": status, "reason": reason, "message": message, "last_transition_time": since}
    )
    return model.dump()


def append_timeline(
    timeline: Sequence[Mapping[str, Any]] | None, entry: Mapping[str, Any], limit: int
) -> list[dict[str, Any]]:
    """The timeline with ``entry`` appended (replacing an entry for the same window), last ``limit`` kept."""
    items = [dict(e) for e in timeline or () if not (e.get("start") == entry["start"] and e.get("end") == entry["end"])]
    items.append(dict(entry))
    return items[-limit:]


def pending_status(now: float) -> dict[str, Any]:
    """The status of a freshly created report."""
    conditions = set_condition(None, READY, "False", "Pending", "waiting for the first analysis pass", now)
    conditions = set_condition(conditions, METRICS, "Unknown", "Pending", "Prometheus not queried yet", now)
    return {"phase": "Pending", "conditions": conditions}


def analysed_status(
    previous: Mapping[str, Any] | None,
    result: ReportStatus,
    *,
    phase: str,
    now: float,
    timeline_length: int,
) -> dict[str, Any]:
    """The full new status after a successful analysis of one window.

    Args:
        previous: the report's current status (its timeline and conditions carry over).
        result: the pipeline's status for the window (classes, evidence, window, quality...).
        phase: "Running", "Completed" or "Failed".
        now: unix seconds of the analysis.
        timeline_length: entries kept in the timeline.

    Returns:
        A JSON-ready status dict in the CRD's camelCase.
    """
    prev = dict(previous or {})
    typed = result.model_copy(update={"phase": phase})
    bottleneck = typed.bottleneck or "Unknown"
    confidence = float(typed.confidence or 0.0)
    timeline = prev.get("timeline")
    if typed.window is not None:
        entry = TimelineEntry(
            start=typed.window.start, end=typed.window.end, bottleneck=bottleneck, confidence=round(confidence, 4)
        )
        timeline = append_timeline(timeline, entry.dump(), timeline_length)
    conditions = _metrics_condition(prev.get("conditions"), typed, now)
    final = phase in FINAL_PHASES
    if bottleneck != "Unknown":
        what = f"{bottleneck} ({confidence:.0%})"
        message = f"final verdict over the whole run: {what}" if final else f"verdict for the last window: {what}"
        conditions = set_condition(conditions, READY, "True", "Finalised" if final else "Analysed", message, now)
    else:
        conditions = set_condition(conditions, READY, "False", *_abstained(typed), now)
    status = typed.dump()
    status["timeline"] = timeline or []
    status["conditions"] = conditions
    status["lastAnalysisTime"] = rfc3339(now)
    return status


def _metrics_condition(conditions: Any, result: ReportStatus, now: float) -> list[dict[str, Any]]:
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
    previous: Mapping[str, Any] | None,
    message: str,
    *,
    now: float,
    phase: str | None = None,
) -> dict[str, Any]:
    """The status when Prometheus could not be queried: last verdict kept, MetricsAvailable=False.

    Args:
        previous: the report's current status.
        message: why (the error's message).
        now: unix seconds.
        phase: a new phase (the Job ended meanwhile), else the previous one is kept.

    Returns:
        The full new status.
    """
    status = dict(previous or {})
    conditions = set_condition(status.get("conditions"), METRICS, "False", "PrometheusUnavailable", message, now)
    if phase in FINAL_PHASES:
        conditions = set_condition(
            conditions, READY, "False", FINAL_PENDING, "the Job ended; the final analysis waits for Prometheus", now
        )
    status["conditions"] = conditions
    if phase is not None:
        status["phase"] = phase
    status.setdefault("phase", "Pending")
    return status


def condition(status: Mapping[str, Any] | None, type_: str) -> Mapping[str, Any] | None:
    """The condition of that type in a status, or None."""
    for cond in (status or {}).get("conditions") or ():
        if cond.get("type") == type_:
            return dict(cond)
    return None


def needs_final(status: Mapping[str, Any] | None) -> bool:
    """True when a report still lacks its final analysis (not finished, or marked pending)."""
    if not status or status.get("phase") not in FINAL_PHASES:
        return True
    ready = condition(status, READY)
    return bool(ready and ready.get("reason") == FINAL_PENDING)


def merge_patch(previous: Mapping[str, Any] | None, new: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON merge patch that turns ``previous`` into ``new`` at the top level (stale keys -> null)."""
    patch: dict[str, Any] = {key: None for key in (previous or {}) if key not in new}
    patch.update(new)
    return patch


def same_status(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """True when writing ``b`` over ``a`` would change nothing."""
    return dict(a or {}) == dict(b or {})
