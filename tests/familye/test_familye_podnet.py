"""The pod's own network bytes (sc_net_rx_bps, sc_net_tx_bps): what the collector counts in the pod's namespace."""

from __future__ import annotations

import numpy as np
import pytest
from tests.podnet_checks import assert_carried_with_the_collector, assert_pods_within_their_node

from bottleneck_operator_dev.familye import FamilyEJob, generate_family_e
from bottleneck_operator_dev.familye.nodeseries import BG_RX, BG_TX, OWN_BACKGROUND

START = 1_750_000_000.0
NET = ("sc_net_rx_bps", "sc_net_tx_bps")
NETWORK_STORAGE = ("storage:nfs", "storage:efs", "storage:object-http")


@pytest.fixture(scope="module")
def family() -> list[FamilyEJob]:
    return generate_family_e(9, 150, start=START)


def _medians(job: FamilyEJob, signal: str) -> list[float]:
    return [float(np.nanmedian(p.signals[signal])) for p in job.window.pods if signal in p.signals]


def test_every_pod_with_the_collector_carries_its_network_bytes(family: list[FamilyEJob]) -> None:
    pods = assert_carried_with_the_collector([j.window for j in family], families=True)
    assert pods > 50  # over 100 series, both of each pod's


def test_the_pods_on_a_node_never_add_up_to_more_than_the_node(family: list[FamilyEJob]) -> None:
    # The collector and node-exporter are scraped on their own intervals, phases and misses, so
    # their rate()s cover slightly different ranges (and a restart is read with up to one scrape's
    # error). Over the window's median those errors shrink to a few per cent; 10 % leaves room for a
    # short window whose median falls on a checkpoint's or restart's edge.
    checked = assert_pods_within_their_node(
        [j.window for j in family], tolerance=0.10, statistic=np.median, skip_short=True
    )
    assert checked > 50


def _tcp_free(j: FamilyEJob) -> bool:
    return not any(t.startswith("fabric:eth") for t in j.tags)


def test_network_storage_reads_arrive_on_the_pods_interfaces(family: list[FamilyEJob]) -> None:
    # IO-bound jobs without TCP collectives: a pod reading local disks receives its own background
    # alone, one reading NFS, EFS or an object store its reads
    net = [
        x
        for j in family
        if _tcp_free(j) and j.mechanism == "network-storage" and any(t in j.tags for t in NETWORK_STORAGE)
        for x in _medians(j, NET[0])
    ]
    local = [
        x
        for j in family
        if _tcp_free(j) and j.mechanism == "local-disk" and not any(t in j.tags for t in NETWORK_STORAGE)
        for x in _medians(j, NET[0])
    ]
    assert net and local
    assert max(local) <= OWN_BACKGROUND * BG_RX * 1.05
    assert min(net) > 10 * max(local)


def test_collectives_over_sockets_show_in_the_pods_tx_over_rdma_they_do_not(family: list[FamilyEJob]) -> None:
    tcp, rdma = [], []
    for j in family:
        if j.mechanism != "network" or not _medians(j, NET[1]):
            continue
        tx = float(np.median(_medians(j, NET[1])))
        if any(t.startswith("fabric:eth") for t in j.tags):
            tcp.append(tx)
        elif any(t.startswith(("fabric:roce", "fabric:ib")) for t in j.tags):
            rdma.append(tx)
    assert tcp and rdma
    assert min(tcp) > 50e6
    assert max(rdma) <= OWN_BACKGROUND * BG_TX * 1.05  # the HCA carries them: ib_tx_bps, not netdev
