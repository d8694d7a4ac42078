"""Mechanisms: one test per rule on feature rows, the simulator's truth, and the rules against it."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from bottleneck_operator.analysis.checks.reads import Reads, read_window
from bottleneck_operator.analysis.classify import analyze_windows
from bottleneck_operator.analysis.evaluation.report import mechanism_lines
from bottleneck_operator.analysis.evaluation.scoring import mechanism_accuracy
from bottleneck_operator.analysis.explain.mechanism import decide_mechanism
from bottleneck_operator.analysis.features.extract import FEATURE_INDEX, N_FEATURES, extract_features
from bottleneck_operator.analysis.features.phases import segment_phases
from bottleneck_operator.analysis.features.summary import JobSummary, summarize
from bottleneck_operator.analysis.model.classifier import load_model
from bottleneck_operator.contract.verdict import MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator_dev.simulation import SimulatedJob, generate_jobs

B, M = Bottleneck, Mechanism
MB = 1e6
START = 1767225600.0  # fixed: the simulator's output does not depend on the calendar


def row(**features: float) -> np.ndarray:
    """A feature row with only the named features present (``a__b`` stands for ``a.b``)."""
    x = np.full(N_FEATURES, np.nan)
    for name, v in features.items():
        x[FEATURE_INDEX[name.replace("__", ".")]] = v
    return x


def test_every_class_names_only_its_own_mechanisms() -> None:
    assert set(MECHANISMS) == {B.IO, B.CPU, B.INTERCONNECT, B.GPU, B.MEMORY}
    named = [m for ms in MECHANISMS.values() for m in ms]
    assert sorted(named) == sorted(Mechanism)
    assert decide_mechanism(B.UNKNOWN, row(gpu_util__mean=0.9)) is None


def test_gpu_small_kernels_are_launch_bound() -> None:
    # half the time in kernels that keep neither the tensor pipes nor HBM busy (tests/data/gpu-launch)
    small = dict(gr_engine_active__mean=0.48, tensor_active__mean=0.0, hbm_busy__mean=0.0)
    assert decide_mechanism(B.GPU, row(**small, cpu_per_gpu__mean=1.0)) is M.LAUNCH_BOUND
    # the same share of time in kernels that keep HBM or the tensor pipes busy is compute
    busy_pipes = {**small, "hbm_busy__mean": 0.2}
    assert decide_mechanism(B.GPU, row(**busy_pipes, cpu_per_gpu__mean=1.1)) is M.COMPUTE
    assert decide_mechanism(B.GPU, row(**{**small, "tensor_active__mean": 0.3}, cpu_per_gpu__mean=1.1)) is M.COMPUTE
    # without the graphics engine, GPU_UTIL less the copy engines' time (one-way PCIe at 0.9 of the link)
    dev = dict(gpu_util__mean=0.5, mem_copy_util__mean=0.0, hbm_busy__mean=0.0, cpu_per_gpu__mean=1.0)
    assert decide_mechanism(B.GPU, row(**dev)) is M.LAUNCH_BOUND
    assert decide_mechanism(B.GPU, row(**dev, pcie_rx_frac__mean=0.36, pcie_tx_frac__mean=0.0)) is M.COMPUTE
    # without the pipes' figures nothing tells small kernels apart
    assert decide_mechanism(B.GPU, row(gpu_util__mean=0.9, cpu_per_gpu__mean=1.0)) is M.COMPUTE


def test_gpu_without_a_busy_host_thread_is_compute() -> None:
    idle_host = row(gr_engine_active__mean=0.48, tensor_active__mean=0.0, hbm_busy__mean=0.0, cpu_per_gpu__mean=0.2)
    assert decide_mechanism(B.GPU, idle_host) is M.COMPUTE


@pytest.mark.parametrize(
    ("measured", "features"),
    [
        ({"mem_wait": 0.3}, {}),
        ({}, {"node_psi_mem_some__mean": 0.12}),  # the node's PSI, where the pod's was not collected
        ({"swapins": 2.0}, {}),  # any swap-in at all
        ({"oom_kills": 0.01}, {}),
    ],
)
def test_memory_host_pressure_from_psi_swapins_or_oom_kills(
    measured: dict[str, float], features: dict[str, float]
) -> None:
    r = Reads(busy_low=0.5, dram=0.7, **measured)
    assert decide_mechanism(B.MEMORY, row(**features), reads=r) is M.HOST_MEMORY_PRESSURE


def test_memory_host_pressure_is_the_pods_own_and_not_read_from_faults_or_swap_in_use() -> None:
    """Major faults are how memory-mapped datasets read (IO), swap in use is occupancy, and a node's
    pressure is its neighbours' too where the pod's own was read: none of them names host pressure."""
    hbm = Reads(busy_low=0.5, dram=0.7)
    assert decide_mechanism(B.MEMORY, row(log_majfault__mean=3.8), reads=hbm) is M.HBM_BANDWIDTH
    assert decide_mechanism(B.MEMORY, row(node_swap_used_frac__mean=0.5), reads=hbm) is M.HBM_BANDWIDTH
    calm_pod = replace(hbm, mem_wait=0.0)
    assert decide_mechanism(B.MEMORY, row(node_psi_mem_some__mean=0.4), reads=calm_pod) is M.HBM_BANDWIDTH
    # pressure under XProf's 5 % bar is no stall; DRAM at half its practical peak (0.4) is HBM in use
    assert decide_mechanism(B.MEMORY, row(), reads=Reads(dram=0.41, mem_wait=0.04)) is M.HBM_BANDWIDTH
    assert decide_mechanism(B.MEMORY, row(), reads=Reads(dram=0.39, mem_wait=0.04)) is None


def test_memory_pressure_is_the_wait_the_step_account_measures() -> None:
    """The mechanism reads the pod's memory wait as the account (and so the evidence and headroom) does:
    no more than the GPUs idled, so pressure while the GPUs were 98 % busy is no host-memory wait."""
    assert (
        decide_mechanism(B.MEMORY, row(), reads=Reads(busy_low=0.9, mem_wait=0.3, dram=0.7)) is M.HOST_MEMORY_PRESSURE
    )
    assert decide_mechanism(B.MEMORY, row(), reads=Reads(busy_low=0.98, mem_wait=0.3, dram=0.7)) is M.HBM_BANDWIDTH


def test_memory_hbm_bandwidth_when_dram_busy_and_host_calm() -> None:
    calm = row(node_psi_mem_some__mean=0.005, log_majfault__mean=1.0)
    assert decide_mechanism(B.MEMORY, calm, reads=Reads(dram=0.65)) is M.HBM_BANDWIDTH
    # the host watched and calm, DRAM unread: what is left is the GPU's own memory
    assert decide_mechanism(B.MEMORY, row(mem_copy_util__mean=0.6, node_psi_mem_some__mean=0.005)) is M.HBM_BANDWIDTH
    assert decide_mechanism(B.MEMORY, calm, reads=Reads(dram=0.1)) is None
    assert decide_mechanism(B.MEMORY, row()) is None


def test_interconnect_one_way_h2d_is_pcie_even_across_nodes() -> None:
    h2d = row(pcie_rx_frac__mean=0.6, pcie_tx_frac__mean=0.02, link_busy__mean=0.9, n_nodes=2.0)
    assert decide_mechanism(B.INTERCONNECT, h2d) is M.PCIE


def test_copies_are_the_wait_when_their_path_is_the_busiest_link() -> None:
    """One-way copies bound the step when they keep their copy path busy most of the time and more than
    NVLink; half the bytes coming back (the features' line for collectives) is no copy stream."""
    one_way = dict(pcie_rx_frac__mean=0.6, pcie_tx_frac__mean=0.02, n_nodes=2.0)
    assert decide_mechanism(B.INTERCONNECT, row(**one_way, link_busy__mean=0.4)) is M.NETWORK
    busy_nvlink = row(**one_way, link_busy__mean=0.6, nvlink_frac__mean=0.7)
    assert decide_mechanism(B.INTERCONNECT, busy_nvlink) is M.NETWORK
    balanced = row(pcie_rx_frac__mean=0.6, pcie_tx_frac__mean=0.35, link_busy__mean=0.9, n_nodes=2.0)
    assert decide_mechanism(B.INTERCONNECT, balanced) is M.NETWORK
    # link_busy counts the copies as far as the GPU idles: 0.36 over 40 % idle is a path 90 % busy
    # while the GPU waits; the same 0.36 with the GPU idle throughout is a path mostly free
    assert decide_mechanism(B.INTERCONNECT, row(**one_way, link_busy__mean=0.36, act__mean=0.6)) is M.PCIE
    assert decide_mechanism(B.INTERCONNECT, row(**one_way, link_busy__mean=0.36, act__mean=0.0)) is M.NETWORK
    # link_busy set by NVLink or the bytes both ways is no copy stream, however busy the GPU
    nvlink = row(**one_way, link_busy__mean=0.3, nvlink_frac__mean=0.3, act__mean=0.9)
    assert decide_mechanism(B.INTERCONNECT, nvlink) is M.NETWORK
    fabric = row(**one_way, link_busy__mean=0.3, pcie_fabric_frac__mean=0.3, act__mean=0.9)
    assert decide_mechanism(B.INTERCONNECT, fabric) is M.NETWORK


def test_interconnect_across_nodes_is_network() -> None:
    rdma = row(pcie_rx_frac__mean=0.4, pcie_tx_frac__mean=0.38, n_nodes=4.0)  # GPUDirect: PCIe both ways
    assert decide_mechanism(B.INTERCONNECT, rdma) is M.NETWORK
    assert decide_mechanism(B.INTERCONNECT, row(n_nodes=2.0)) is M.NETWORK


def test_interconnect_in_one_node_is_nvlink_or_peer_pcie() -> None:
    nv = row(pcie_rx_frac__mean=0.05, pcie_tx_frac__mean=0.04, nvlink_frac__mean=0.5, has_nvlink=1.0, n_nodes=1.0)
    assert decide_mechanism(B.INTERCONNECT, nv) is M.NVLINK
    p2p = row(pcie_rx_frac__mean=0.15, pcie_tx_frac__mean=0.15, has_nvlink=0.0, n_nodes=1.0)
    assert decide_mechanism(B.INTERCONNECT, p2p) is M.PCIE


def test_pageable_copies_on_a_fast_link_are_pcie_bound_across_nodes() -> None:
    """Copies at 0.15 of a Gen5 link fill a staging memcpy's path (tests/data/gpu-h2d): PCIe, though the
    job spans nodes; the same link share with the path half empty reads as the network."""
    staged = row(pcie_rx_frac__mean=0.15, pcie_tx_frac__mean=0.01, link_busy__mean=0.9, n_nodes=2.0)
    assert decide_mechanism(B.INTERCONNECT, staged) is M.PCIE
    spare = row(pcie_rx_frac__mean=0.15, pcie_tx_frac__mean=0.01, link_busy__mean=0.2, n_nodes=2.0)
    assert decide_mechanism(B.INTERCONNECT, spare) is M.NETWORK


def test_nearly_idle_nvlink_is_not_the_link_waited_on() -> None:
    """Without the PCIe fields (DEV only), NVLink under XProf's 5 % of its bandwidth does not
    make an Interconnect verdict NVLink-bound: the unseen link is PCIe."""
    dev = row(nvlink_frac__mean=0.01, has_nvlink=1.0, n_nodes=1.0)
    assert decide_mechanism(B.INTERCONNECT, dev) is M.PCIE
    assert decide_mechanism(B.INTERCONNECT, row(nvlink_frac__mean=0.049, has_nvlink=1.0)) is M.PCIE
    assert decide_mechanism(B.INTERCONNECT, row(nvlink_frac__mean=0.051, has_nvlink=1.0)) is M.NVLINK
    assert decide_mechanism(B.INTERCONNECT, row(nvlink_frac__mean=0.3, has_nvlink=1.0, n_nodes=1.0)) is M.NVLINK


def totals(net: float | None, read: float | None, tx: float | None = None) -> JobSummary:
    """A job's totals with only its network receive (and transmit) and block reads, in bytes/s."""
    return JobSummary(
        gpus=4,
        gpu_active=0.3,
        activity_signal="gr_engine_active",
        read_bps=read,
        net_rx_bps=net,
        net_tx_bps=tx,
        pcie_rx_bps=None,
        pcie_capacity_bps=0.0,
        nvlink_bps=None,
        nvlink_capacity_bps=0.0,
        cpu_cores=None,
        cpu_limit_cores=None,
        tensor_active=None,
        gpu_model=None,
    )


def test_io_reads_over_the_nic_are_network_storage() -> None:
    """The IO mechanism reads the job's totals, as its evidence and capacity do (explain/datapath.py)."""
    nfs = totals(net=950 * MB, read=50 * MB, tx=40 * MB)
    assert decide_mechanism(B.IO, row(), nfs) is M.NETWORK_STORAGE
    # Gradients share the NIC (symmetric), but the local disk is idle: the reads are remote.
    mixed = totals(net=980 * MB, read=20 * MB, tx=800 * MB)
    assert decide_mechanism(B.IO, row(), mixed) is M.NETWORK_STORAGE
    # No block reads collected at all: every byte read came in over the NIC.
    assert decide_mechanism(B.IO, row(), totals(net=300 * MB, read=None)) is M.NETWORK_STORAGE


def test_io_block_reads_are_local_disk() -> None:
    nvme = totals(net=50 * MB, read=950 * MB, tx=30 * MB)
    assert decide_mechanism(B.IO, row(), nvme) is M.LOCAL_DISK
    allreduce = totals(net=700 * MB, read=300 * MB, tx=650 * MB)
    assert decide_mechanism(B.IO, row(), allreduce) is M.LOCAL_DISK
    # symmetric traffic with the disk carrying 6 % of the bytes read: the disk is not idle
    assert decide_mechanism(B.IO, row(), totals(net=940 * MB, read=60 * MB, tx=900 * MB)) is M.LOCAL_DISK
    assert decide_mechanism(B.IO, row(), totals(net=960 * MB, read=40 * MB, tx=900 * MB)) is M.NETWORK_STORAGE
    # the network unread: nothing tells where the data came from; no totals: no IO mechanism
    assert decide_mechanism(B.IO, row(), totals(net=None, read=900 * MB)) is None
    assert decide_mechanism(B.IO, row(net_rx_share__mean=0.95)) is None


def test_cpu_throttled_from_the_jobs_own_cgroup() -> None:
    """Throttling as the step account reads it (the pod's cgroup, else cAdvisor's, over training samples)."""
    busy_node = row(node_cpu_busy_frac__mean=0.3)
    assert decide_mechanism(B.CPU, busy_node, reads=Reads(throttled=0.4)) is M.THROTTLED
    # the feature row's whole-window mean is not read: the evidence reports the measured share
    assert decide_mechanism(B.CPU, row(sc_throttled_frac__mean=0.3, cpu_own_sat__mean=0.2)) is M.TOO_FEW_WORKERS


def test_cpu_saturated_when_it_uses_most_of_the_cores_it_may_use() -> None:
    """``cpu_own_sat`` is the pod's use over the cores it may use (its limit, its node's idle cores):
    at a majority of them or more the cores are the limit (gpu-saturated read 0.91)."""
    assert decide_mechanism(B.CPU, row(cpu_own_sat__mean=0.91, node_cpu_busy_frac__mean=0.92)) is M.SATURATED
    assert decide_mechanism(B.CPU, row(cpu_own_sat__mean=0.5)) is M.SATURATED
    assert decide_mechanism(B.CPU, row(cpu_own_sat__mean=0.49)) is M.TOO_FEW_WORKERS


def test_cpu_too_few_workers_when_its_processes_are_pinned_on_a_busy_node() -> None:
    """A neighbour filling the node does not make a loader of two pinned workers saturated: its own use
    of the cores it may use says so, not the node's busy share (real-loader: 0.49 with one worker
    pinned on a two-core machine)."""
    busy_node = dict(node_cpu_busy_frac__mean=0.95, cpu_node_frac__mean=0.05, n_pods=1.0)
    assert (
        decide_mechanism(B.CPU, row(**busy_node, busy_core_share__mean=0.85, cpu_own_sat__mean=0.3))
        is M.TOO_FEW_WORKERS
    )
    # every core it may use busy: pinned processes are then the cores' limit, not the workers'
    full = row(**busy_node, busy_core_share__mean=0.85, cpu_own_sat__mean=0.95)
    assert decide_mechanism(B.CPU, full) is M.SATURATED
    # throttling comes first: a quota's workers get less than a core, whatever the reading says
    assert decide_mechanism(B.CPU, row(busy_core_share__mean=0.9), reads=Reads(throttled=0.4)) is M.THROTTLED


def test_cpu_throttled_from_the_cpu_vetos_bar() -> None:
    """CFS throttling in 5 % of periods or more (XProf's bar, as the CPU veto reads it) is a quota that binds."""
    own = row(cpu_own_sat__mean=0.2)
    assert decide_mechanism(B.CPU, own, reads=Reads(throttled=0.06)) is M.THROTTLED
    assert decide_mechanism(B.CPU, own, reads=Reads(throttled=0.04)) is M.TOO_FEW_WORKERS


def test_cpu_too_few_workers_when_cores_stand_idle() -> None:
    idle = row(node_cpu_busy_frac__mean=0.3, cpu_node_frac__mean=0.15, cpu_limit_frac__mean=0.4, n_pods=1.0)
    assert decide_mechanism(B.CPU, idle) is M.TOO_FEW_WORKERS


@pytest.fixture(scope="module")
def sim_jobs() -> list[SimulatedJob]:
    return generate_jobs(31, 150, start=START, duration=900.0, holdout=True)


def test_simulated_truth_names_a_mechanism_of_the_label(sim_jobs: list[SimulatedJob]) -> None:
    seen = Counter(j.mechanism for j in sim_jobs)
    for j in sim_jobs:
        assert j.mechanism is None or j.mechanism in MECHANISMS[j.label]
        assert j.ground_truth()["mechanism"] == (j.mechanism.value if j.mechanism else None)
    # The kinds the simulator adds for mechanisms are drawn.
    assert seen[M.LAUNCH_BOUND] > 0 and seen[M.HBM_BANDWIDTH] > 0 and seen[M.NETWORK_STORAGE] > 0


def test_rules_recover_the_simulated_mechanism(sim_jobs: list[SimulatedJob]) -> None:
    windows = [j.to_window() for j in sim_jobs]
    x = extract_features(windows)
    hits = [
        decide_mechanism(j.label, r, summarize(w), read_window(w, segment_phases(w))) == j.mechanism
        for j, r, w in zip(sim_jobs, x, windows, strict=True)
        if j.mechanism
    ]
    assert len(hits) > 100
    assert sum(hits) / len(hits) >= 0.8


def test_verdicts_carry_the_mechanism_and_the_evaluation_scores_it(sim_jobs: list[SimulatedJob]) -> None:
    model = load_model()
    jobs = sim_jobs[:60]
    windows = [j.to_window() for j in jobs]
    detailed = analyze_windows(windows, model)
    bare = analyze_windows(windows, model, with_details=False)
    for d, b in zip(detailed, bare, strict=True):
        assert d.mechanism == b.mechanism
        assert d.mechanism is None if d.bottleneck is B.UNKNOWN else d.mechanism in (None, *MECHANISMS[d.bottleneck])
    results = [SimpleNamespace(verdict=v, window=w) for v, w in zip(detailed, windows, strict=True)]
    table = mechanism_accuracy(jobs, results)
    with_truth = [j for j in jobs if j.mechanism is not None]
    assert table["all"]["jobs"] == len(with_truth)
    right = sum(
        v.bottleneck.value == j.label.value and v.mechanism == j.mechanism
        for j, v in zip(jobs, detailed, strict=True)
        if j.mechanism is not None
    )
    assert table["all"]["end_to_end"] == round(right / len(with_truth), 4)
    assert sum(d["jobs"] for k, d in table.items() if k != "all") == len(with_truth)
    text = "\n".join(mechanism_lines(table))
    assert "launch-bound" in text and "end to end" in text
