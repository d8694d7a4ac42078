"""The pod's own network bytes (``sc_net_rx_bps``, ``sc_net_tx_bps``) in the second family: the
pod's part of its node's network load, without the neighbours' traffic or RDMA's."""

from __future__ import annotations

import numpy as np
import pytest
from tests.podnet_checks import assert_carried_with_the_collector, assert_pods_within_their_node

from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.scenarios import ScenarioJob, generate_family

START = 1_700_000_000.0


@pytest.fixture(scope="module")
def jobs() -> list[ScenarioJob]:
    return generate_family(6, 240, start=START)


def _median(jobs: list[ScenarioJob], name: str) -> float:
    return float(np.median([np.nanmedian(p.signals[name]) for j in jobs for p in j.window.pods]))


def _with_collector(jobs: list[ScenarioJob]) -> list[ScenarioJob]:
    return [j for j in jobs if Family.SIDECAR in j.window.quality.families]


def test_present_wherever_the_collector_is(jobs: list[ScenarioJob]) -> None:
    """Every pod the collector runs in has both signals, finite or NaN (a failed scrape), never
    negative; where the cluster runs no collector, neither (nor their family)."""
    pods = assert_carried_with_the_collector([j.window for j in jobs], families=True, finite=0.8)
    assert pods > 50


def test_pods_never_add_up_to_more_than_their_node(jobs: list[ScenarioJob]) -> None:
    """Off RDMA fabrics, a node's profiled pods send and receive at most what its interfaces carry
    (which add the neighbours' traffic and any other Job's pods).

    Tolerance: here node and pods share each scrape's timing and rate range, so they differ only by
    their independent 3 % counter jitter: the ratio's spread is about 0.03 x sqrt(2) = 4.2 % per
    timestamp, and 25 % is over five of those (the ~15,000 timestamps checked reach 18 %). The
    median over a window averages the jitter down: 6 % is over four of its spreads.
    """
    windows = [j.window for j in _with_collector(jobs) if "rdma" not in j.tags]
    assert_pods_within_their_node(windows, tolerance=0.25, statistic=np.max, ratio=True)
    checked = assert_pods_within_their_node(windows, tolerance=0.06, statistic=np.median, ratio=True)
    assert checked > 100


def test_network_storage_is_received_local_disks_are_not(jobs: list[ScenarioJob]) -> None:
    """IO-bound Jobs reading NFS, FUSE or an object store receive their data on the pod's interfaces;
    those reading local disks count it in ``io.stat`` and receive only their own background."""
    io = [j for j in _with_collector(jobs) if j.label is Bottleneck.IO]
    remote = [j for j in io if j.mechanism in ("network-storage", "object-store")]
    local = [j for j in io if j.mechanism == "local-disk" and "ethernet" not in j.tags]
    assert remote and local
    assert _median(remote, "sc_net_rx_bps") > 100 * _median(local, "sc_net_rx_bps")
    assert _median(local, "sc_io_read_bps") > 100 * _median(remote, "sc_io_read_bps")


def test_neighbours_raise_the_node_and_not_the_pod(jobs: list[ScenarioJob]) -> None:
    """A Job with a node to itself receives what its node does (within the counters' noise); beside
    neighbours, the node receives their traffic on top, which the pods' own counts leave out."""
    alone, excess = [], []
    for j in _with_collector(jobs):
        pods = j.window.pods
        if j.partner or len({p.node for p in pods}) != 1:
            continue
        own = float(np.nansum([np.nanmedian(p.signals["sc_net_rx_bps"]) for p in pods]))
        node = float(np.nanmedian(pods[0].signals["node_net_rx_bps"]))
        if pods[0].co_located_pods == 0:
            alone.append(own / node)
        else:  # each neighbour receives 0.1-50 MB/s
            excess.append(node - own)
    assert len(alone) > 5 and len(excess) > 5
    assert min(alone) > 0.9 and max(alone) < 1.1
    assert np.mean(np.asarray(excess) > 1e7) > 0.75


def test_collectives_over_ethernet_are_the_pods_over_rdma_are_not(jobs: list[ScenarioJob]) -> None:
    """Network-bound Jobs: over Ethernet each pod sends its all-reduce from its own interfaces; over
    RDMA the adapters' ports carry it and the pods' interfaces send little."""
    network = [j for j in _with_collector(jobs) if j.mechanism == "network" and not j.partner]
    ethernet = [j for j in network if "ethernet" in j.tags]
    rdma = [j for j in network if "rdma" in j.tags]
    assert ethernet and rdma
    for j in ethernet:
        assert _median([j], "sc_net_tx_bps") > 1e8, j.name
        assert _median([j], "sc_net_rx_bps") > 1e8, j.name
    # what is left over RDMA: the pods' requests to network storage and their own background
    assert max(_median([j], "sc_net_tx_bps") for j in rdma) < 0.01 * min(
        _median([j], "sc_net_tx_bps") for j in ethernet
    )
