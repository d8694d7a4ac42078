"""``reports.read_report``: a BottleneckReport as the API server stores it, read back typed.

The objects are created and patched through the Kubernetes API emulator, as the operator writes
them (``report_body`` then the status subresource), so the keys read are the ones the API returns.
"""

from __future__ import annotations

import copy
import time

import pytest

from bottleneck_operator.controller.reports_api import report_body
from bottleneck_operator.reports import (
    AnalysisWindow,
    DataQualityStatus,
    PodBreakdown,
    ReportStatus,
    TimelineEntry,
    as_report,
    read_lifecycle,
    read_report,
    rfc3339,
)
from bottleneck_operator_dev.demo.cluster import REPORTS, LocalCluster


def _analysed(now: float) -> ReportStatus:
    return ReportStatus(
        phase="Running",
        bottleneck="IO",
        confidence=0.8,
        gpu_active=0.31,
        window=AnalysisWindow(start=rfc3339(now - 900), end=rfc3339(now), seconds=900.0),
        pods=[PodBreakdown(pod="train-0", node="n1", replica_type="worker", bottleneck="IO", confidence=0.8)],
        data_quality=DataQualityStatus(
            families=["dcgm"], missing_families=["sidecar"], coverage=0.9, scrape_interval=15.0, pods=1, gpus=8
        ),
        timeline=[TimelineEntry(start=rfc3339(now - 900), end=rfc3339(now), bottleneck="IO", confidence=0.8)],
        last_analysis_time=rfc3339(now),
    )


def test_an_analysed_report_reads_back_typed(cluster: LocalCluster) -> None:
    now = time.time()
    cluster.create(REPORTS, "ml", report_body("ml", "resnet", "u-1", kind="PyTorchJob", api_version="kubeflow.org/v1"))
    cluster.patch(REPORTS, "ml", "resnet", {"status": _analysed(now).dump()}, sub="status")
    raw = cluster.get(REPORTS, "ml", "resnet")
    assert raw is not None

    report = read_report(raw)

    assert (report.key, report.job_name, report.job_kind) == ("ml/resnet", "resnet", "PyTorchJob")
    assert report.spec is not None and report.spec.job_ref.uid == "u-1"
    assert report.spec.job_ref.api_version == "kubeflow.org/v1"
    assert report.metadata.uid and report.metadata.resource_version
    assert report.created is not None and abs(report.created - now) < 120
    assert report.analysed and report.status == _analysed(now)
    assert report.status.data_quality is not None and report.status.data_quality.missing_families == ["sidecar"]
    assert report.status.pods is not None and report.status.pods[0].replica_type == "worker"
    assert report.raw is raw and as_report(report) is report and as_report(raw) == report


def test_a_report_never_analysed_has_no_phase_to_show(cluster: LocalCluster) -> None:
    cluster.create(REPORTS, "ml", report_body("ml", "bert", None))
    raw = cluster.get(REPORTS, "ml", "bert")
    assert raw is not None

    report = read_report(raw)

    assert not report.analysed and report.status.bottleneck is None
    assert (report.job_name, report.job_kind) == ("bert", "Job")
    assert report.spec is not None and report.spec.job_ref.uid is None


def test_a_newer_operators_fields_are_left_out_and_kept_in_raw(cluster: LocalCluster) -> None:
    now = time.time()
    cluster.create(REPORTS, "ml", report_body("ml", "gpt", "u-2"))
    cluster.patch(REPORTS, "ml", "gpt", {"status": _analysed(now).dump()}, sub="status")
    stored = cluster.get(REPORTS, "ml", "gpt")
    assert stored is not None
    newer = copy.deepcopy(stored)
    newer["spec"]["jobRef"]["cluster"] = "east"
    newer["status"]["energy"] = {"joules": 1.0}
    newer["status"]["dataQuality"]["gpuModels"] = ["H100"]

    report = read_report(newer)

    assert report.job_name == "gpt" and report.status == read_report(stored).status
    assert report.raw["status"]["energy"] == {"joules": 1.0}


def test_a_refused_value_raises_unless_dropped(cluster: LocalCluster) -> None:
    now = time.time()
    cluster.create(REPORTS, "ml", report_body("ml", "vit", "u-3"))
    cluster.patch(REPORTS, "ml", "vit", {"status": _analysed(now).dump()}, sub="status")
    stored = cluster.get(REPORTS, "ml", "vit")
    assert stored is not None
    older = copy.deepcopy(stored)
    older["status"]["bottleneck"] = "Disk"  # a class this version no longer has

    with pytest.raises(ValueError, match="bottleneck"):
        read_report(older)
    report = read_report(older, drop_invalid=True)
    assert report.status.bottleneck is None and report.status.confidence == 0.8


def test_an_unreadable_spec_reads_as_none_and_the_status_still_shows(cluster: LocalCluster) -> None:
    cluster.create(REPORTS, "ml", report_body("ml", "t5", "u-4"))
    cluster.patch(REPORTS, "ml", "t5", {"status": _analysed(time.time()).dump()}, sub="status")
    stored = cluster.get(REPORTS, "ml", "t5")
    assert stored is not None
    broken = copy.deepcopy(stored)
    del broken["spec"]["jobRef"]["name"]

    report = read_report(broken)

    assert report.spec is None and (report.job_name, report.job_kind) == ("", "Job")
    assert report.status.bottleneck == "IO"


def test_the_lifecycle_retention_reads_agrees_with_the_typed_report(cluster: LocalCluster) -> None:
    """The sweep reads only where a report is, whose it is, its phase and when its Job ended: the same
    values the typed report holds, without validating the whole status; odd or absent fields read None."""
    now = time.time()
    cluster.create(REPORTS, "ml", report_body("ml", "resnet", "u-1", kind="PyTorchJob", api_version="kubeflow.org/v1"))
    final = _analysed(now).model_copy(update={"phase": "Completed"})
    cluster.patch(REPORTS, "ml", "resnet", {"status": final.dump()}, sub="status")
    raw = cluster.get(REPORTS, "ml", "resnet")
    assert raw is not None
    life, report = read_lifecycle(raw), read_report(raw)
    assert (life.namespace, life.name, life.job_kind, life.phase) == ("ml", "resnet", "PyTorchJob", "Completed")
    assert report.status.window is not None and life.ended == report.status.window.end
    odd = read_lifecycle({"metadata": {"name": "x", "namespace": "ml"}, "status": {"phase": 3, "window": "soon"}})
    assert (odd.job_kind, odd.phase, odd.ended) == ("Job", None, None)
