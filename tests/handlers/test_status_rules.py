"""Pure rules: conditions, timeline, merge patches, annotation values, Job phases."""

from __future__ import annotations

from bottleneck_operator.controller.jobs import job_phase
from bottleneck_operator.controller.status import (
    FINAL_PENDING,
    analysed_status,
    append_timeline,
    merge_patch,
    needs_final,
    pending_status,
    set_condition,
    unavailable_status,
)
from bottleneck_operator.reports import AnalysisWindow, DataQualityStatus, ReportStatus, TimelineEntry, rfc3339
from bottleneck_operator_dev.demo.cluster import job_status

T = 1_767_225_600.0


def _result(cls: str, end: float, pods: int = 2) -> ReportStatus:
    return ReportStatus(
        bottleneck=cls,
        confidence=0.8,
        window=AnalysisWindow(start=rfc3339(end - 600), end=rfc3339(end), seconds=600),
        data_quality=DataQualityStatus(
            families=["dcgm"], missing_families=[], coverage=0.9 if pods else 0.0, pods=pods, gpus=8
        ),
        reason=None if cls != "Unknown" else "too little data",
    )


def test_transition_time_moves_only_on_a_flip() -> None:
    conds = set_condition(None, "Ready", "False", "Pending", "", T)
    conds = set_condition(conds, "Ready", "False", "InsufficientData", "x", T + 10)
    assert conds[0].last_transition_time == rfc3339(T) and conds[0].reason == "InsufficientData"
    conds = set_condition(conds, "Ready", "True", "Analysed", "y", T + 20)
    assert conds[0].last_transition_time == rfc3339(T + 20)
    conds = set_condition(conds, "MetricsAvailable", "True", "MetricsFound", "", T + 30)
    assert [c.type for c in conds] == ["Ready", "MetricsAvailable"]


def test_timeline_is_bounded_and_replaces_the_same_window() -> None:
    tl: list[TimelineEntry] = []
    for i in range(5):
        tl = append_timeline(tl, TimelineEntry(start=f"s{i}", end=f"e{i}", bottleneck="IO", confidence=0.5), 3)
    assert [e.start for e in tl] == ["s2", "s3", "s4"]
    tl = append_timeline(tl, TimelineEntry(start="s4", end="e4", bottleneck="GPU", confidence=0.9), 3)
    assert len(tl) == 3 and tl[-1].bottleneck == "GPU"


def test_analysed_then_unavailable_keeps_the_verdict() -> None:
    s1 = analysed_status(pending_status(T), _result("IO", T), phase="Running", now=T, timeline_length=4)
    assert s1.bottleneck == "IO" and s1.phase == "Running"
    conds = {c.type: c for c in s1.conditions or []}
    assert conds["Ready"].status == "True" and conds["MetricsAvailable"].status == "True"
    s2 = unavailable_status(s1, "connection refused", now=T + 60)
    assert s2.bottleneck == "IO"
    conds = {c.type: c for c in s2.conditions or []}
    assert conds["MetricsAvailable"].status == "False" and conds["MetricsAvailable"].reason == "PrometheusUnavailable"
    assert conds["Ready"].last_transition_time == rfc3339(T)
    assert not needs_final(
        analysed_status(s2, _result("IO", T + 120), phase="Completed", now=T + 120, timeline_length=4)
    )
    ended_while_down = unavailable_status(s1, "refused", now=T + 60, phase="Completed")
    assert needs_final(ended_while_down)
    assert {c.type: c for c in ended_while_down.conditions or []}["Ready"].reason == FINAL_PENDING


def test_no_data_is_unknown_with_metrics_unavailable() -> None:
    s = analysed_status(None, _result("Unknown", T, pods=0), phase="Running", now=T, timeline_length=4)
    conds = {c.type: c for c in s.conditions or []}
    assert conds["MetricsAvailable"].status == "False" and conds["MetricsAvailable"].reason == "NoData"
    assert conds["Ready"].status == "False" and conds["Ready"].message == "too little data"


def test_merge_patch_clears_stale_fields() -> None:
    patch = merge_patch(ReportStatus(phase="Running", reason="old", secondary="CPU"), ReportStatus(phase="Running"))
    assert patch == {"phase": "Running", "reason": None, "secondary": None}


def test_job_phases() -> None:
    assert job_phase({}) == ("Pending", None, None)
    assert job_phase(job_status(start=T)) == ("Running", T, None)
    assert job_phase(job_status(start=T, end=T + 60)) == ("Completed", T, T + 60)
    assert job_phase(job_status(start=T, end=T + 60, failed=True)) == ("Failed", T, T + 60)
    assert job_phase({"startTime": rfc3339(T), "completionTime": rfc3339(T + 5)}) == ("Completed", T, T + 5)


def test_tracked_status_is_kept_compact_and_handed_out_as_copies() -> None:
    from bottleneck_operator.controller.state import TrackedJob

    job = TrackedJob(namespace="ml", name="train", uid="u1")
    assert job.status is None
    status = ReportStatus(
        bottleneck="IO",
        confidence=0.91,
        timeline=[TimelineEntry(start="a", end="b", bottleneck="IO", confidence=0.5)],
    )
    job.status = status
    assert job.status == status
    copy = job.status
    assert copy is not None
    copy.bottleneck = "GPU"  # a caller's copy, not the cache
    assert job.status == status
    assert isinstance(job._status, bytes) and len(job._status) < 160
    job.status = None
    assert job.status is None


def test_a_status_from_another_version_is_read() -> None:
    from pydantic import ValidationError

    from bottleneck_operator.reports import read_status

    newer = {
        "phase": "Running",
        "bottleneck": "IO",
        "futureField": {"x": 1},
        "dataQuality": {"families": ["dcgm"], "missingFamilies": [], "coverage": 0.5, "pods": 1, "gpus": 2, "later": 1},
        "timeline": [{"start": "a", "end": "b", "bottleneck": "IO", "confidence": 0.5, "later": True}],
    }
    status = read_status(newer)
    assert status.bottleneck == "IO" and status.data_quality is not None and status.data_quality.gpus == 2
    assert status.timeline == [TimelineEntry(start="a", end="b", bottleneck="IO", confidence=0.5)]
    assert "futureField" not in status.dump() and "later" not in status.dump()["dataQuality"]

    older = {"phase": "Completed", "bottleneck": "Disk", "confidence": 0.7}  # a class this version does not know
    try:
        read_status(older)
    except ValidationError:
        pass
    else:
        raise AssertionError("an unknown class was accepted")
    kept = read_status(older, drop_invalid=True)
    assert kept.phase == "Completed" and kept.bottleneck is None and kept.confidence == 0.7
