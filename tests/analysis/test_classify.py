"""Verdict rules: abstention reasons, secondary class, gpu_active, per-pod breakdown."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from bottleneck_operator.analysis.classify import analyze_window, analyze_windows
from bottleneck_operator.analysis.headroom_account import STALL_FLOOR
from bottleneck_operator.analysis.model import BottleneckModel
from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.verdict import CLASSES, Abstention, Bottleneck, Verdict
from bottleneck_operator.contract.window import DataQuality, JobWindow

from .conftest import FixedModel
from .synth import CPU_STARVED, GB, make_window

B = Bottleneck


def test_confident_verdict_has_no_reason() -> None:
    both = make_window(B.IO, overrides=CPU_STARVED)
    # GPUs idle 70 %: IO's share 56 %, CPU's 14 % (x1.16, still a stall): both stand as the model says
    v = analyze_window(both, FixedModel({B.IO: 0.8, B.CPU: 0.2}))
    assert v.bottleneck is B.IO and v.reason is None and v.secondary is None and v.abstention is None
    assert abs(v.confidence - 0.8) < 1e-9
    assert set(v.probabilities) == {c.value for c in CLASSES}


def test_a_runner_up_without_evidence_is_ruled_out() -> None:
    # The IO window has no CPU evidence of its own: the CPU probability goes, IO keeps the rest.
    v = analyze_window(make_window(B.IO), FixedModel({B.IO: 0.9, B.CPU: 0.1}))
    assert v.bottleneck is B.IO and v.confidence == pytest.approx(1.0) and v.probabilities["CPU"] == 0.0


def test_with_no_class_left_the_verdict_points_where_the_evidence_holds() -> None:
    # The model is all but sure of CPU, which the IO window's evidence rules out; IO's evidence holds but
    # the model gave it too little to name it. The verdict abstains and points to IO, as its reason says,
    # not to the class the checks ruled out.
    model = FixedModel({B.CPU: 0.95, B.IO: 0.05})
    one_way = {"pcie_tx_bps": 0.01 * GB}  # input copies only: no peer traffic for Interconnect's evidence
    (bare,) = analyze_windows([make_window(B.IO, overrides=one_way)], model, with_details=False)
    assert bare.bottleneck is B.UNKNOWN and bare.secondary is B.IO
    assert bare.reason and "points most towards IO" in bare.reason
    # the evidence a user reads speaks for the same class
    detailed = analyze_window(make_window(B.IO, overrides=one_way), model)
    assert {"node_cpu_iowait_frac", "sc_psi_io_some"} <= {e.signal for e in detailed.evidence}
    # A CPU favourite whose evidence fails beside IO's is no knife-edge, even just under its level (the
    # job's CPU at 0.75 of its limit, 0.85 implies CPU): loaders at their ceiling show in the CPU
    # accounting, so the pointer goes to IO
    edge = {**one_way, "cpu_limit_cores": 16.0, "cpu_cores": 12.0, "sc_cpu_cores": 12.0}
    (bare,) = analyze_windows([make_window(B.IO, overrides=edge)], model, with_details=False)
    assert bare.bottleneck is B.UNKNOWN and bare.secondary is B.IO
    # with two stalls' evidence holding the evidence does not choose: the model's favourite stands
    # (IO's iowait and Interconnect's balanced PCIe; Memory's own plainly absent, DRAM at 0.05)
    memory = FixedModel({B.MEMORY: 0.95, B.IO: 0.05})
    (bare,) = analyze_windows([make_window(B.IO, overrides={"dram_active": 0.05})], memory, with_details=False)
    assert bare.bottleneck is B.UNKNOWN and bare.secondary is B.MEMORY


def test_a_cpu_favourite_without_its_evidence_points_to_io_whatever_reads_higher() -> None:
    # IO's evidence holds just over its level (iowait 0.06) while the node faults pages at 10^5 a second
    # (Memory's evidence at twice its level): the pointer and the reason both name IO
    faint = {
        "pcie_tx_bps": 0.01 * GB,
        "node_cpu_iowait_frac": 0.06,
        "node_psi_io_some": 0.0,
        "sc_psi_io_some": 0.0,
        "sc_procs_iowait": 0.0,
        "node_majfault_ps": 1e5,
    }
    model = FixedModel({B.CPU: 0.95, B.IO: 0.05})
    (bare,) = analyze_windows([make_window(B.IO, overrides=faint)], model, with_details=False)
    assert bare.bottleneck is B.UNKNOWN and bare.secondary is B.IO
    assert bare.reason and "points most towards IO" in bare.reason


def test_a_memory_favourite_without_its_evidence_on_computing_gpus_points_to_gpu() -> None:
    # Busy GPUs whose DRAM activity is read at 0.5, short of what HBM-bound kernels draw (0.55; family
    # A's compute Jobs reach 0.5): their busy time is compute, and the verdict points to GPU
    model = FixedModel({B.MEMORY: 0.95, B.GPU: 0.05})
    (bare,) = analyze_windows([make_window(B.GPU, overrides={"dram_active": 0.5})], model, with_details=False)
    assert bare.bottleneck is B.UNKNOWN and bare.secondary is B.GPU
    assert bare.reason and "DRAM activity read" in bare.reason and "points to GPU" in bare.reason
    # without DRAM activity, NVML's memory utilization just short of its level is a knife-edge
    no_dram = make_window(B.GPU, drop=[Family.DCGM_PROF, Family.DCGM_PROF_SM], overrides={"mem_copy_util": 0.5})
    (bare,) = analyze_windows([no_dram], model, with_details=False)
    assert bare.bottleneck is B.UNKNOWN and bare.secondary is B.MEMORY
    # GPUs with idle time to explain (busy 0.6) say nothing of what their kernels do
    idle = make_window(B.GPU, overrides={"dram_active": 0.5, "gpu_util": 0.6, "gr_engine_active": 0.6})
    (bare,) = analyze_windows([idle], model, with_details=False)
    assert bare.secondary is not B.GPU


def test_a_cpu_favourite_plainly_without_evidence_gives_way_to_the_models_next_choice() -> None:
    # CPU's evidence under half its level (the pod's cgroup at 0.38 of its limit) and no stall's holding:
    # a CPU-bound loader would show, so the verdict points to the model's next choice, as its reason says
    model = FixedModel({B.CPU: 0.7, B.IO: 0.2, B.GPU: 0.1})
    (bare,) = analyze_windows([make_window(B.GPU, overrides={"pcie_tx_bps": 0.01 * GB})], model, with_details=False)
    assert bare.bottleneck is B.UNKNOWN and bare.secondary is B.IO
    assert bare.reason and "plainly absent" in bare.reason and "next choice, IO (0.20)" in bare.reason
    # its next choice GPU, on busy GPUs whose DRAM activity is read, is still the next choice: not the
    # reason a Memory favourite gets there
    model = FixedModel({B.CPU: 0.7, B.GPU: 0.12, B.IO: 0.1, B.MEMORY: 0.08})
    (bare,) = analyze_windows([make_window(B.GPU, overrides={"pcie_tx_bps": 0.01 * GB})], model, with_details=False)
    assert bare.bottleneck is B.UNKNOWN and bare.secondary is B.GPU
    assert bare.reason and "next choice, GPU (0.12)" in bare.reason and "HBM-bound" not in bare.reason


def test_an_io_favourite_just_short_of_its_evidence_stands() -> None:
    # Readers asleep on sockets can leave no IO trace, so IO's evidence just under its level (node
    # iowait at 0.045, 0.05 implies IO) is a knife-edge: the favourite stands beside CPU's evidence.
    quiet = {
        **CPU_STARVED,
        "node_cpu_iowait_frac": 0.045,
        "node_psi_io_some": 0.0,
        "sc_psi_io_some": 0.0,
        "sc_procs_iowait": 0.0,
        "pcie_tx_bps": 0.01 * GB,  # no peer traffic: CPU's is the one other stall's evidence holding
    }
    model = FixedModel({B.IO: 0.95, B.CPU: 0.05})
    (bare,) = analyze_windows([make_window(B.CPU, overrides=quiet)], model, with_details=False)
    assert bare.bottleneck is B.UNKNOWN and bare.secondary is B.IO


def test_abstains_below_threshold_with_reason() -> None:
    model = FixedModel({B.IO: 0.45, B.CPU: 0.35, B.MEMORY: 0.2})
    both = make_window(B.IO, overrides={**CPU_STARVED, "dram_active": 0.82})
    v = analyze_window(both, model, abstain_threshold=0.5)
    assert v.bottleneck is B.UNKNOWN
    assert v.reason and "abstain_threshold" in v.reason
    assert v.abstention is Abstention.LOW_CONFIDENCE and not v.abstention.is_data_problem
    assert analyze_window(both, model, abstain_threshold=0.4).bottleneck is B.IO


def test_abstains_on_low_coverage_and_short_window() -> None:
    model = FixedModel({B.GPU: 0.99})
    thin = make_window(B.GPU, coverage=0.3)
    v = analyze_window(thin, model, min_coverage=0.5)
    assert v.bottleneck is B.UNKNOWN and v.reason and "coverage" in v.reason
    assert v.abstention is Abstention.LOW_COVERAGE and v.abstention.is_data_problem
    short = make_window(B.GPU, samples=3, step=30.0)
    v = analyze_window(short, model, min_window=120.0)
    assert v.bottleneck is B.UNKNOWN and v.reason and "min_window" in v.reason
    assert v.abstention is Abstention.SHORT_WINDOW
    assert analyze_window(short, model, min_window=60.0).bottleneck is B.GPU


def test_no_pods_is_unknown() -> None:
    empty = JobWindow("ml", "gone", 0.0, 900.0, 30.0, np.empty(0), (), DataQuality())
    v = analyze_window(empty, FixedModel({B.GPU: 0.99}))
    assert v.bottleneck is B.UNKNOWN and v.reason and "no pods" in v.reason
    assert v.abstention is Abstention.NO_PODS
    assert v.confidence == 0.0


def test_secondary_within_margin() -> None:
    both = make_window(B.IO, overrides=CPU_STARVED)
    v = analyze_window(both, FixedModel({B.CPU: 0.55, B.IO: 0.45}), secondary_margin=0.25)
    assert v.bottleneck is B.CPU and v.secondary is B.IO
    v = analyze_window(both, FixedModel({B.CPU: 0.8, B.IO: 0.2}), secondary_margin=0.25)
    assert v.secondary is None


def test_gpu_active_uses_best_signal() -> None:
    model = FixedModel({B.CPU: 0.9})
    full = analyze_window(make_window(B.CPU, noise=0.0), model)
    assert full.gpu_active is not None and abs(full.gpu_active - 0.33) < 1e-6  # sm_active
    no_sm = analyze_window(make_window(B.CPU, noise=0.0, drop=[Family.DCGM_PROF_SM]), model)
    assert no_sm.gpu_active is not None and abs(no_sm.gpu_active - 0.35) < 1e-6  # gr_engine_active
    dev = analyze_window(make_window(B.CPU, noise=0.0, drop=[Family.DCGM_PROF_SM, Family.DCGM_PROF]), model)
    assert dev.gpu_active is not None and abs(dev.gpu_active - 0.4) < 1e-6  # gpu_util


def test_pod_breakdown_for_multi_pod_jobs(tiny_model) -> None:  # type: ignore[no-untyped-def]
    w = make_window(B.GPU, pods=3, noise=0.02)
    io = make_window(B.IO, noise=0.02)
    w = replace(w, pods=(w.pods[0], w.pods[1], replace(io.pods[0], pod="job-gpu-2")))
    # Without the training envelope: a Job mixing GPU- and IO-bound pods lies outside the tiny
    # model's two dozen windows per class, and the breakdown, not the abstention, is under test here.
    model = BottleneckModel(tiny_model.estimator, temperature=tiny_model.temperature, version="no-envelope")
    v = analyze_window(w, model)
    assert v.abstention is None, v.reason
    assert [p.pod for p in v.pods] == ["job-gpu-0", "job-gpu-1", "job-gpu-2"]
    assert v.pods[0].bottleneck is B.GPU
    assert v.pods[2].bottleneck is B.IO
    assert v.pods[2].gpu_active is not None and v.pods[2].gpu_active < 0.5


def test_tiny_model_recognises_textbook_windows(tiny_model) -> None:  # type: ignore[no-untyped-def]
    windows = [make_window(c, seed=100 + i, noise=0.1) for i, c in enumerate(CLASSES)]
    verdicts = analyze_windows(windows, tiny_model, abstain_threshold=0.0)
    assert [v.bottleneck for v in verdicts] == list(CLASSES)
    assert all(v.model_version == "test-tiny" for v in verdicts)


def test_a_stall_the_next_stage_would_cap_is_not_named() -> None:
    # IO keeps the GPUs waiting, but the loader's CPU sits at its limit: with IO fixed the CPU binds at
    # once, so removing IO gains under x1.15 and the verdict cannot name it beside such a headroom.
    at_limit = {**CPU_STARVED, "cpu_cores": 15.9, "sc_cpu_cores": 15.9}
    v = analyze_window(make_window(B.IO, overrides=at_limit), FixedModel({B.IO: 0.8, B.CPU: 0.2}))
    assert v.bottleneck is B.CPU and v.probabilities["IO"] == 0.0
    assert v.headroom is not None and v.headroom.high >= STALL_FLOOR
    below = analyze_window(make_window(B.IO, overrides=CPU_STARVED), FixedModel({B.IO: 0.8, B.CPU: 0.2}))
    assert below.bottleneck is B.IO and below.headroom is not None and below.headroom.high >= STALL_FLOOR


def _straggler(clock_mhz: float, power_w: float) -> JobWindow:
    """Two pods whose GPUs run NCCL's waiting kernels most of the time (busy, few SMs) with gradients
    crossing the network at volume but far below any link's capacity; the second pod's SM clock is
    ``clock_mhz`` (an A100 SXM's maximum is 1410 MHz, its limit 400 W) and every board draws ``power_w``."""
    waits = {"gr_engine_active": 0.97, "gpu_util": 0.98, "sm_active": 0.45, "tensor_active": 0.2}
    traffic = {"node_net_rx_bps": 1.5 * GB, "node_net_tx_bps": 1.5 * GB, "power_w": power_w}
    w = make_window(B.GPU, pods=2, noise=0.01, overrides={**waits, **traffic, "sm_clock_mhz": 1410.0})
    slow = w.pods[1]
    signals = {**slow.signals, "sm_clock_mhz": np.full(len(w.timestamps), clock_mhz)}
    return replace(w, pods=(w.pods[0], replace(slow, signals=signals)))


def test_collective_waits_behind_a_slowed_gpu_are_the_gpus() -> None:
    # The peers wait for a GPU held at 78 % of its clock while the boards draw 62 % of their limit
    # (heat or a hardware slowdown, not power): the waits are the slow GPU's, not the network's.
    model = FixedModel({B.INTERCONNECT: 0.8, B.GPU: 0.2})
    v = analyze_window(_straggler(1100.0, 250.0), model)
    assert v.bottleneck is B.GPU and v.probabilities["Interconnect"] == 0.0
    assert any("slowed GPU" in n for n in v.notes)
    assert v.recommendations[0].action.startswith("Find the slowed GPU")
    assert not any(r.action == "Use more or faster GPUs" for r in v.recommendations)
    # every GPU at its full clock: the same waits are the network's
    assert analyze_window(_straggler(1410.0, 250.0), model).bottleneck is B.INTERCONNECT
    # a clock held down by the power limit is the work's own (math at the limit), not a slowdown
    assert analyze_window(_straggler(1100.0, 395.0), model).bottleneck is B.INTERCONNECT


def test_gpus_busy_only_with_collective_kernels_wait_on_the_links() -> None:
    # NCCL's kernels stay resident while they wait: GPUs busy 97 % of the time with their SMs idle,
    # gradients crossing the network both ways. A model that reads the busy time as compute is
    # contradicted by the step account (computing ~16 %), so the verdict is Interconnect.
    model = FixedModel({B.GPU: 0.9, B.INTERCONNECT: 0.1})
    waits = {"gr_engine_active": 0.97, "gpu_util": 0.98, "sm_active": 0.14, "tensor_active": 0.03}
    traffic = {"node_net_rx_bps": 1.5 * GB, "node_net_tx_bps": 1.5 * GB, "power_w": 100.0}
    v = analyze_window(make_window(B.GPU, noise=0.01, overrides={**waits, **traffic}), model)
    assert v.bottleneck is B.INTERCONNECT and v.probabilities["GPU"] == 0.0
    assert any("wait on the links" in n for n in v.notes)
    # the same busy GPUs computing (SMs full) are GPU-bound
    computing = {**waits, "sm_active": 0.85, "tensor_active": 0.4}
    assert analyze_window(make_window(B.GPU, noise=0.01, overrides={**computing, **traffic}), model).bottleneck is B.GPU
    # busy 0.87 with a fifth of the SMs: 0.6 of the time in kernels that use no SMs, as much as tiny
    # kernels with the all-reduce overlapped explain (a launch-bound loop keeps an H200 about half busy)
    launches = {**waits, "gr_engine_active": 0.87, "gpu_util": 0.88, "sm_active": 0.22}
    assert analyze_window(make_window(B.GPU, noise=0.01, overrides={**launches, **traffic}), model).bottleneck is B.GPU
    # without collective traffic the idle SMs are not waiting on a link (tiny kernels, launch overhead)
    quiet = {"node_net_rx_bps": 1e6, "node_net_tx_bps": 1e6, "nvlink_total_bps": 0.0, "nvlink_tx_bps": 0.0}
    quiet |= {"nvlink_rx_bps": 0.0, "pcie_rx_bps": 0.1 * GB, "pcie_tx_bps": 0.01 * GB}
    assert analyze_window(make_window(B.GPU, noise=0.01, overrides={**waits, **quiet}), model).bottleneck is B.GPU


def test_a_gpu_busy_at_an_idle_boards_power_is_moving_bytes() -> None:
    # GPU_UTIL counts the copy engines: pinned copies held it at 0.99 at 0.19 of an H200's limit
    # (tests/data/gpu-h2d-pinned, gpu-d2h-pinned); without the profiling fields nothing else reads busy
    model = FixedModel({B.GPU: 0.6, B.INTERCONNECT: 0.4})
    no_prof = (Family.DCGM_PROF, Family.DCGM_PROF_SM, Family.DCGM_PROF_NVLINK)
    copying = {"gpu_util": 0.99, "power_w": 75.0}  # an A100 SXM's limit is 400 W

    def verdict(overrides: dict[str, float], drop: tuple[Family, ...] = no_prof) -> Verdict:
        return analyze_window(make_window(B.GPU, noise=0.01, drop=drop, overrides=overrides), model)

    v = verdict(copying)
    assert v.bottleneck is B.INTERCONNECT and v.probabilities["GPU"] == 0.0
    assert any("what an idle board draws" in n for n in v.notes)
    # at a computing board's power the same busy time is math
    assert verdict({**copying, "power_w": 300.0}).bottleneck is B.GPU
    # busy only part of the time, an idle board's draw is a GPU waiting, not copying
    assert not any("what an idle board draws" in n for n in verdict({**copying, "gpu_util": 0.5}).notes)
    # with the SMs read (PCIe bytes still missing), the kernels speak for themselves
    sm_read = verdict(copying, drop=(Family.DCGM_PROF, Family.DCGM_PROF_NVLINK))
    assert sm_read.bottleneck is B.GPU and not any("what an idle board draws" in n for n in sm_read.notes)


# A pod short of memory that swaps (tests/data/real-memory and gpu-memory): host memory pressure, about
# a thousand major faults a second, half the node's swap in use.
_SWAPPING = {
    "sc_psi_mem_some": 0.08,
    "sc_psi_mem_full": 0.08,
    "node_psi_mem_some": 0.08,
    "node_psi_mem_full": 0.05,
    "node_majfault_ps": 1200.0,
    "sc_majfault_ps": 1200.0,
    "node_swap_used_frac": 0.5,
}


def _waiting_pod(overrides: dict[str, float], model: FixedModel) -> Verdict:
    """The verdict on a pod whose GPUs wait (an IO-shaped window) with ``overrides`` on top."""
    return analyze_window(make_window(B.IO, noise=0.01, overrides=overrides), model)


def test_cpu_waits_on_a_node_serving_page_faults_are_the_memorys() -> None:
    # The pod's tasks wait for a CPU half the time, but the job uses a fifth of a core while the node's
    # cores spend 15 % of their time in the kernel (reclaim, swap-in): more memory would help, not CPU.
    starved = {**_SWAPPING, "node_cpu_busy_frac": 1.0, "node_cpu_system_frac": 0.15, "sc_psi_cpu_some": 0.5}
    starved |= {"cpu_cores": 0.2, "sc_cpu_cores": 0.2, "cpu_throttled_frac": 0.0, "sc_throttled_frac": 0.0}
    # (the model all but sure of CPU: the step account shares the idle time after the move, so the
    # stall floor reads Memory's share of the waits, not the model's 5 %)
    model = FixedModel({B.CPU: 0.95, B.MEMORY: 0.05})
    v = _waiting_pod(starved, model)
    assert v.bottleneck is B.MEMORY and v.probabilities["CPU"] == 0.0
    assert any("page faults and reclaim hold the cores" in n for n in v.notes)
    # the node's cores doing user work: the wait is for CPU
    assert _waiting_pod({**starved, "node_cpu_system_frac": 0.03}, model).bottleneck is B.CPU
    # a job its own CPU quota throttles (bursts of threads cut off in 60 % of the periods, a fifth of
    # its one-core limit on average) is CPU-bound whatever else stalls it
    quota = {"cpu_limit_cores": 1.0, "cpu_throttled_frac": 0.6, "sc_throttled_frac": 0.6}
    assert _waiting_pod({**starved, **quota}, model).bottleneck is B.CPU


def test_reads_of_pages_coming_back_from_swap_are_the_memorys() -> None:
    # The pod's reads wait (IO pressure 0.28) while it faults 12,000 pages a second with half the swap
    # in use: the reads are its own pages coming back, so the job is Memory-bound.
    paging = {**_SWAPPING, "node_majfault_ps": 12000.0, "sc_majfault_ps": 12000.0, "sc_psi_io_some": 0.28}
    verdict = _waiting_pod(paging, FixedModel({B.IO: 0.8, B.MEMORY: 0.2}))
    assert (verdict.bottleneck, verdict.probabilities["IO"]) == (B.MEMORY, 0.0)
    assert any("coming back from swap" in n for n in verdict.notes)
    # a memory-mapped dataset faults as often but fills no swap: its reads are the dataset's
    mapped = _waiting_pod({**paging, "node_swap_used_frac": 0.0}, FixedModel({B.IO: 0.8, B.MEMORY: 0.2}))
    assert mapped.bottleneck is B.IO
    # a neighbour that swaps fills the node's swap and faults, but the pod's own pages stay (3 faults a
    # second in its cgroup): its reads are its own, and it stays IO-bound
    neighbour = _waiting_pod({**paging, "sc_majfault_ps": 3.0}, FixedModel({B.IO: 0.8, B.MEMORY: 0.2}))
    assert neighbour.bottleneck is B.IO
    # without the collector only the node's faults are read: the reads are taken for the pod's pages
    collectorless = make_window(B.IO, noise=0.01, overrides=paging, drop=[Family.SIDECAR])
    assert analyze_window(collectorless, FixedModel({B.IO: 0.8, B.MEMORY: 0.2})).bottleneck is B.MEMORY


def test_a_pod_with_processes_pinned_while_its_gpus_wait_is_cpu_bound() -> None:
    # The node's CPUs wait on IO (a neighbour's reads), but ten of the pod's processes sit at a full core
    # each (0.83 of its CPU time) while its GPUs idle: a reader waiting on storage holds no core.
    node_io = {"sc_psi_io_some": 0.0, "sc_psi_io_full": 0.0, "sc_procs_iowait": 0.0, "pcie_tx_bps": 0.01 * GB}
    model = FixedModel({B.IO: 0.8, B.CPU: 0.2})
    v = _waiting_pod({**node_io, "sc_procs_busy": 10.0}, model)
    assert v.bottleneck is B.CPU and v.probabilities["IO"] == 0.0
    assert any("a reader waiting on storage holds no core" in n for n in v.notes)
    # one process at a full core (a main loop) beside readers: the wait stays IO's
    assert _waiting_pod({**node_io, "sc_procs_busy": 1.0}, model).bottleneck is B.IO
