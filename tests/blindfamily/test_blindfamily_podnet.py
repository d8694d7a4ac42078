"""The pod's own network bytes (sc_net_rx_bps, sc_net_tx_bps) in the blind family."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from bottleneck_operator.contract.signals import Family
from bottleneck_operator_dev.blindfamily import BlindJob, generate_blind_family

START = 1_750_000_000.0
NET = ("sc_net_rx_bps", "sc_net_tx_bps")


@pytest.fixture(scope="module")
def family() -> list[BlindJob]:
    return generate_blind_family(5, 150, start=START)


def _median(job: BlindJob, signal: str) -> list[float]:
    return [float(np.nanmedian(p.signals[signal])) for p in job.window.pods if signal in p.signals]


def test_every_pod_with_the_sidecar_carries_its_network_bytes(family: list[BlindJob]) -> None:
    seen = 0
    for j in family:
        assert (Family.SIDECAR_NET in j.window.quality.families) == (Family.SIDECAR in j.window.quality.families)
        for p in j.window.pods:
            has_sidecar = "sc_cpu_cores" in p.signals
            for s in NET:
                assert (s in p.signals) == has_sidecar, (j.name, p.pod, s)
                if has_sidecar:
                    v = np.asarray(p.signals[s])
                    assert not np.isinf(v).any() and not (v < 0).any(), (j.name, p.pod, s)
                    assert np.isfinite(v).mean() > 0.5
                    seen += 1
    assert seen > 100


def test_the_pods_on_a_node_never_add_up_to_more_than_the_node(family: list[BlindJob]) -> None:
    # The pods' bytes and the node's are refreshed, smoothed and held alike here (same scrape, same
    # rate window, same phase), so sample by sample the pods' sum is at most the node's; only the
    # faults differ (a failed scrape, a misread counter reset that spikes one sample). Medians over
    # the window ignore those single samples, and 1 % covers the medians of a sum against a sum.
    checked = 0
    for j in family:
        nodes = defaultdict(list)
        for p in j.window.pods:
            if "sc_net_rx_bps" in p.signals and "node_net_rx_bps" in p.signals:
                nodes[p.node].append(p)
        for pods in nodes.values():
            for way in ("rx", "tx"):
                own = np.nansum([np.asarray(p.signals[f"sc_net_{way}_bps"]) for p in pods], axis=0)
                node = np.asarray(pods[0].signals[f"node_net_{way}_bps"])
                ok = np.isfinite(node) & np.all([np.isfinite(p.signals[f"sc_net_{way}_bps"]) for p in pods], axis=0)
                assert np.median(own[ok]) <= np.median(node[ok]) * 1.01, (j.name, way)
                checked += 1
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
