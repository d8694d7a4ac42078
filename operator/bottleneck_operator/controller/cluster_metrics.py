"""The operator's cluster-wide gauges, from the latest ClusterBottleneckSummary.

Labels are bounded: ``namespace`` (the cluster's namespaces that run profiled Jobs) and
``bottleneck`` (six classes); hot spots by ``dimension`` and ``symptom`` (four and three). No Job,
pod or node label: per-report series come from kube-state-metrics (see docs/cluster.md).
"""

from __future__ import annotations

from collections import Counter

from prometheus_client import CollectorRegistry, Gauge

from bottleneck_operator.analysis.cluster import ClusterSummary


class ClusterMetrics:
    """Gauges registered on the operator's registry, set from each summary."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.jobs = Gauge(
            "bottleneck_operator_cluster_jobs",
            "Profiled Jobs within the summary's lookback, by namespace and current verdict.",
            ["namespace", "bottleneck"],
            registry=registry,
        )
        self.lost = Gauge(
            "bottleneck_operator_cluster_gpu_hours_lost",
            "Idle GPU-hours of the lookback's Jobs, charged to their verdict, by namespace.",
            ["namespace", "bottleneck"],
            registry=registry,
        )
        self.hotspots = Gauge(
            "bottleneck_operator_cluster_hotspots",
            "Hot spots in the latest summary: places whose Jobs show a symptom beyond their workloads' rates.",
            ["dimension", "symptom"],
            registry=registry,
        )
        self.stragglers = Gauge(
            "bottleneck_operator_cluster_stragglers",
            "Stragglers named in the lookback's multi-pod Jobs, by namespace.",
            ["namespace"],
            registry=registry,
        )
        self.suspects = Gauge(
            "bottleneck_operator_cluster_suspects",
            "Nodes and GPUs behind in several Jobs, by cause.",
            ["cause"],
            registry=registry,
        )

    def update(self, summary: ClusterSummary) -> None:
        """Set every gauge from the summary (series of namespaces now gone are dropped)."""
        for gauge in (self.jobs, self.lost, self.hotspots, self.stragglers, self.suspects):
            gauge.clear()
        for (namespace, bottleneck), n in summary.jobs_by_namespace.items():
            self.jobs.labels(namespace, bottleneck).set(n)
        for loss in summary.lost_by_namespace:
            self.lost.labels(loss.namespace, loss.bottleneck).set(loss.gpu_hours)
        for (dimension, symptom), n in Counter((h.dimension, h.symptom) for h in summary.hotspots).items():
            self.hotspots.labels(dimension, symptom).set(n)
        for namespace, n in summary.stragglers_by_namespace.items():
            self.stragglers.labels(namespace).set(n)
        for cause, n in Counter(s.cause for s in summary.suspects).items():
            self.suspects.labels(cause).set(n)
