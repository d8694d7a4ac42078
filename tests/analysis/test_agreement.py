"""A verdict agrees with itself: its mechanism, evidence, headroom and capacity read the same quantities."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from types import SimpleNamespace

import pytest

from bottleneck_operator.analysis.classify import analyze_window, analyze_windows
from bottleneck_operator.analysis.evaluation.scoring import invariants
from bottleneck_operator.analysis.explain.advice import COMPUTE_ADVICE, LAUNCH_ADVICE
from bottleneck_operator.analysis.explain.agreement import disagreements
from bottleneck_operator.analysis.explain.candidates import MAJORITY
from bottleneck_operator.analysis.features.extract import extract_features, value
from bottleneck_operator.analysis.features.series_names import Series
from bottleneck_operator.analysis.model.classifier import load_model
from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.verdict import Bottleneck, Mechanism, Verdict
from bottleneck_operator_dev.simulation import generate_jobs

from .conftest import FixedModel
from .synth import GB, make_window

B, M = Bottleneck, Mechanism
START = 1767225600.0  # fixed: the simulator's output does not depend on the calendar

# The docs' dlrm-finetune sample: reads over NFS at ~22 MB/s, the pod's own block reads ~20 kB/s, and
# a neighbour on the node streaming its disk at 1.4 GB/s.
REMOTE_BESIDE_A_BUSY_DISK = {
    "node_net_rx_bps": 21.7e6,
    "node_net_tx_bps": 1.0e6,
    "node_disk_read_bps": 1.4 * GB,
    "fs_read_bps": 20e3,
    "sc_io_read_bps": 20e3,
    # a collector from before the pod's own network count: the nodes' count is all there is
    "sc_net_rx_bps": float("nan"),
    "sc_net_tx_bps": float("nan"),
}


def io_verdict(overrides: dict[str, float]) -> Verdict:
    return analyze_window(make_window(B.IO, noise=0.0, overrides=overrides), FixedModel({B.IO: 0.9}))


def test_remote_reads_beside_a_neighbours_busy_disk_agree() -> None:
    """The feature row's share counts the node's disk (the neighbour's 1.4 GB/s): read there, the
    mechanism said local-disk while the evidence and capacity, from the pod's own reads, said network.
    Now all three read the job's totals."""
    w = make_window(B.IO, noise=0.0, overrides=REMOTE_BESIDE_A_BUSY_DISK)
    share = value(extract_features([w])[0], Series.NET_RX_SHARE.mean)
    assert share is not None and share < MAJORITY  # what the old rule read: under half, "local-disk"
    v = io_verdict(REMOTE_BESIDE_A_BUSY_DISK)
    assert v.mechanism is M.NETWORK_STORAGE
    signals = {e.signal: e for e in v.evidence}
    assert signals["node_net_rx_bps"].observed == pytest.approx(21.7e6)
    assert "read_bps" not in signals
    net_share = signals.get("node_net_rx_share")
    assert net_share is None or net_share.observed > 0.99
    assert "of network reads" in v.capacity[0].message and v.capacity[0].observed == pytest.approx(21.7e6)
    assert disagreements(v) == ()


def test_local_reads_beside_network_traffic_agree() -> None:
    """Block reads carrying most bytes: local-disk, its rate and its capacity; the network's share is not
    shown as a sign of remote storage."""
    v = io_verdict({"node_net_rx_bps": 0.2 * GB, "node_net_tx_bps": 0.01 * GB})
    assert v.mechanism is M.LOCAL_DISK
    signals = {e.signal for e in v.evidence}
    assert "read_bps" in signals and not signals & {"node_net_rx_bps", "node_net_rx_share"}
    assert "of storage reads" in v.capacity[0].message
    assert disagreements(v) == ()


def test_disagreements_name_each_item_that_speaks_for_another_mechanism() -> None:
    """The check can fail: the same verdict relabelled with the class's other mechanism contradicts its
    rate and its capacity."""
    v = io_verdict(REMOTE_BESIDE_A_BUSY_DISK)
    found = disagreements(replace(v, mechanism=M.LOCAL_DISK))
    assert any("evidence node_net_rx_bps speaks for network-storage" in s for s in found)
    assert any("capacity storage_read counts network reads" in s for s in found)
    # Unknown and a verdict that names no mechanism have nothing to contradict
    assert disagreements(replace(v, mechanism=None)) == ()


def test_gpu_advice_follows_the_mechanism() -> None:
    """The launch advice and the GPU mechanism read one test: a compute-bound verdict is advised more GPUs,
    never CUDA graphs, and the check catches the same advice under the other mechanism."""
    v = analyze_window(make_window(B.GPU, noise=0.0), FixedModel({B.GPU: 0.9}))
    assert v.mechanism is M.COMPUTE
    actions = {r.action for r in v.recommendations}
    assert COMPUTE_ADVICE in actions and LAUNCH_ADVICE not in actions
    assert disagreements(v) == ()
    found = disagreements(replace(v, mechanism=M.LAUNCH_BOUND))
    assert f"GPU/launch-bound: advice {COMPUTE_ADVICE!r} is for compute" in found


def test_memory_evidence_follows_the_mechanism_that_the_account_decides() -> None:
    """Memory PSI the GPUs' idle time leaves no room for is no host-memory wait: HBM-bound, DRAM as
    evidence, no pressure item; with the GPUs idle the same pressure is the wait, and shown."""
    pressure = {"sc_psi_mem_some": 0.3, "dram_active": 0.7}
    busy = make_window(B.MEMORY, noise=0.0, overrides={**pressure, "gpu_util": 0.99, "gr_engine_active": 0.99})
    v = analyze_window(busy, FixedModel({B.MEMORY: 0.9}))
    assert v.mechanism is M.HBM_BANDWIDTH
    assert "sc_psi_mem_some" not in {e.signal for e in v.evidence} and disagreements(v) == ()
    idle = make_window(B.MEMORY, noise=0.0, overrides={**pressure, "gpu_util": 0.4, "gr_engine_active": 0.4})
    v = analyze_window(idle, FixedModel({B.MEMORY: 0.9}))
    assert v.mechanism is M.HOST_MEMORY_PRESSURE
    assert v.evidence[1].signal == "sc_psi_mem_some" and disagreements(v) == ()
    assert disagreements(replace(v, mechanism=M.HBM_BANDWIDTH))


def test_a_network_bound_job_is_not_given_the_pcie_links_wait() -> None:
    """Across nodes the wait is on the fabric between them: with no RDMA ports read (an Ethernet NIC's
    capacity is not exported) it was not measured, so no headroom, where the busiest link (PCIe) gave one."""
    balanced = {"pcie_rx_bps": 20 * GB, "pcie_tx_bps": 20 * GB}
    w = make_window(B.INTERCONNECT, pods=2, noise=0.0, overrides=balanced, drop=[Family.NODE_IB])
    v = analyze_window(w, FixedModel({B.INTERCONNECT: 0.9}))
    assert v.mechanism is M.NETWORK
    assert v.headroom is None
    assert "wait_share" not in {e.signal for e in v.evidence}
    assert disagreements(v) == ()


def test_an_infiniband_wait_says_how_its_capacity_was_taken() -> None:
    """The infiniband byte counters the contract reads are summed over every port, without the ports'
    rates: the wait read against one port at the slowest rate is the most the fabric was busy, and the
    evidence and headroom say so."""
    rdma = {"ib_rx_bps": 10 * GB, "ib_tx_bps": 10 * GB}
    w = make_window(B.INTERCONNECT, pods=2, noise=0.0, overrides=rdma)
    v = analyze_window(w, FixedModel({B.INTERCONNECT: 0.9}))
    assert v.mechanism is M.NETWORK
    measured = [e.message for e in v.evidence if e.signal == "wait_share"]
    assert measured and "taken as one EDR port" in measured[0] and "the most the fabric was busy" in measured[0]
    assert v.headroom is not None and "taken as one EDR port" in v.headroom.basis
    assert disagreements(v) == ()


@pytest.fixture(scope="module")
def simulated() -> list[Verdict]:
    jobs = generate_jobs(43, 200, start=START, duration=900.0, holdout=True)
    return analyze_windows([j.to_window() for j in jobs], load_model())


def test_every_simulated_verdict_agrees_with_its_mechanism(simulated: list[Verdict]) -> None:
    """The invariant over a simulated set of every class: no verdict names one mechanism and shows the
    evidence, headroom or capacity of another."""
    named = Counter(v.bottleneck for v in simulated if v.mechanism is not None)
    assert all(named[c] >= 5 for c in (B.IO, B.CPU, B.INTERCONNECT, B.GPU, B.MEMORY)), named
    assert {s for v in simulated for s in disagreements(v)} == set()
    results = [SimpleNamespace(verdict=v) for v in simulated]
    counts = invariants(results)
    assert counts["mechanism_contradicted"] == 0 and counts["verdicts"] >= 100


def test_one_way_traffic_at_volume_is_not_called_balanced() -> None:
    """A multi-node Job's network at all-reduce volume but one way (the docs' resnet-pretrain sample read
    0.02 %): the symmetry item says what it saw, not "balanced"."""
    one_way = {"node_net_rx_bps": 1.1 * GB, "node_net_tx_bps": 0.001 * GB}
    w = make_window(B.INTERCONNECT, pods=2, noise=0.0, overrides=one_way, drop=[Family.NODE_IB])
    v = analyze_window(w, FixedModel({B.INTERCONNECT: 0.9}))
    symmetry = next(e for e in v.evidence if e.signal == "node_net_rx_tx_symmetry")
    assert symmetry.observed < 0.01
    assert "balanced" not in symmetry.message and "one-way" in symmetry.message
