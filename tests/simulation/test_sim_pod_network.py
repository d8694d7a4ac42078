"""The pod's own network bytes (``sc_net_rx_bps``, ``sc_net_tx_bps``): what the collector counts on the
pod's network namespace, as against the node's interfaces that every pod and neighbour shares."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from tests.podnet_checks import assert_carried_with_the_collector, assert_pods_within_their_node

from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator.contract.window import JobWindow, PodWindow
from bottleneck_operator_dev.simulation import SimulatedJob, catalog, generate_jobs

START = 1_700_000_000.0
NET = ("sc_net_rx_bps", "sc_net_tx_bps")


@pytest.fixture(scope="module")
def long_jobs() -> list[SimulatedJob]:
    """An hour of each of 80 jobs, so that the training part of each window has a hundred timestamps."""
    return generate_jobs(33, 80, start=START, duration=3600.0, include_ambiguous=True)


def _training_window(job: SimulatedJob) -> JobWindow:
    return job.to_window(step=30.0, start=job.start + job.params.env.startup_s + 300)


def _training(job: SimulatedJob) -> list[PodWindow]:
    return list(_training_window(job).pods)


def _median(jobs: list[SimulatedJob], name: str) -> float:
    return float(np.median([np.nanmedian(p.signals[name]) for j in jobs for p in _training(j)]))


def _with_env(job: SimulatedJob, **env: Any) -> SimulatedJob:
    """The same job (same seed, same draws) in another environment."""
    return replace(job, params=replace(job.params, env=replace(job.params.env, **env)))


def test_present_with_the_sidecar_only(many_jobs: list[SimulatedJob]) -> None:
    """Every pod of a job with the collector has both signals, finite or NaN (a missed scrape), never
    negative; without the collector, neither (nor their family)."""
    windows = [job.to_window(step=30.0) for job in many_jobs]
    assert [Family.SIDECAR_NET in w.quality.families for w in windows] == [j.params.env.sidecar for j in many_jobs]
    with_sidecar = assert_carried_with_the_collector(windows, families=True, finite=0.5)
    assert with_sidecar > 20


def test_pods_never_add_up_to_more_than_their_node(long_jobs: list[SimulatedJob]) -> None:
    """On a node, the job's pods' own bytes add up to at most the node's (which adds the neighbours'
    and the node's own traffic).

    Tolerance: both sides carry their own 3 % per-scrape jitter (their ratio about 4 % per sample), and
    each exporter scrapes at its own phase, so a phase change (a checkpoint, an evaluation pass) falls
    into different rate ranges, and after a scrape gap the node's rate may rest on two samples: single
    timestamps may differ by far more than the noise. The median over the training part of an hour
    drops those; 10 % is more than twice the per-sample noise, and well below what counting a
    neighbour's traffic or the collectives twice would add to the pods.
    """
    checked = assert_pods_within_their_node(
        [_training_window(job) for job in long_jobs if job.params.env.sidecar and not job.params.env.rdma],
        tolerance=0.10,
        statistic=np.median,
        ratio=True,
        min_samples=41,
    )
    assert checked > 40


def test_network_storage_is_received_local_disks_are_not(many_jobs: list[SimulatedJob]) -> None:
    """IO-bound jobs reading NFS or an object store receive their data on the pod's interfaces; those
    reading local disks receive only their own background (and any collectives), while the disks'
    bytes show in the collector's ``io.stat`` reads instead."""
    io = [j for j in many_jobs if j.label is Bottleneck.IO and j.params.env.sidecar and j.params.n_nodes == 1]
    remote = [j for j in io if catalog.STORAGE_KINDS[j.params.storage].network]
    local = [j for j in io if not catalog.STORAGE_KINDS[j.params.storage].network]
    assert remote and local
    assert _median(remote, "sc_net_rx_bps") > 100 * _median(local, "sc_net_rx_bps")
    assert _median(local, "sc_io_read_bps") > 100 * _median(remote, "sc_io_read_bps")


def test_a_neighbours_traffic_is_the_nodes_not_the_pods(long_jobs: list[SimulatedJob]) -> None:
    """The same job beside a neighbour streaming 400 MB/s: the node's receive count rises by that, the
    pod's own count stays exactly as it was."""
    job = next(j for j in long_jobs if j.params.env.sidecar and j.params.env.neighbour_net_bps < 1e6)
    busy = _with_env(job, neighbour_net_bps=4e8)
    quiet_pod, busy_pod = _training(job)[0], _training(busy)[0]
    for name in NET:
        np.testing.assert_array_equal(busy_pod.signals[name], quiet_pod.signals[name])
    rise = np.nanmedian(busy_pod.signals["node_net_rx_bps"] - quiet_pod.signals["node_net_rx_bps"])
    assert 3e8 < rise < 5e8


def test_collectives_over_sockets_are_the_pods_over_rdma_are_not(long_jobs: list[SimulatedJob]) -> None:
    """A multi-node job's all-reduce over sockets shows in each pod's sent and received bytes; the same
    job over RDMA leaves them (the adapters' port counters carry it instead)."""
    job = next(
        j
        for j in long_jobs
        if j.params.env.sidecar and j.params.n_nodes > 1 and j.params.grad_bytes > 1e8 and not j.params.env.rdma
    )
    sockets = _median([job], "sc_net_tx_bps")
    rdma = _median([_with_env(job, rdma=True, ib_ports=2)], "sc_net_tx_bps")
    # the ring all-reduce sends 2 (n - 1) / n of the gradient per step, a node's share per pod
    sc = job.params
    steps = np.nanmedian(job.state.pod["step_s"])
    expected = 2 * (sc.n_nodes - 1) / sc.n_nodes * sc.grad_bytes / steps / sc.pods_per_node
    assert sockets > 0.3 * expected
    assert rdma < 0.05 * sockets
    assert _median([job], "sc_net_rx_bps") > 0.3 * expected
