"""Scoring the cluster analysis on simulated clusters: each finding read as the pattern it points at."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from bottleneck_operator.analysis.cluster.stragglers import find_stragglers
from bottleneck_operator.analysis.cluster.summary import ClusterSummary
from bottleneck_operator_dev.simulation.cluster import PATTERNS, Fault, SimCluster

# A hot spot's (dimension, symptom), or a suspect's ("suspect", cause), -> the pattern it names.
_HOTSPOT_PATTERN = {
    ("node", "IO"): "slow-node-storage",
    ("node", "Interconnect"): "degraded-nic",
    ("storage", "IO"): "hot-filesystem",
    ("rack", "Throttled"): "power-capped-rack",
    ("node", "Throttled"): "power-capped-rack",
    ("rack", "IO"): "slow-node-storage",
    ("rack", "Interconnect"): "degraded-nic",
    ("fabric", "Interconnect"): "degraded-nic",
}
_SUSPECT_PATTERN = {"storage": "slow-node-storage", "network": "degraded-nic", "throttled-clock": "bad-gpu"}


@dataclass(frozen=True)
class Finding:
    """One thing the summary accuses: the pattern it names and where (a GPU as ``node/gpu``)."""

    pattern: str
    dimension: str
    location: str


def findings(summary: ClusterSummary) -> list[Finding]:
    """The summary's hot spots and suspects, each as the pattern it names."""
    out = [
        Finding(_HOTSPOT_PATTERN.get((h.dimension, h.symptom), "other"), h.dimension, h.location)
        for h in summary.hotspots
    ]
    for s in summary.suspects:
        location = s.node if s.gpu is None else f"{s.node}/{s.gpu}"
        out.append(Finding(_SUSPECT_PATTERN[s.cause], "gpu" if s.gpu is not None else "node", location))
    return out


def is_right(finding: Finding, fault: Fault | None) -> bool:
    """Whether a finding names the planted fault (its pattern and its place)."""
    if fault is None or finding.pattern != fault.pattern:
        return False
    if fault.pattern == "bad-gpu":
        return finding.location == f"{fault.location}/{fault.gpu}"
    return finding.dimension == fault.dimension and finding.location == fault.location


@dataclass
class PatternScore:
    """Counts for one pattern over many clusters."""

    true_positives: int = 0
    false_positives: int = 0
    detected: int = 0
    planted: int = 0

    @property
    def precision(self) -> float:
        accused = self.true_positives + self.false_positives
        return self.true_positives / accused if accused else 1.0

    @property
    def recall(self) -> float:
        return self.detected / self.planted if self.planted else 0.0


@dataclass
class Scores:
    """Per-pattern scores, and the false alarms raised on healthy clusters."""

    patterns: dict[str, PatternScore] = field(default_factory=lambda: {p: PatternScore() for p in PATTERNS})
    healthy_clusters: int = 0
    healthy_alarms: int = 0

    def add(self, cluster: SimCluster, summary: ClusterSummary) -> None:
        """Score one cluster's summary against its planted fault."""
        found = findings(summary)
        fault = cluster.fault
        if fault is None:
            self.healthy_clusters += 1
            self.healthy_alarms += len(found)
        else:
            score = self.patterns[fault.pattern]
            score.planted += 1
            score.detected += any(is_right(f, fault) for f in found)
        for f in found:
            if f.pattern in self.patterns:
                right = is_right(f, fault)
                self.patterns[f.pattern].true_positives += right
                self.patterns[f.pattern].false_positives += not right


@dataclass
class StragglerScore:
    """Stragglers named per Job: right pod and GPU where one is planted, none where none is."""

    planted: int = 0
    right: int = 0
    healthy: int = 0
    clean: int = 0
    unidentifiable: int = 0

    def add(self, cluster: SimCluster) -> None:
        """Score every multi-GPU Job of a cluster."""
        for job in cluster.jobs:
            if len(job.peers) < 2:
                continue
            found = find_stragglers(job)
            truth = cluster.stragglers.get(job.key)
            if truth is None:
                self.healthy += 1
                self.clean += not found
            elif not _identifiable(job.peers, truth.gpu):
                self.unidentifiable += 1
            else:
                self.planted += 1
                self.right += bool(found) and found[0].pod == truth.pod and found[0].gpu == truth.gpu


def _identifiable(peers: Sequence[object], gpu: str | None) -> bool:
    """Whether peers can single the planted one out: three pods, or three GPUs for a single GPU."""
    pods = {getattr(p, "pod", None) for p in peers}
    return len(pods) >= 3 or (gpu is not None and len(peers) >= 3)
