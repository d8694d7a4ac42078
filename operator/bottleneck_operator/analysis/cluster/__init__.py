"""Cluster-wide insight over many Jobs' verdicts: stragglers, hot spots and the summary.

Pure, like the rest of :mod:`bottleneck_operator.analysis`: its input is one :class:`JobDigest` per
Job (the verdict plus per-pod/per-GPU summaries), its output plain dataclasses. The controller
builds the digests from each pass's windows and writes the ``ClusterBottleneckSummary``; the
simulator builds them directly, so a thousand-Job cluster costs milliseconds to draw.
"""

from bottleneck_operator.analysis.cluster.digest import JobDigest, PeerSample
from bottleneck_operator.analysis.cluster.hotspots import HotSpot, find_hotspots
from bottleneck_operator.analysis.cluster.stragglers import Straggler, find_stragglers
from bottleneck_operator.analysis.cluster.summary import ClusterBook, ClusterSummary, summarise
from bottleneck_operator.analysis.cluster.suspects import Suspect, find_suspects

__all__ = [
    "ClusterBook",
    "ClusterSummary",
    "HotSpot",
    "JobDigest",
    "PeerSample",
    "Straggler",
    "Suspect",
    "find_hotspots",
    "find_stragglers",
    "find_suspects",
    "summarise",
]
