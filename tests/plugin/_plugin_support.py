"""What the plugin tests share: report statuses as the operator writes them, and the emulator's report helper."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from bottleneck_operator.reports import (
    AnalysisWindow,
    CapacityItem,
    DataQualityStatus,
    EvidenceItem,
    HeadroomRange,
    PodBreakdown,
    RecommendationItem,
    ReportStatus,
    TimelineEntry,
)
from bottleneck_operator_dev.demo.cluster import REPORTS, LocalCluster

Run = Callable[..., tuple[int, str, str]]


def io_status() -> ReportStatus:
    """A complete report status as the operator writes it: a two-pod IO-bound Job, CPU-bound at first."""
    timeline = [
        TimelineEntry(
            start=f"2026-01-01T00:{m:02d}:00Z",
            end=f"2026-01-01T00:{m + 5:02d}:00Z",
            bottleneck="CPU" if m < 15 else "IO",
            confidence=0.4 + m / 100,
        )
        for m in range(0, 50, 5)
    ]
    return ReportStatus(
        phase="Completed",
        bottleneck="IO",
        secondary="CPU",
        confidence=0.87,
        probabilities={"IO": 0.87, "CPU": 0.1, "GPU": 0.03},
        gpu_active=0.31,
        evidence=[
            EvidenceItem(
                signal="gpu_active", observed=0.31, unit="ratio", message="GPUs were active 31 % of the time."
            ),
            EvidenceItem(
                signal="node_psi_io_some",
                observed=0.42,
                reference=0.05,
                unit="ratio",
                message="I/O pressure held the node 42 % of the time.",
            ),
        ],
        recommendations=[
            RecommendationItem(
                action="Cache the dataset on local NVMe or in the page cache",
                signal="node_psi_io_some",
                detail="Remote or throttled storage cannot feed the GPUs.",
            )
        ],
        headroom=HeadroomRange(low=1.6, high=2.4, basis="GPU idle time waiting on reads"),
        capacity=[
            CapacityItem(resource="storage read", needed=900.0, observed=310.0, unit="MB/s", message="reads at 34 %")
        ],
        window=AnalysisWindow(start="2026-01-01T00:00:00Z", end="2026-01-01T00:50:00Z", seconds=3000),
        pods=[
            PodBreakdown(pod="train-io-0", node="node-a", bottleneck="IO", confidence=0.9, gpu_active=0.3),
            PodBreakdown(pod="train-io-1", node="node-b", bottleneck="IO", confidence=0.8, gpu_active=0.95),
        ],
        data_quality=DataQualityStatus(
            families=["dcgm", "node"], missing_families=["sidecar"], coverage=0.97, pods=2, gpus=2
        ),
        model_version="test-model",
        timeline=timeline,
    )


def unknown_status() -> ReportStatus:
    return ReportStatus(
        phase="Running", bottleneck="Unknown", confidence=0.0, reason="no GPU samples yet", abstention="NoPods"
    )


class Reports:
    """The emulator plus helpers to create reports in it."""

    def __init__(self, cluster: LocalCluster, kubeconfig: Path) -> None:
        self.cluster, self.kubeconfig = cluster, kubeconfig

    def add(
        self, namespace: str, name: str, status: ReportStatus | dict[str, Any] | None, job: str | None = None
    ) -> None:
        body = {
            "apiVersion": "bottleneck.dev/v1alpha1",
            "kind": "BottleneckReport",
            "metadata": {"name": name},
            "spec": {"jobRef": {"name": job or name}},
        }
        self.cluster.create(REPORTS, namespace, body)
        if status is not None:
            data = status.dump() if isinstance(status, ReportStatus) else status
            self.cluster.patch(REPORTS, namespace, name, {"status": data}, sub="status")
