"""The pod's own network bytes (sc_net_rx_bps, sc_net_tx_bps) in the blind family."""

from __future__ import annotations

import numpy as np
import pytest
from tests.podnet_checks import assert_carried_with_the_collector, assert_pods_within_their_node

from bottleneck_operator_dev.blindfamily import BlindJob, generate_blind_family

START = 1_750_000_000.0


@pytest.fixture(scope="module")
def family() -> list[BlindJob]:
    return generate_blind_family(5, 150, start=START)


def _median(job: BlindJob, signal: str) -> list[float]:
    return [float(np.nanmedian(p.signals[signal])) for p in job.window.pods if signal in p.signals]


def test_every_pod_with_the_sidecar_carries_its_network_bytes(family: list[BlindJob]) -> None:
    pods = assert_carried_with_the_collector([j.window for j in family], families=True, finite=0.5)
    assert pods > 50  # over 100 series, both of each pod's


def test_the_pods_on_a_node_never_add_up_to_more_than_the_node(family: list[BlindJob]) -> None:
    # The pods' bytes and the node's are refreshed, smoothed and held alike here (same scrape, same
    # rate window, same phase), so sample by sample the pods' sum is at most the node's; only the
    # faults differ (a failed scrape, a misread counter reset that spikes one sample). Medians over
    # the window ignore those single samples, and 1 % covers the medians of a sum against a sum.
    checked = assert_pods_within_their_node([j.window for j in family], tolerance=0.01, statistic=np.median)
    assert checked > 50


def test_network_storage_reads_arrive_on_the_pods_interfaces(family: list[BlindJob]) -> None:
    nfs = [x for j in family if j.mechanism == "nfs" for x in _median(j, "sc_net_rx_bps")]
    local = [x for j in family if j.mechanism in ("local-disk", "block-volume") for x in _median(j, "sc_net_rx_bps")]
    assert nfs and local
    assert np.median(nfs) > 20 * np.median(local)


def test_socket_collectives_show_in_the_pods_tx_rdma_does_not(family: list[BlindJob]) -> None:
    ethernet = [x for j in family if j.mechanism == "ethernet-allreduce" for x in _median(j, "sc_net_tx_bps")]
    rdma = [j for j in family if j.mechanism == "rdma-allreduce" and _median(j, "sc_net_tx_bps")]
    assert ethernet and rdma
    assert min(ethernet) > 100e6
    for j in rdma:
        # the all-reduce's bytes are on the HCA (ib_tx_bps, where the collector runs), not the pod's netdev
        assert max(_median(j, "sc_net_tx_bps")) < 20e6, j.name
