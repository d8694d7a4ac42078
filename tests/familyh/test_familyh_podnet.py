"""Family H's pod network bytes: what the sidecar counts in the pod's own network namespace.

The pod's part of its node's netdev bytes (node.py): network-storage reads, collectives over
sockets and checkpoint uploads; never the neighbours' or the node daemons' bytes, nor RDMA
(collectives over InfiniBand or RoCE, Lustre over o2ib). One pod per node.
"""

from __future__ import annotations

import numpy as np
from tests.podnet_checks import assert_carried_with_the_collector, assert_pods_within_their_node, by_pod

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyh import FamilyHJob
from bottleneck_operator_dev.familyh.hardware import FABRICS, STORAGES

RDMA_FABRICS = frozenset(k for k, f in FABRICS.items() if f.rdma)
TCP_FABRICS = frozenset(k for k, f in FABRICS.items() if not f.rdma)


def _storage(j: FamilyHJob) -> str:
    return next(t for t in j.tags if t in STORAGES)


def _mean(j: FamilyHJob, name: str) -> float:
    values = [float(np.nanmean(p.signals[name])) for p in j.window.pods if name in p.signals]
    return float(np.nanmean(values)) if values and np.isfinite(values).any() else float("nan")


def test_the_pod_network_bytes_come_with_the_sidecar(family: list[FamilyHJob]) -> None:
    pods = assert_carried_with_the_collector([j.window for j in family], families=True)
    assert pods > 50


def test_the_pod_receives_and_sends_no_more_than_its_node(family: list[FamilyHJob]) -> None:
    # The sidecar and node-exporter are scraped at their own phases, so at one timestamp rate() over
    # each one's range straddles a checkpoint pause or a lost scrape differently and the pod may read
    # more than its node. Over the window both rates integrate nearly the same span: the window means
    # stay within a few per cent of the truth (pod <= node), so 10 % bounds the sampling noise while
    # the node's daemons and neighbours (>= 1e5 B/s) are never needed to pass.
    # One pod per node, and two nodes of a job may draw the same name: each pod against its own node.
    checked = assert_pods_within_their_node(
        [j.window for j in family if not any(t in RDMA_FABRICS for t in j.tags)],
        tolerance=0.10,
        statistic=np.mean,
        key=by_pod,
        min_samples=5,
        skip_short=True,
    )
    assert checked > 20


def test_network_storage_reads_arrive_in_the_pod_and_local_or_rdma_reads_do_not(family: list[FamilyHJob]) -> None:
    io = [j for j in family if j.label is Bottleneck.IO and not any(t in TCP_FABRICS for t in j.tags)]
    over_tcp = [_mean(j, "sc_net_rx_bps") for j in io if STORAGES[_storage(j)].network]
    not_tcp = [_mean(j, "sc_net_rx_bps") for j in io if not STORAGES[_storage(j)].network]
    assert np.isfinite(over_tcp).sum() >= 3 and np.isfinite(not_tcp).sum() >= 3
    assert np.nanmedian(over_tcp) > 10 * max(np.nanmedian(not_tcp), 1e6)


def test_a_neighbour_raises_the_node_and_not_the_pod(family: list[FamilyHJob]) -> None:
    def excess(shared: bool) -> list[float]:
        return [
            float(np.nanmedian(p.signals["node_net_rx_bps"] - p.signals["sc_net_rx_bps"]))
            for j in family
            if any(t.startswith("neighbours-") for t in j.tags) is shared
            for p in j.window.pods
            if "sc_net_rx_bps" in p.signals and "node_net_rx_bps" in p.signals
        ]

    alone, shared = excess(False), excess(True)
    assert len(alone) >= 5 and len(shared) >= 5
    # alone: the node's daemons only (0.1-3 MB/s); shared: other pods' traffic as well
    assert np.nanmedian(np.abs(alone)) < 5e6
    assert np.nanmedian(shared) > 5 * np.nanmedian(np.abs(alone))


def test_collectives_over_sockets_show_in_the_pod_and_over_rdma_do_not(family: list[FamilyHJob]) -> None:
    multi = [j for j in family if len(j.window.pods) > 1 and not STORAGES[_storage(j)].network]
    tcp = [_mean(j, "sc_net_tx_bps") for j in multi if any(t in TCP_FABRICS for t in j.tags)]
    rdma = [(_mean(j, "sc_net_tx_bps"), _mean(j, "ib_tx_bps")) for j in multi if any(t in RDMA_FABRICS for t in j.tags)]
    pairs = [(pod, ib) for pod, ib in rdma if np.isfinite(pod) and np.isfinite(ib)]
    assert np.isfinite(tcp).sum() >= 3 and len(pairs) >= 3
    assert np.nanmedian(tcp) > 1e8  # gradients over sockets leave through the pod's interfaces
    assert all(pod < 0.01 * ib for pod, ib in pairs), pairs  # over RDMA the pod's interfaces stay quiet
