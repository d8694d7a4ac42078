"""Evidence, recommendations, headroom and capacity needs, tied to the signals."""

from __future__ import annotations

import pytest

from bottleneck_operator.analysis.classify import analyze_window
from bottleneck_operator.analysis.explain.candidates import CANDIDATES, HIGHLY_WAITED_ON
from bottleneck_operator.analysis.features.levels import WAITED_ON
from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck, Mechanism

from .conftest import FixedModel
from .synth import CPU_STARVED, GB, make_window

B = Bottleneck


@pytest.mark.parametrize("cls", CLASSES)
def test_three_to_five_items_and_each_recommendation_names_evidence(cls: Bottleneck) -> None:
    v = analyze_window(make_window(cls), FixedModel({cls: 0.9}))
    assert 3 <= len(v.evidence) <= 5
    assert all(e.message and e.message.endswith(".") for e in v.evidence)
    shown = {e.signal for e in v.evidence}
    assert v.recommendations
    assert all(r.signal in shown for r in v.recommendations)


def test_io_evidence_names_the_measured_wait_and_the_pods_own_signals() -> None:
    v = analyze_window(make_window(B.IO, noise=0.0), FixedModel({B.IO: 0.9}))
    signals = [e.signal for e in v.evidence]
    assert signals[0] == "sm_active"  # GPU idleness first
    # then the measured wait: the pod's io.pressure at 60 % of training time
    assert signals[1] == "sc_psi_io_some" and v.evidence[1].observed == pytest.approx(0.6)
    assert v.evidence[1].message.startswith("Measured: the pod's io.pressure")
    # node-wide signals are the node's, neighbours included: context, never the Job's evidence
    assert not {s for s in signals if s.startswith("node_") and s != "node_net_rx_bps"}
    blocked = next(e for e in v.evidence if e.signal == "sc_procs_iowait")
    assert blocked.observed == pytest.approx(0.8) and blocked.reference == 0.5
    actions = " ".join(r.action for r in v.recommendations)
    assert "parallel" in actions or "NVMe" in actions


def test_cpu_throttling_recommends_raising_the_limit_only_when_seen() -> None:
    v = analyze_window(make_window(B.CPU), FixedModel({B.CPU: 0.9}))
    assert any(r.action == "Raise the CPU limit" for r in v.recommendations)
    calm = make_window(B.CPU, drop=[Family.CADVISOR_CFS, Family.SIDECAR, Family.KSM])
    v = analyze_window(calm, FixedModel({B.CPU: 0.9}))
    assert not any(r.action == "Raise the CPU limit" for r in v.recommendations)


def test_headroom_and_capacity_for_io() -> None:
    v = analyze_window(make_window(B.IO, noise=0.0), FixedModel({B.IO: 0.9}))
    assert v.headroom is not None
    # the pod's io.pressure measured IO waits at 60 % of training time: x2.5 at most, no low end invented
    assert v.headroom.high == pytest.approx(1 / (1 - 0.6)) and v.headroom.low == 1.0
    need = v.capacity[0]
    assert need.resource == "storage_read"
    assert need.observed == pytest.approx(1.9e9)
    assert need.needed == pytest.approx(1.9e9 / 0.4)
    assert "GB/s" in need.message and "8 GPUs" in need.message


def test_capacity_for_cpu_and_gpu() -> None:
    v = analyze_window(make_window(B.CPU, noise=0.0), FixedModel({B.CPU: 0.9}))
    cpu = v.capacity[0]
    # CFS throttling (70 % of periods) is the larger measured wait, capped at the most the GPUs may have
    # idled: 65 % by the lower of their busy readings (GR_ENGINE_ACTIVE 0.35 against GPU_UTIL 0.40)
    assert cpu.resource == "cpu_cores" and cpu.needed == pytest.approx(15.9 / 0.35)
    assert v.headroom is not None and v.headroom.high == pytest.approx(1 / 0.35)
    # GPU-bound: no capacity figure and no speed-up read into tensor activity; a profile says more
    g = analyze_window(make_window(B.GPU, noise=0.0), FixedModel({B.GPU: 0.9}))
    assert g.capacity == ()
    assert g.headroom is not None and g.headroom.high < 1.15 and "Holistic Trace Analysis" in g.headroom.basis


def test_unknown_has_no_recommendations() -> None:
    both = make_window(B.IO, overrides={**CPU_STARVED, "gr_engine_active": 0.65})
    v = analyze_window(both, FixedModel({B.IO: 0.4, B.CPU: 0.35, B.GPU: 0.25}))
    assert v.bottleneck is B.UNKNOWN
    assert v.recommendations == () and v.headroom is None and v.capacity == ()


HOST_SIGNALS = {"sc_psi_mem_some", "sc_swapin_ps", "sc_oom_kills", "mem_working_set_vs_limit"}
HBM_SIGNALS = {"dram_active", "dram_active_minus_tensor_active", "mem_copy_util"}


def test_memory_evidence_speaks_for_its_mechanism() -> None:
    """Host memory pressure says nothing of an HBM-bound GPU (busy, waiting on memory inside its kernels),
    nor DRAM activity of a pod stalled on swap: each Memory verdict shows its own mechanism's signals."""
    hbm = analyze_window(make_window(B.MEMORY, noise=0.0), FixedModel({B.MEMORY: 0.9}))
    assert hbm.mechanism is not None and hbm.mechanism.value == "hbm-bandwidth"
    signals = {e.signal for e in hbm.evidence}
    assert signals & HBM_SIGNALS and not signals & HOST_SIGNALS
    assert "sm_active" not in signals  # no "waited on something else" for a busy GPU
    swapping = make_window(
        B.MEMORY,
        noise=0.0,
        overrides={
            "node_psi_mem_some": 0.4, "sc_psi_mem_some": 0.4, "node_majfault_ps": 2e4, "sc_majfault_ps": 2e4,
            "node_swap_used_frac": 0.6, "sc_swapin_ps": 3e3, "dram_active": 0.05, "mem_copy_util": 0.05, "tensor_active": 0.05,
            "gr_engine_active": 0.3, "sm_active": 0.25, "gpu_util": 0.3,
        },
    )  # fmt: skip
    host = analyze_window(swapping, FixedModel({B.MEMORY: 0.9}))
    assert host.mechanism is not None and host.mechanism.value == "host-memory-pressure"
    signals = {e.signal for e in host.evidence}
    assert signals & HOST_SIGNALS and not signals & HBM_SIGNALS
    assert [r.action for r in host.recommendations] == ["Raise the memory limit"]


def test_without_dram_activity_memory_copy_utilization_is_no_hbm_evidence() -> None:
    """MEM_COPY_UTIL counts time with any memory traffic in flight, compute kernels' too: without
    DRAM_ACTIVE the evidence does not claim HBM saturation."""
    w = make_window(B.MEMORY, noise=0.0, drop=[Family.DCGM_PROF])
    v = analyze_window(w, FixedModel({B.MEMORY: 0.9}))
    assert "mem_copy_util" not in {e.signal for e in v.evidence}


def test_candidate_strength_runs_from_where_it_counts_to_its_reference() -> None:
    """A wait counts from XProf's 5 % and is full at its 20 % (highly input-bound); an event with no
    reference counts in full when there is any at all."""
    wait = next(c for c in CANDIDATES[B.IO] if c.signal == "sc_psi_io_some")
    assert (wait.low, wait.reference) == (WAITED_ON, HIGHLY_WAITED_ON)
    assert wait.strength(0.04) == 0.0 and wait.strength(0.125) == pytest.approx(0.5) and wait.strength(0.9) == 1.0
    kills = next(c for c in CANDIDATES[B.MEMORY] if c.signal == "sc_oom_kills")
    assert kills.reference is None and kills.strength(0.0) == 0.0 and kills.strength(1e-4) == 1.0
    # inverted: tensor pipes idle is the evidence for HBM-bound kernels
    tensor = next(c for c in CANDIDATES[B.MEMORY] if c.signal == "tensor_active")
    assert tensor.strength(0.0) == 1.0 and tensor.strength(0.75) == pytest.approx(0.25)


def test_an_event_that_did_not_happen_is_said_so() -> None:
    """A host-memory verdict shows swap-ins and OOM kills as evidence only when there were some, and then
    with no reference; none at all is shown, if at all, only as what was looked at, in those words."""
    pressure = {"sc_psi_mem_some": 0.4, "dram_active": 0.05, "tensor_active": 0.05, "gr_engine_active": 0.3,
                "sm_active": 0.25, "gpu_util": 0.3}  # fmt: skip
    calm = analyze_window(make_window(B.MEMORY, noise=0.0, overrides=pressure), FixedModel({B.MEMORY: 0.9}))
    assert calm.mechanism is not None and calm.mechanism.value == "host-memory-pressure"
    events = [e for e in calm.evidence if e.signal in ("sc_swapin_ps", "sc_oom_kills")]
    assert events and all(
        e.observed == 0.0 and e.message.startswith(("No ", "The OOM killer ended none")) for e in events
    )
    assert 3 <= len(calm.evidence) <= 5
    killed = make_window(B.MEMORY, noise=0.0, overrides={**pressure, "sc_oom_kills": 0.02})
    kills = [e for e in analyze_window(killed, FixedModel({B.MEMORY: 0.9})).evidence if e.signal == "sc_oom_kills"]
    assert kills and kills[0].reference is None and kills[0].observed == pytest.approx(0.02)
    assert kills[0].message.startswith("The OOM killer ended the pod's processes")


def test_network_reads_are_named_when_they_carry_more_than_the_disks() -> None:
    """The larger of the two carried the data: 2.0 GB/s received over 1.9 GB/s read from disk."""
    nan = float("nan")  # without the collector's own count, the nodes' is read
    io = {"node_net_rx_bps": 2.0 * GB, "node_net_tx_bps": 0.05 * GB, "sc_net_rx_bps": nan, "sc_net_tx_bps": nan}
    over = analyze_window(make_window(B.IO, noise=0.0, overrides=io), FixedModel({B.IO: 0.9}))
    assert "node_net_rx_bps" in {e.signal for e in over.evidence}
    assert over.capacity[0].observed == pytest.approx(2.0 * GB)
    under = {"node_net_rx_bps": 1.8 * GB, "node_net_tx_bps": 0.05 * GB, "sc_net_rx_bps": nan, "sc_net_tx_bps": nan}
    disk = analyze_window(make_window(B.IO, noise=0.0, overrides=under), FixedModel({B.IO: 0.9}))
    assert "read_bps" in {e.signal for e in disk.evidence} and disk.capacity[0].observed == pytest.approx(1.9 * GB)


def test_the_pods_own_network_count_comes_before_the_nodes() -> None:
    """A neighbour's 2.0 GB/s on the node's NIC is not the job's data: the pods' own count says so."""
    neighbour = {"node_net_rx_bps": 2.0 * GB, "node_net_tx_bps": 0.05 * GB, "sc_net_rx_bps": 0.01 * GB}
    disk = analyze_window(make_window(B.IO, noise=0.0, overrides=neighbour), FixedModel({B.IO: 0.9}))
    assert disk.mechanism is Mechanism.LOCAL_DISK
    assert "read_bps" in {e.signal for e in disk.evidence} and disk.capacity[0].observed == pytest.approx(1.9 * GB)
    own = {**neighbour, "sc_net_rx_bps": 2.0 * GB}
    remote = analyze_window(make_window(B.IO, noise=0.0, overrides=own), FixedModel({B.IO: 0.9}))
    assert remote.mechanism is Mechanism.NETWORK_STORAGE
    (item,) = [e for e in remote.evidence if e.signal == "sc_net_rx_bps"]
    assert item.observed == pytest.approx(2.0 * GB) and item.message.startswith("The job's pods received 2")
    assert "node_net_rx_bps" not in {e.signal for e in remote.evidence}


def test_gpu_evidence_is_read_against_cited_levels() -> None:
    """GPU activity against DCGM's 0.8 for effective use; power against the board's enforced limit."""
    v = analyze_window(make_window(B.GPU, noise=0.0, overrides={"power_w": 390.0}), FixedModel({B.GPU: 0.9}))
    items = {e.signal: e for e in v.evidence}
    assert items["gpu_active"].reference == pytest.approx(0.8)
    assert items["power_of_limit"].reference == 1.0 and items["power_of_limit"].observed == pytest.approx(390 / 400)
    assert "sm_occupancy" not in items  # occupancy speaks of bandwidth-bound work, not of compute (DCGM docs)


def test_gpu_activity_in_the_evidence_is_the_share_the_header_gives() -> None:
    """One report gives one GPU-active share: the evidence reads the summary's, as the header and
    headroom do, even where the feature row blends another activity field into it."""
    window = make_window(B.GPU, noise=0.0, overrides={"sm_active": 0.97, "gr_engine_active": 0.85})
    v = analyze_window(window, FixedModel({B.GPU: 0.9}))
    items = {e.signal: e for e in v.evidence}
    assert v.gpu_active == pytest.approx(0.97)
    assert items["gpu_active"].observed == pytest.approx(v.gpu_active)
