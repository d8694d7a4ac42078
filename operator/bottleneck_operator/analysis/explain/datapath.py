"""Where an IO-bound job's data comes from: the one reading its mechanism, evidence and capacity share.

An IO verdict's mechanism (``network-storage`` or ``local-disk``), the evidence sentence that gives
the two rates, the share of bytes that arrived over the network, and the rate the job would need all
read :func:`data_path`, so they cannot disagree. It reads the job's totals (:class:`JobSummary`):
block reads are the pod's own first (its cgroup, then cAdvisor's), the node's disks only where
neither was collected, since a node's disk also serves its neighbours (docs/analysis.md,
"Mechanisms"). Both rates are window means, so the share is a share of bytes, as the mechanism is
defined, not a mean of per-sample shares.
"""

from __future__ import annotations

from dataclasses import dataclass

from bottleneck_operator.analysis.explain.candidates import COLLECTIVE_NET, MAJORITY
from bottleneck_operator.analysis.features.levels import WAITED_ON
from bottleneck_operator.analysis.features.summary import JobSummary
from bottleneck_operator.contract.verdict import Mechanism

# how the capacity sentence names the way that carried the data
NETWORK_READS = "network reads"
STORAGE_READS = "storage reads"


@dataclass(frozen=True)
class DataPath:
    """The job's two ways in for data, and which one carried it.

    Attributes:
        net_bps: bytes/s it received over the network (its pods' own count, else its nodes'), None
            where not collected.
        read_bps: bytes/s it read from block storage, None where not collected.
        symmetry: network receive against transmit (smaller over larger), None unread.
        net_own: ``net_bps`` is the pods' own count (the collector's), not their nodes'.
    """

    net_bps: float | None
    read_bps: float | None
    symmetry: float | None
    net_own: bool = False

    @property
    def share(self) -> float | None:
        """The share of the bytes read that arrived over the network; None without a network reading."""
        if self.net_bps is None:
            return None
        total = self.net_bps + (self.read_bps or 0.0)
        return self.net_bps / total if total > 0 else None

    @property
    def over_network(self) -> bool:
        """Most bytes read arrived over the NIC, one way (all-reduce traffic is symmetric, the features'
        collectives line) or with the local disk carrying under 5 % of them: then the receive traffic
        is the data even if gradients share the NIC."""
        share = self.share
        if share is None or share < MAJORITY:
            return False
        one_way = self.symmetry is None or self.symmetry < COLLECTIVE_NET
        return one_way or share >= 1.0 - WAITED_ON

    @property
    def mechanism(self) -> Mechanism | None:
        """``network-storage`` or ``local-disk``; None when the network was not read (nothing tells)."""
        if self.share is None:
            return None
        return Mechanism.NETWORK_STORAGE if self.over_network else Mechanism.LOCAL_DISK

    @property
    def carrier(self) -> tuple[float, str] | None:
        """The rate of the way that carried the data, and its name for a sentence."""
        if self.over_network and self.net_bps is not None:
            return self.net_bps, NETWORK_READS
        if self.read_bps is not None:
            return self.read_bps, STORAGE_READS
        return None


def data_path(summary: JobSummary) -> DataPath:
    """The job's data path from its whole-window totals.

    Args:
        summary: the job's totals.

    Returns:
        The path; its fields are None where the signals were not collected.
    """
    rx, tx = summary.net_rx_bps, summary.net_tx_bps
    symmetry = None
    if rx is not None and tx is not None and max(rx, tx) > 0:
        symmetry = min(rx, tx) / max(rx, tx)
    return DataPath(rx, summary.read_bps, symmetry, summary.net_own)
