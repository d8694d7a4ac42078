"""The pod's own network bytes (sc_net_rx_bps, sc_net_tx_bps): what the sidecar counts in the pod's namespace."""

from __future__ import annotations

import numpy as np
import pytest
from tests.familyd.conftest import START, STEP
from tests.podnet_checks import assert_carried_with_the_collector, assert_pods_within_their_node

from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.verdict import Mechanism
from bottleneck_operator_dev.familyd.family import labels, simulate_family_job
from bottleneck_operator_dev.familyd.job import Simulated, mechanism_of

NET = ("sc_net_rx_bps", "sc_net_tx_bps")


@pytest.fixture(scope="module")
def jobs() -> list[Simulated]:
    """More jobs than the folder's shared family, so that every mechanism below has several."""
    return [
        simulate_family_job(23, i, lab, mem, start=START, step=STEP) for i, (lab, mem) in enumerate(labels(23, 150))
    ]


def _medians(sim: Simulated, signal: str) -> list[float]:
    return [float(np.nanmedian(p.signals[signal])) for p in sim.window.pods if signal in p.signals]


def test_every_pod_with_the_sidecar_carries_its_network_bytes(jobs: list[Simulated]) -> None:
    for sim in jobs:
        # the setup's exporters are the window's: its families say where the sidecar ran
        families = sim.drawn.setup.exporters.families
        assert (Family.SIDECAR_NET in families) == (Family.SIDECAR in families)
        assert (Family.SIDECAR in families) == (Family.SIDECAR in sim.window.quality.families), sim.window.job
    pods = assert_carried_with_the_collector([sim.window for sim in jobs], families=True)
    assert pods > 50  # over 100 series, both of each pod's


def test_the_pods_on_a_node_never_add_up_to_more_than_the_node(jobs: list[Simulated]) -> None:
    # The sidecar and node-exporter are scraped at their own intervals and phases, so their rate()s
    # cover slightly different ranges, and a counter reset is read with an error of up to one scrape
    # interval's bytes. Over the window's median those errors shrink to a few per cent; 10 % leaves
    # room for a short window (20 samples) whose median falls on a checkpoint's edge. Pods are
    # grouped by the setup's nodes (two nodes of a job may draw the same name).
    setups = {sim.window.job: sim.drawn.setup for sim in jobs}
    assert len(setups) == len(jobs)
    checked = assert_pods_within_their_node(
        [sim.window for sim in jobs],
        tolerance=0.10,
        statistic=np.median,
        key=lambda window, index, _: setups[window.job].node_of(index),
    )
    assert checked > 50


def test_network_storage_jobs_receive_what_local_disk_jobs_do_not(jobs: list[Simulated]) -> None:
    net = [x for sim in jobs if mechanism_of(sim.drawn) is Mechanism.NETWORK_STORAGE for x in _medians(sim, NET[0])]
    local = [
        x
        for sim in jobs
        if mechanism_of(sim.drawn) is Mechanism.LOCAL_DISK and sim.drawn.setup.fabric is None
        for x in _medians(sim, NET[0])
    ]
    assert net and local
    assert min(net) > 10 * max(local)


def test_collectives_over_sockets_show_in_the_pods_tx_over_rdma_they_do_not(jobs: list[Simulated]) -> None:
    tcp, rdma = 0, 0
    for sim in jobs:
        fabric = sim.drawn.setup.fabric
        if fabric is None or sim.drawn.mechanism_draw != "network" or not _medians(sim, NET[1]):
            continue
        tx = np.median(_medians(sim, NET[1]))
        if fabric.rdma:
            # the all-reduce's bytes are on the HCAs: the pod's netdev carries its background alone
            assert tx < 5e6, sim.window.job
            rdma += 1
        else:
            assert tx > 50e6, sim.window.job
            tcp += 1
    assert tcp and rdma


def test_a_neighbours_traffic_is_in_the_nodes_count_not_the_pods(jobs: list[Simulated]) -> None:
    gaps: dict[bool, list[float]] = {True: [], False: []}
    for sim in jobs:
        setup, pods = sim.drawn.setup, sim.window.pods
        if (
            setup.pods_per_node != 1
            or "sc_net_rx_bps" not in pods[0].signals
            or "node_net_rx_bps" not in pods[0].signals
        ):
            continue
        for i, p in enumerate(pods):
            gap = np.nanmedian(np.asarray(p.signals["node_net_rx_bps"]) - np.asarray(p.signals["sc_net_rx_bps"]))
            gaps[setup.neighbours[setup.node_of(i)] > 0].append(float(gap))
    assert gaps[True] and gaps[False]
    assert np.median(gaps[True]) > 3 * np.median(gaps[False])
