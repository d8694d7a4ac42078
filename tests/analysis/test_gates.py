"""The step-time account, the evidence gates and the advice preconditions, one rule per test."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from bottleneck_operator.analysis.advice import (
    host_memory_pressure,
    host_to_device_copies,
    more_workers_help,
    one_core_per_process,
)
from bottleneck_operator.analysis.classify import analyze_window
from bottleneck_operator.analysis.evaluation import invariants
from bottleneck_operator.analysis.summary_phases import segment_phases
from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.verdict import Bottleneck, Headroom, Mechanism
from bottleneck_operator.contract.window import JobWindow

from .conftest import FixedModel
from .synth import CPU_STARVED, GB, LOADERS_AT_CEILING, facts, make_window

B = Bottleneck
PCIE = 31.5e9  # the A100's PCIe link in the hardware table
FB = frozenset({"fb_used_frac"})


def _with_busy(w: JobWindow, busy: np.ndarray) -> JobWindow:
    """The window with GR_ENGINE_ACTIVE, GPU_UTIL and SM_ACTIVE following ``busy`` (SMs at 90 % of it)."""
    pods = []
    for p in w.pods:
        sig = dict(p.signals)
        sig["gr_engine_active"], sig["gpu_util"], sig["sm_active"] = busy.copy(), busy.copy(), 0.9 * busy
        pods.append(dataclasses.replace(p, signals=sig))
    return dataclasses.replace(w, pods=tuple(pods))


def test_start_up_and_checkpoint_pauses_are_left_out_of_the_busy_fraction() -> None:
    busy = np.full(60, 0.95)
    busy[:6] = np.linspace(0.02, 0.4, 6)  # start-up: model and data load
    for at in (15, 30, 45):  # a checkpoint every 7.5 minutes, the GPUs idle while it is written
        busy[at] = 0.03
    w = _with_busy(make_window(B.GPU, samples=60, noise=0.0), busy)
    phases = segment_phases(w)
    assert phases.busy == pytest.approx(0.95)
    assert [p.kind for p in phases.phases] == ["start-up", "pause", "pause", "pause"]
    assert phases.training.sum() == 60 - 6 - 3
    notes = " ".join(phases.notes())
    assert "Start-up (180 s)" in notes and "3 pause(s)" in notes and "regular interval" in notes
    # over the whole window the same job reads 84 % busy: the phases would pass for an 11 % stall
    assert float(busy.mean()) < 0.85
    v = analyze_window(w, FixedModel({B.GPU: 0.9}))
    assert any("Start-up" in n for n in v.notes)


def test_a_steadily_starved_job_has_no_pauses() -> None:
    # An IO-bound job's low activity is its behaviour, not a pause: nothing is left out.
    phases = segment_phases(make_window(B.IO, noise=0.05))
    assert phases.phases == () and phases.training.all()
    assert phases.busy == pytest.approx(0.3, abs=0.02)


OVERLAPPED_ALLREDUCE = {  # 2 nodes, GPUs 93 % busy, SMs busy with compute: the all-reduce hides behind it
    "gpu_util": 0.95,
    "gr_engine_active": 0.93,
    "sm_active": 0.8,
    "node_net_rx_bps": 4.3 * GB,  # 540 MB/s per GPU, both ways
    "node_net_tx_bps": 4.3 * GB,
}


def test_a_stall_that_gains_under_x115_is_gpu_bound() -> None:
    w = make_window(B.INTERCONNECT, pods=2, overrides=OVERLAPPED_ALLREDUCE)
    v = analyze_window(w, FixedModel({B.INTERCONNECT: 0.98, B.GPU: 0.02}))
    assert v.bottleneck is B.GPU and v.confidence == pytest.approx(1.0)
    assert any("GPU-bound" in n and "x1.15" in n for n in v.notes)
    assert v.headroom is not None and v.headroom.high < 1.15
    assert "Holistic Trace Analysis" in v.headroom.basis


def test_exposed_communication_is_a_stall() -> None:
    # The same traffic with SMs mostly idle: NCCL kernels keep the engine busy, compute waits.
    w = make_window(B.INTERCONNECT, pods=2, overrides={**OVERLAPPED_ALLREDUCE, "sm_active": 0.35})
    v = analyze_window(w, FixedModel({B.INTERCONNECT: 0.98, B.GPU: 0.02}))
    assert v.bottleneck is B.INTERCONNECT
    # SMs at 35 % of a 93 %-busy engine: compute 0.35 / 0.85 = 41 %; exposed communication (52 %) and
    # the idle 7 % are Interconnect's, so removing it leaves only compute: x1 / 0.41
    assert v.headroom is not None and v.headroom.high == pytest.approx(0.85 / 0.35, rel=0.05)
    assert any("waiting on Interconnect 5" in n for n in v.notes)


NFS_READER = {  # the CPU verdict of the issue: node signals only, a reader on remote storage
    "gpu_util": 0.45,
    "gr_engine_active": 0.4,
    "sm_active": 0.38,
    "cpu_cores": 13.4,
    "sc_cpu_cores": 13.4,
    "cpu_limit_cores": 32.0,
    "node_cpus": 32.0,
    "node_cpu_busy_frac": 0.73,
    "node_psi_cpu_some": 0.16,
    "node_cpu_iowait_frac": 0.08,
    # its loaders sleep in io_schedule on NFS page reads: the pod's own cgroup accounts the IO pressure
    "sc_psi_io_some": 0.3,
}


def test_node_cpu_signals_do_not_make_a_cpu_verdict() -> None:
    w = make_window(
        B.CPU, overrides={**NFS_READER, "cpu_throttled_frac": 0.01, "sc_throttled_frac": 0.01, "sc_psi_cpu_some": 0.02}
    )
    v = analyze_window(w, FixedModel({B.CPU: 0.83, B.IO: 0.17}))
    # CPU is ruled out; the runner-up whose evidence holds (CPUs idle in iowait) takes the verdict
    assert v.bottleneck is B.IO and v.probabilities["CPU"] == 0.0
    assert any(n.startswith("CPU ruled out") for n in v.notes)
    assert not {"node_cpu_busy_frac", "node_psi_cpu_some"} & {e.signal for e in v.evidence}
    assert any(n.startswith("Node context, not evidence") and "73 %" in n for n in v.notes)


def test_the_job_own_cgroup_at_its_limit_is_cpu_evidence() -> None:
    v = analyze_window(make_window(B.CPU), FixedModel({B.CPU: 0.83, B.IO: 0.17}))
    assert v.bottleneck is B.CPU
    assert v.evidence[1].message.startswith("Implies CPU") and v.evidence[1].observed >= v.evidence[1].reference


def test_nothing_left_is_unknown_saying_where_the_evidence_points() -> None:
    w = make_window(
        B.CPU, overrides={**NFS_READER, "cpu_throttled_frac": 0.01, "sc_throttled_frac": 0.01, "sc_psi_cpu_some": 0.02}
    )
    v = analyze_window(w, FixedModel({B.CPU: 0.95, B.GPU: 0.05}))
    assert v.bottleneck is B.UNKNOWN and v.reason is not None
    assert "leaned to CPU" in v.reason and "most towards IO" in v.reason
    # IO's own evidence holds here (the pod's IO pressure): the reason must not say that none does
    assert "no class's evidence holds" not in v.reason
    assert "whose evidence does not hold" in v.reason and "a class the model gives 0.00" in v.reason


def test_a_favourite_whose_evidence_holds_but_gains_nothing_is_not_called_unsupported() -> None:
    # The pod waits on IO, but its loader's CPU sits at its limit: removing IO would gain under x1.15,
    # and the GPUs are too idle to bind. The reason says so rather than that IO's evidence is missing.
    at_limit = {**CPU_STARVED, "cpu_cores": 15.9, "sc_cpu_cores": 15.9}
    v = analyze_window(make_window(B.IO, overrides=at_limit), FixedModel({B.IO: 1.0}))
    assert v.bottleneck is B.UNKNOWN and v.reason is not None
    assert "leaned to IO (1.00), whose evidence holds" in v.reason and "would gain less than x1.15" in v.reason
    assert "does not hold" not in v.reason


def _idle_interconnect(**over: float) -> JobWindow:
    base = {
        "gpu_util": 0.25,
        "gr_engine_active": 0.2,
        "sm_active": 0.18,
        "nvlink_total_bps": 1 * GB,
        "nvlink_tx_bps": 0.5 * GB,
        "nvlink_rx_bps": 0.5 * GB,
        "node_net_rx_bps": 0.05 * GB,
        "node_net_tx_bps": 0.01 * GB,
        "pcie_tx_bps": 0.3 * GB,
    }
    return make_window(B.INTERCONNECT, noise=0.0, overrides={**base, **over})


def test_pcie_at_39_percent_of_the_link_is_not_evidence() -> None:
    # 39 % of the link while the GPUs idle 80 % of the time: copies do not explain the wait
    v = analyze_window(_idle_interconnect(pcie_rx_bps=0.39 * PCIE), FixedModel({B.INTERCONNECT: 0.9, B.IO: 0.1}))
    assert v.bottleneck is B.UNKNOWN
    # ... and copies that fill the idle time are
    v = analyze_window(_idle_interconnect(pcie_rx_bps=0.55 * PCIE), FixedModel({B.INTERCONNECT: 0.9, B.IO: 0.1}))
    assert v.bottleneck is B.INTERCONNECT
    assert any(e.signal == "pcie_busy_during_wait" for e in v.evidence)


def test_pageable_copies_fill_the_idle_time_by_the_copy_engines_clock() -> None:
    """Pageable copies stream at a host memcpy's rate, a small share of the link, but take the GPU's time:
    GPU_UTIL counts part of it above the graphics engine (0.18 on an H200 with the SMs idle)."""
    copies = {"gr_engine_active": 0.001, "sm_active": 0.001, "pcie_tx_bps": 0.01 * GB, "pcie_rx_bps": 0.15 * PCIE}
    quiet = {"nvlink_total_bps": 0.0, "nvlink_tx_bps": 0.0, "nvlink_rx_bps": 0.0}
    model = FixedModel({B.INTERCONNECT: 0.9, B.CPU: 0.1})
    v = analyze_window(_idle_interconnect(**copies, **quiet, gpu_util=0.18), model)
    assert v.bottleneck is B.INTERCONNECT
    assert any(e.signal == "pcie_busy_during_wait" for e in v.evidence)
    # the same bytes without the copy engine's time showing: nothing says the GPU waits for them
    v = analyze_window(_idle_interconnect(**copies, **quiet, gpu_util=0.001), model)
    assert v.bottleneck is not B.INTERCONNECT


def test_balanced_network_traffic_needs_volume() -> None:
    quiet = _idle_interconnect(node_net_rx_bps=0.3e6 * 8, node_net_tx_bps=0.3e6 * 8)  # 0.3 MB/s per GPU
    v = analyze_window(quiet, FixedModel({B.INTERCONNECT: 0.9, B.IO: 0.1}))
    assert v.bottleneck is B.UNKNOWN
    assert all("too little volume" in e.message for e in v.evidence if e.signal == "node_net_rx_tx_symmetry")
    loud = _idle_interconnect(node_net_rx_bps=8 * GB, node_net_tx_bps=7 * GB)
    v = analyze_window(loud, FixedModel({B.INTERCONNECT: 0.9, B.IO: 0.1}))
    assert v.bottleneck is B.INTERCONNECT
    assert "node_net_rx_tx_symmetry" in {e.signal for e in v.evidence}


def test_a_full_framebuffer_is_never_evidence() -> None:
    for cls in (B.IO, B.MEMORY, B.GPU):
        w = make_window(cls, overrides={"fb_used_frac": 0.98})
        v = analyze_window(w, FixedModel({cls: 0.9, B.MEMORY: 0.1} if cls is not B.MEMORY else {cls: 0.9}))
        assert not FB & {e.signal for e in v.evidence}
        assert any("not a stall" in n for n in v.notes)
        assert not any("smaller batch" in r.action for r in v.recommendations)


def test_num_workers_0_is_caught_and_advised() -> None:
    w = make_window(B.CPU, overrides=LOADERS_AT_CEILING)
    assert one_core_per_process(facts(w)) and more_workers_help(facts(w))
    v = analyze_window(w, FixedModel({B.CPU: 0.9, B.IO: 0.1}))
    assert v.bottleneck is B.CPU
    # the collector's count of processes at a full core implies it first; the flat CPU beside it
    assert any(e.signal in ("sc_procs_busy", "cpu_workers_saturated") for e in v.evidence)
    actions = [r.action for r in v.recommendations]
    assert any("num_workers > 0" in a for a in actions)
    assert "Raise the CPU limit" not in actions


def test_a_flat_cpu_is_no_ceiling_without_a_process_at_a_full_core() -> None:
    """Readers paced by their network hold the job's CPU flat too: below a core per pod, or with the
    collector seeing no process at a full core, the plateau is not workers at their ceiling."""
    older = {**LOADERS_AT_CEILING, "sc_procs_busy": float("nan")}  # a collector without the count
    pinned = make_window(B.CPU, overrides=older)
    asleep = make_window(B.CPU, overrides={**LOADERS_AT_CEILING, "sc_procs_busy": 0.0})
    trickle = make_window(B.CPU, overrides={**older, "cpu_cores": 0.1, "sc_cpu_cores": 0.1})
    model = FixedModel({B.CPU: 0.9, B.IO: 0.1})
    assert any(e.signal == "cpu_workers_saturated" for e in analyze_window(pinned, model).evidence)
    # a CPU that follows its data's arrival (its median 0.88 of its 90th percentile) is no ceiling
    # either: loaders at a full core each read 0.97-1.0 (tests/data/gpu-loader, gpu-saturated, real-loader)
    wavering = make_window(B.CPU, noise=0.08, overrides=older)
    for w in (asleep, trickle, wavering):
        assert not any(e.signal == "cpu_workers_saturated" for e in analyze_window(w, model).evidence)


def test_more_workers_only_with_cgroup_headroom_and_idle_cores() -> None:
    busy_node = make_window(B.CPU, overrides={**LOADERS_AT_CEILING, "node_cpu_busy_frac": 0.95})
    assert not more_workers_help(facts(busy_node)) and not one_core_per_process(facts(busy_node))
    at_limit = make_window(B.CPU)  # 15.9 of 16 cores, throttled 70 % of periods
    assert not more_workers_help(facts(at_limit))
    v = analyze_window(at_limit, FixedModel({B.CPU: 0.9}))
    actions = [r.action for r in v.recommendations]
    assert "Use more DataLoader workers" not in actions and "Raise the CPU limit" in actions


def test_pinned_memory_never_for_peer_traffic() -> None:
    copies = _idle_interconnect(pcie_rx_bps=0.55 * PCIE, pcie_tx_bps=0.02 * PCIE)
    assert host_to_device_copies(facts(copies))
    v = analyze_window(copies, FixedModel({B.INTERCONNECT: 0.9}))
    assert any("pinned memory" in r.action for r in v.recommendations)
    gpudirect = _idle_interconnect(pcie_rx_bps=0.55 * PCIE, pcie_tx_bps=0.5 * PCIE)  # RX ~ TX: GPUDirect RDMA
    assert not host_to_device_copies(facts(gpudirect))
    v = analyze_window(gpudirect, FixedModel({B.INTERCONNECT: 0.9}))
    assert v.bottleneck is B.INTERCONNECT
    assert not any("pinned memory" in r.action for r in v.recommendations)


class _Result:
    def __init__(self, verdict: object) -> None:
        self.verdict = verdict


def test_invariants_hold_on_every_class_and_count_breaches() -> None:
    model = {c: FixedModel({c: 0.9}) for c in (B.IO, B.CPU, B.INTERCONNECT, B.GPU, B.MEMORY)}
    results = [_Result(analyze_window(make_window(c, seed=s), m)) for c, m in model.items() for s in range(3)]
    counts = invariants(results)
    assert counts["verdicts"] == 15
    assert counts["stall_headroom_below_floor"] == counts["evidence_under_threshold"] == counts["fb_as_evidence"] == 0
    # a verdict that breaks all three is counted three times
    v = results[0].verdict
    bad = dataclasses.replace(
        v,
        headroom=Headroom(1.02, 1.05, "x"),
        evidence=(dataclasses.replace(v.evidence[0], signal="fb_used_frac"),),
    )
    broken = invariants([_Result(bad)])
    assert broken == {
        "verdicts": 1,
        "stall_headroom_below_floor": 1,
        "evidence_under_threshold": 1,
        "fb_as_evidence": 1,
        "not_confirmed": 0,
    }


def test_several_small_stalls_are_not_a_gpu_bound_job() -> None:
    # Half the time idle, shared by four stages whose evidence all holds: none alone gains x1.15, and
    # the GPUs (50 % busy) do not bind either, so nothing is left to name.
    mixed = {
        **CPU_STARVED,
        "sc_psi_mem_some": 0.3,
        "pcie_rx_bps": 0.5 * PCIE,
        "pcie_tx_bps": 0.01 * PCIE,
        "gr_engine_active": 0.5,
        "gpu_util": 0.55,
        "sm_active": 0.45,
    }
    quarter = {B.IO: 0.25, B.CPU: 0.25, B.INTERCONNECT: 0.25, B.MEMORY: 0.25}
    v = analyze_window(make_window(B.IO, noise=0.0, overrides=mixed), FixedModel(quarter))
    assert v.bottleneck is B.UNKNOWN and v.probabilities["GPU"] == 0.0
    assert any("The IO pattern is there" in n and "GPU-bound" not in n for n in v.notes)
    # the same job with its GPUs busy 90 % of the time is GPU-bound
    busy = {**mixed, "gr_engine_active": 0.9, "gpu_util": 0.92, "sm_active": 0.8}
    v = analyze_window(make_window(B.IO, noise=0.0, overrides=busy), FixedModel(quarter))
    assert v.bottleneck is B.GPU


def test_a_mechanism_nobody_collects_is_not_ruled_out() -> None:
    # Host-to-device copies show only in DCGM's PCIe profiling fields: without them an Interconnect
    # verdict can be neither confirmed nor refuted, and says so; with them at 0 it is ruled out.
    w = _idle_interconnect(pcie_rx_bps=0.0, pcie_tx_bps=0.0)
    unseen = dataclasses.replace(
        w,
        pods=tuple(
            dataclasses.replace(p, signals={k: v for k, v in p.signals.items() if not k.startswith("pcie_")})
            for p in w.pods
        ),
    )
    v = analyze_window(unseen, FixedModel({B.INTERCONNECT: 0.9, B.IO: 0.1}))
    assert v.bottleneck is B.INTERCONNECT
    assert any("not confirmed" in n and "DCGM_FI_PROF_PCIE_RX_BYTES" in n for n in v.notes)
    assert invariants([_Result(v)])["not_confirmed"] == 1
    assert analyze_window(w, FixedModel({B.INTERCONNECT: 0.9, B.IO: 0.1})).bottleneck is B.UNKNOWN
    # named in place of a favourite whose evidence fails, it says so too
    v = analyze_window(unseen, FixedModel({B.IO: 0.5, B.INTERCONNECT: 0.45, B.MEMORY: 0.05}))
    assert v.bottleneck is B.INTERCONNECT, v.reason
    assert any("Interconnect not confirmed" in n for n in v.notes)
    assert invariants([_Result(v)]) == {**invariants([_Result(v)]), "evidence_under_threshold": 0}


def _without(w: JobWindow, name: str) -> JobWindow:
    """The window with one signal not collected by any pod."""
    pods = tuple(dataclasses.replace(p, signals={k: v for k, v in p.signals.items() if k != name}) for p in w.pods)
    return dataclasses.replace(w, pods=pods)


def test_bandwidth_bound_kernels_without_dram_data() -> None:
    # Without DRAM activity, NVML's memory utilization (every GPU reports it) says whether device memory
    # is busy: at 0.85 it confirms Memory, with no headroom figure (nothing sizes the bandwidth)
    w = make_window(B.MEMORY, drop=[Family.DCGM_PROF, Family.DCGM_PROF_SM])
    v = analyze_window(w, FixedModel({B.MEMORY: 0.9, B.GPU: 0.1}))
    assert v.bottleneck is B.MEMORY and v.headroom is None
    assert not any("not confirmed" in n for n in v.notes)
    # a model leaning to GPU: GPUs busy throughout with device memory busy stream HBM
    v = analyze_window(w, FixedModel({B.GPU: 0.8, B.MEMORY: 0.2}))
    assert v.bottleneck is B.MEMORY and v.mechanism is Mechanism.HBM_BANDWIDTH
    assert any("stream GPU memory" in n for n in v.notes), v.notes
    # compute kernels read device memory a quarter of the time: GPU stays, Memory is ruled out
    compute = make_window(B.MEMORY, drop=[Family.DCGM_PROF, Family.DCGM_PROF_SM], overrides={"mem_copy_util": 0.25})
    v = analyze_window(compute, FixedModel({B.GPU: 0.8, B.MEMORY: 0.2}))
    assert v.bottleneck is B.GPU and v.probabilities["Memory"] == 0.0
    # HBM-bound kernels keep the GPUs busy, so the x1.15 floor (idle time) says nothing about them; with
    # neither field the verdict on busy GPUs stands on the model, with no headroom figure
    unseen = _without(w, "mem_copy_util")
    v = analyze_window(unseen, FixedModel({B.MEMORY: 0.9, B.GPU: 0.1}))
    assert v.bottleneck is B.MEMORY and v.headroom is None
    assert any("Memory not confirmed" in n and "DCGM_FI_PROF_DRAM_ACTIVE" in n for n in v.notes)
    # GPUs idle 40 % of the time wait on something HBM cannot be: the unread fields keep nothing open
    idle = _without(
        make_window(B.MEMORY, drop=[Family.DCGM_PROF, Family.DCGM_PROF_SM], overrides={"gpu_util": 0.6}),
        "mem_copy_util",
    )
    v = analyze_window(idle, FixedModel({B.MEMORY: 0.9, B.GPU: 0.1}))
    assert v.bottleneck is not B.MEMORY and v.probabilities["Memory"] == 0.0
    assert any("Memory ruled out" in n and "they were busy 60 % of the time" in n for n in v.notes), v.notes
    # with DRAM activity at 82 % it is confirmed, and sized
    v = analyze_window(make_window(B.MEMORY), FixedModel({B.MEMORY: 0.9, B.GPU: 0.1}))
    assert v.bottleneck is B.MEMORY and v.headroom is not None and v.headroom.high > 1.15
    assert not any("not confirmed" in n for n in v.notes)


def test_kernels_streaming_hbm_stay_memory_beside_a_faulting_node() -> None:
    # DRAM 82 % busy on GPUs busy 90 % of the time: the kernels' own memory traffic binds. A node that
    # faults 100,000 pages a second for another reason is Memory's strongest reading, but no host-memory
    # stall: it must not make the verdict a stall that the x1.15 floor hands to GPU.
    faulting = make_window(B.MEMORY, overrides={"node_majfault_ps": 1e5})
    v = analyze_window(faulting, FixedModel({B.MEMORY: 0.9, B.GPU: 0.1}))
    assert v.bottleneck is B.MEMORY, v.notes
    assert not any("The Memory pattern is there" in n for n in v.notes)
    # without DRAM data, device memory busy 85 % of the time on GPUs busy throughout takes a GPU
    # favourite's probability all the same
    unprofiled = make_window(
        B.MEMORY, drop=[Family.DCGM_PROF, Family.DCGM_PROF_SM], overrides={"node_majfault_ps": 1e5}
    )
    v = analyze_window(unprofiled, FixedModel({B.GPU: 0.8, B.MEMORY: 0.2}))
    assert v.bottleneck is B.MEMORY, v.notes


def test_raising_the_memory_limit_only_under_host_memory_pressure() -> None:
    hbm = make_window(B.MEMORY)  # DRAM 82 % busy, host memory calm
    assert not host_memory_pressure(facts(hbm))
    v = analyze_window(hbm, FixedModel({B.MEMORY: 0.9}))
    assert "Raise the memory limit" not in [r.action for r in v.recommendations]
    reclaim = {"dram_active": 0.2, "sc_psi_mem_some": 0.4, "node_psi_mem_some": 0.3}
    idle = {"gr_engine_active": 0.5, "gpu_util": 0.55, "sm_active": 0.45}  # the GPUs wait on reclaim
    host = make_window(B.MEMORY, overrides={**reclaim, **idle})
    assert host_memory_pressure(facts(host))
    v = analyze_window(host, FixedModel({B.MEMORY: 0.9}))
    assert "Raise the memory limit" in [r.action for r in v.recommendations]


def test_a_working_set_at_its_limit_alone_is_no_memory_stall() -> None:
    # cAdvisor's working set counts active page cache: a reader of a cached dataset fills its limit
    # with nothing stalled. No Memory gate holds on it, and "Raise the memory limit" does not fire.
    cached = {"mem_working_set_bytes": 196 * GB, "mem_limit_bytes": 200 * GB, "dram_active": 0.2}
    idle = {"gr_engine_active": 0.5, "gpu_util": 0.55, "sm_active": 0.45}
    w = make_window(B.MEMORY, overrides={**cached, **idle})
    assert facts(w).f("mem_limit_frac.mean") == pytest.approx(0.98, abs=0.01)
    assert not host_memory_pressure(facts(w))
    v = analyze_window(w, FixedModel({B.MEMORY: 0.9, B.GPU: 0.1}))
    assert v.bottleneck is not B.MEMORY
    assert "Raise the memory limit" not in [r.action for r in v.recommendations]
    # the same pod stalled on reclaim is Memory, and the advice fires
    stalled = make_window(B.MEMORY, overrides={**cached, **idle, "sc_psi_mem_some": 0.4})
    v = analyze_window(stalled, FixedModel({B.MEMORY: 0.9, B.GPU: 0.1}))
    assert v.bottleneck is B.MEMORY
    assert "Raise the memory limit" in [r.action for r in v.recommendations]
