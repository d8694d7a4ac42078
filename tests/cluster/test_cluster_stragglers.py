"""Stragglers judged against a Job's own peers: the right pod and GPU, its cause, and what it costs."""

from __future__ import annotations

import pytest

from bottleneck_operator.analysis.cluster import JobDigest, PeerSample, find_stragglers
from bottleneck_operator.analysis.cluster.robust import OUTLIER_Z, modified_z

# Per-GPU figures a little apart, as real peers are (no two exactly alike).
JITTER = (1.0, 0.99, 1.01, 0.995, 1.005, 0.985, 1.015, 0.998)


def _job(peers: list[PeerSample]) -> JobDigest:
    return JobDigest(namespace="ml", name="train", bottleneck="GPU", gpus=len(peers), seconds=3600, peers=tuple(peers))


def _peers(pods: int = 4, gpus: int = 2, **override: dict[tuple[int, int], dict[str, float]]) -> list[PeerSample]:
    changes = override.get("changes", {})
    out = []
    for p in range(pods):
        for g in range(gpus):
            j = JITTER[(p * gpus + g) % len(JITTER)]
            figures: dict[str, float] = {
                "activity": 0.9 * j,
                "clock_mhz": 1400.0 * j,
                "slowdown": 0.0,
                "net_bps": 2e9 * j,
                "read_bps": 5e8 * j,
                "io_wait": 0.02 * j,
            }
            figures.update(changes.get((p, g), {}))
            out.append(PeerSample(pod=f"train-worker-{p}", node=f"node-{p}", gpu=str(g), **figures))
    return out


def test_one_gpu_with_a_held_down_clock_is_named_by_pod_gpu_and_cause() -> None:
    peers = _peers(changes={(2, 1): {"clock_mhz": 980.0, "slowdown": 0.9}})
    (found,) = find_stragglers(_job(peers))
    assert (found.pod, found.node, found.gpu, found.cause) == ("train-worker-2", "node-2", "1", "throttled-clock")
    clock = next(lag for lag in found.lags if lag.signal == "clock_mhz")
    # The share is the clock's shortfall against the peers' median, the peers' own figure.
    assert found.share == pytest.approx(1 - 980.0 / clock.peers, abs=1e-4)
    assert {lag.signal for lag in found.lags} == {"clock_mhz", "slowdown"}


def test_a_pod_starved_by_its_disk_is_named_without_a_gpu() -> None:
    slow = {"activity": 0.55, "io_wait": 0.4, "read_bps": 3e8}
    peers = _peers(changes={(1, 0): slow, (1, 1): slow})
    (found,) = find_stragglers(_job(peers))
    assert (found.pod, found.gpu, found.cause) == ("train-worker-1", None, "storage")
    assert 0.35 < found.share < 0.42


def test_a_pod_behind_on_the_network_names_the_network() -> None:
    slow = {"activity": 0.6, "net_bps": 8e8}
    found = find_stragglers(_job(_peers(pods=5, changes={(3, 0): slow, (3, 1): slow})))
    assert [(s.pod, s.cause) for s in found] == [("train-worker-3", "network")]


def test_peers_that_agree_name_nobody() -> None:
    assert find_stragglers(_job(_peers(pods=6))) == []


def test_two_pods_cannot_single_one_out() -> None:
    slow = {"activity": 0.5, "io_wait": 0.4}
    assert find_stragglers(_job(_peers(pods=2, gpus=1, changes={(1, 0): slow}))) == []


def test_a_small_lag_is_not_worth_naming() -> None:
    # Far outside the peers' spread, but 4 % of the Job's time: under the 5 % policy.
    clocks = {(p, 0): {"clock_mhz": 1400.0 + (p % 3 - 1) * 2.0} for p in range(6)}  # within 2 MHz of each other
    peers = _peers(pods=6, gpus=1, changes={**clocks, (4, 0): {"clock_mhz": 1350.0}})
    assert find_stragglers(_job(peers)) == []
    (found,) = find_stragglers(_job(peers), min_share=0.02)
    assert found.pod == "train-worker-4"


def test_a_lagging_network_alone_costs_nothing() -> None:
    # Its GPUs keep pace: the pod sends less, but no peer waits for it.
    peers = _peers(changes={(0, 0): {"net_bps": 5e8}, (0, 1): {"net_bps": 5e8}})
    assert find_stragglers(_job(peers)) == []


def test_a_signal_missing_on_one_peer_is_not_scored() -> None:
    peers = _peers(changes={(2, 1): {"clock_mhz": 900.0}})
    peers[0] = PeerSample(pod=peers[0].pod, node=peers[0].node, gpu=peers[0].gpu, activity=0.9)
    assert find_stragglers(_job(peers)) == []


def test_modified_z_matches_iglewicz_and_hoaglin() -> None:
    median, scores = modified_z([10.0, 11.0, 9.0, 10.0, 30.0])
    assert median == 10.0
    # MAD = 1: M = 0.6745 (x - 10) / 1
    assert scores == pytest.approx([0.0, 0.6745, -0.6745, 0.0, 13.49])
    assert scores[-1] > OUTLIER_Z
    # More than half the peers equal: the mean absolute deviation stands in for the MAD.
    median, scores = modified_z([5.0, 5.0, 5.0, 5.0, 0.0])
    assert median == 5.0 and scores[-1] == pytest.approx(-5.0 / (1.253314 * 1.0))
    assert modified_z([2.0, 2.0, 2.0]) == (2.0, [0.0, 0.0, 0.0])
