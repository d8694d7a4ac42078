"""What each exporter would read for one pod in one state, before sampling.

GPU fields are busy fractions of the step (the share of the step each kind of work occupies);
host signals are the Job's own cgroup; node signals add what the neighbours' allocated rates put on
the same node. Values here are instantaneous truths; :mod:`.exporters` samples them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bottleneck_operator_dev.familyu.allocation import PodPhase
from bottleneck_operator_dev.familyu.hardware import GB, LOCAL_DISKS
from bottleneck_operator_dev.familyu.scenario import Scenario


@dataclass(frozen=True)
class Render:
    """Per-job exporter draws that do not change the label."""

    sm_fill: float
    occ_a: float
    occ_b: float
    fb_used: float
    copy_factor: float
    read_req: float
    swap_total: float
    oom_rate: float


def draw_render(rng: np.random.Generator, scn: Scenario) -> Render:
    return Render(
        sm_fill=float(rng.uniform(0.6, 0.95)),
        occ_a=float(rng.uniform(0.12, 0.35)),
        occ_b=float(rng.uniform(0.4, 0.8)),
        fb_used=float(rng.uniform(0.55, 0.97)),
        copy_factor=float(rng.uniform(1.0, 1.25)),
        read_req=float(rng.choice([128e3, 256e3, 512e3, 1e6])),
        swap_total=scn.node_mem * float(rng.uniform(0.05, 0.25)) if scn.swap else 0.0,
        oom_rate=float(rng.uniform(1 / 1800, 1 / 300)),
    )


@dataclass(frozen=True)
class _State:
    """One pod in one state: what the three groups of signals share."""

    scn: Scenario
    rd: Render
    pp: PodPhase
    comm: float  # the Job's all-reduce time (the slowest ring)
    i: int
    T: float
    gpu_act: float
    host_act: float


def pod_values(
    scn: Scenario,
    rd: Render,
    pods: list[PodPhase],
    i: int,
    t_step: float,
    gpu_act: float = 1.0,
    host_act: float = 1.0,
) -> dict[str, float]:
    """Every signal's value for pod ``i`` in one state (``*_act`` < 1: a checkpoint or eval pause)."""
    s = _State(scn, rd, pods[i], max(p.step.comm_time() for p in pods), i, t_step, gpu_act, host_act)
    v: dict[str, float] = {}
    x: dict[str, float] = {}  # what one group of signals hands the next
    _gpu_values(s, v, x)
    _gpu_links_and_power(s, v, x)
    _host_values(s, v, x)
    _node_values(s, v, x)
    return v


def _gpu_values(s: _State, v: dict[str, float], x: dict[str, float]) -> None:
    """DCGM busy fractions: kernels (compute and NCCL), SMs, pipes, DRAM."""
    scn, rd, st, T, gpu_act = s.scn, s.rd, s.pp.step, s.T, s.gpu_act
    gpu, wl, comm = scn.gpu, scn.workload, s.comm
    t_dev = st.dev.time()
    fa_t, ba_t, fb_t, bb_t = st.dev.group_times()
    comm_exp = max(0.0, comm - st.comm_overlap * (2.0 / 3.0) * t_dev)
    busy = min(1.0, (t_dev + comm_exp + st.overhead_s) / T) * gpu_act
    clock_share = float(np.mean(scn.board_clock[s.i]))
    capped = scn.clock_factor < 1.0 and busy > 0.5
    clock_now = clock_share * (scn.clock_factor if capped else 1.0)
    tensor_peak = gpu.tensor_tflops * 1e12 * (0.5 if wl.precision == "tf32" else 1.0) * clock_now
    fp32_peak = gpu.fp32_tflops * 1e12 * clock_now
    v["gpu_util"] = busy
    v["gr_engine_active"] = busy * 0.97
    v["sm_active"] = min(1.0, (t_dev * rd.sm_fill + comm * 0.08) / T) * gpu_act
    v["sm_occupancy"] = min(1.0, (max(fa_t, ba_t) * rd.occ_a + max(fb_t, bb_t) * rd.occ_b) / T) * gpu_act
    if wl.precision == "fp32":
        v["tensor_active"] = 0.0
        v["fp32_active"] = min(1.0, (st.dev.flops_a + st.dev.flops_b) / T / fp32_peak) * gpu_act
        v["fp16_active"] = 0.0
    else:
        v["tensor_active"] = min(1.0, st.dev.flops_a / T / tensor_peak) * gpu_act
        v["fp32_active"] = min(1.0, 0.5 * st.dev.flops_b / T / fp32_peak) * gpu_act
        v["fp16_active"] = (
            min(1.0, 0.5 * st.dev.flops_b / T / (2 * fp32_peak)) * gpu_act if wl.precision != "tf32" else 0.0
        )
    dram = min(0.95, (st.dev.bytes_a + st.dev.bytes_b) / T / (gpu.hbm_gbs * GB)) * gpu_act
    v["dram_active"] = dram
    v["mem_copy_util"] = min(1.0, dram * rd.copy_factor + 0.01 * busy)
    v["fb_used_frac"] = rd.fb_used
    v["xid_code"] = 0.0
    x["clock_now"] = clock_now
    x["capped"] = 1.0 if capped else 0.0


def _gpu_links_and_power(s: _State, v: dict[str, float], x: dict[str, float]) -> None:
    """PCIe and NVLink bytes per GPU, board power under the enforced limit, the SM clock."""
    scn, st, T, gpu_act, host_act = s.scn, s.pp.step, s.T, s.gpu_act, s.host_act
    gpu, wl, g, n = scn.gpu, scn.workload, scn.gpus_per_pod, scn.pods
    busy, dram, clock_now, capped = v["gpu_util"], v["dram_active"], x.pop("clock_now"), x.pop("capped") > 0
    grad_step = st.intra.work / max(2.0 * (g - 1), 1.0) if g > 1 else 0.0  # one GPU's gradient bytes
    intra_gpu = 2.0 * (g - 1) / g * grad_step / T * gpu_act if g > 1 else 0.0
    inter_node = st.inter.work / T * gpu_act
    gdr = inter_node / g if scn.gdr and n > 1 else 0.0
    pcie_intra = intra_gpu if not scn.nvlink else 0.0
    v["pcie_rx_bps"] = 1.04 * (st.h2d.work / g / T * host_act + gdr + pcie_intra)
    v["pcie_tx_bps"] = 1.04 * (2e6 / T + gdr + pcie_intra) + (0.0 if gpu_act > 0.5 else wl.params * 4 / 60.0 / g)
    nvl = intra_gpu if scn.nvlink else 0.0
    v["nvlink_tx_bps"] = v["nvlink_rx_bps"] = nvl
    v["nvlink_total_bps"] = 2.0 * nvl
    activity = 0.25 * busy + 0.45 * v["sm_active"] + 0.3 * dram
    demand_w = gpu.idle_w + (gpu.tdp_w - gpu.idle_w) * min(1.1, activity * 1.15)
    v["power_w"] = min(demand_w, scn.power_cap * 0.995)
    v["power_limit_w"] = scn.power_cap
    v["clock_slowdown_frac"] = 1.0 if capped and demand_w >= scn.power_cap else 0.0
    idle_clk = 0.25
    v["sm_clock_mhz"] = gpu.max_clock_mhz * clock_now * (idle_clk + (1 - idle_clk) * min(1.0, 2.0 * busy))
    x["inter_node"] = inter_node


def _host_values(s: _State, v: dict[str, float], x: dict[str, float]) -> None:
    """The Job's own cgroup: cAdvisor, kube-state-metrics and the collector's pod-level signals."""
    scn, rd, pp, T, host_act = s.scn, s.rd, s.pp, s.T, s.host_act
    st, wl, g, busy = pp.step, scn.workload, scn.gpus_per_pod, v["gpu_util"]
    io_rate = st.io.work / T * host_act
    decode_used = st.cpu.work / T * host_act
    t_in = st.input_time()
    mem_share = min(1.0, st.mem.time() / T) * host_act
    refault = st.mem.refault_bytes() / T * host_act
    cores = scn.trainer_cores * min(1.0, 0.3 + busy) + decode_used + 2.0 * mem_share + 0.05
    local = scn.storage.startswith("local:")
    blockish = local or scn.storage == "nfs" or scn.storage == "efs"  # D-state readers
    io_wait = min(1.0, st.io.time() / T) * host_act if blockish else 0.0
    v["cpu_cores"] = cores
    v["sc_cpu_cores"] = cores + 0.02
    limited = scn.cpu_limit is not None
    if limited:
        assert scn.cpu_limit is not None
        v["cpu_limit_cores"] = scn.cpu_limit
        use = cores / scn.cpu_limit
        thr = min(0.99, 0.6 + 0.4 * use) if pp.cpu_bound == "cpu/limit" and decode_used >= 0.9 * pp.decode_cap else 0.0
        thr = max(thr, min(1.0, max(0.0, use - 0.6) / 0.4) ** 2 * 0.5)
        v["cpu_throttled_frac"] = v["sc_throttled_frac"] = thr
    else:
        v["sc_throttled_frac"] = 0.0
    ws_res = min(st.mem.working_set, st.mem.allocation)
    v["mem_working_set_bytes"] = ws_res
    v["mem_limit_bytes"] = scn.mem_limit if scn.mem_limit is not None else math.nan
    v["fs_read_bps"] = io_rate if local else 0.0
    v["sc_io_read_bps"] = (io_rate if local else 0.0) + (refault if scn.swap else 0.0)
    mmap_faults = io_rate / (4096.0 * 32) if wl.mmap_dataset else 0.0  # readahead windows of 128 KiB
    job_faults = refault / 4096.0 + mmap_faults
    v["sc_majfault_ps"] = job_faults
    v["sc_swapin_ps"] = refault / 4096.0 if scn.swap else 0.0
    v["sc_oom_kills"] = rd.oom_rate if (not scn.swap and st.mem.deficit() > 0 and host_act > 0.5) else 0.0
    contention = pp.cpu_bound.startswith("cpu/node") and decode_used > 0.5
    cpu_some = 0.0
    if limited:
        cpu_some = 0.8 * v["cpu_throttled_frac"]
    if contention:
        cpu_some = max(cpu_some, min(1.0, 0.3 + 0.5 * decode_used / max(pp.decode_cap, 1.0)))
    v["sc_psi_cpu_some"] = min(1.0, cpu_some + 0.01) * host_act
    v["sc_psi_io_some"] = min(1.0, io_wait * 0.9 + 0.3 * mem_share)
    v["sc_psi_io_full"] = v["sc_psi_io_some"] * (0.6 if t_in >= T * 0.95 else 0.2)
    v["sc_psi_mem_some"] = mem_share
    v["sc_psi_mem_full"] = mem_share * 0.6
    workers = g * scn.workers_per_gpu
    v["sc_procs_running"] = min(float(workers), decode_used) + scn.trainer_cores * busy
    v["sc_procs_iowait"] = workers * io_wait * 0.8
    v["sc_procs_busy"] = float(workers) if decode_used >= 0.9 * workers else math.floor(decode_used * 0.5)
    x["io_rate"], x["refault"], x["mem_share"], x["job_faults"] = io_rate, refault, mem_share, job_faults
    x["contention"] = 1.0 if contention else 0.0
    x["ws_res"] = ws_res


def _node_values(s: _State, v: dict[str, float], x: dict[str, float]) -> None:
    """node-exporter on the pod's node: the Job's share plus what the neighbours add."""
    scn, rd, st, nb = s.scn, s.rd, s.pp.step, s.pp.neighbours
    io_rate, refault, mem_share = x.pop("io_rate"), x.pop("refault"), x.pop("mem_share")
    job_faults, contention, ws_res = x.pop("job_faults"), x.pop("contention") > 0, x.pop("ws_res")
    inter_node, cores = x.pop("inter_node"), v["cpu_cores"]
    local = scn.storage.startswith("local:")
    ncpu = float(scn.node_cpus)
    v["node_cpus"] = ncpu
    node_busy = min(1.0, (cores + nb.cores + 0.5) / ncpu)
    v["node_cpu_busy_frac"] = node_busy
    v["node_cpu_iowait_frac"] = min(1.0 - node_busy, v["sc_procs_iowait"] / ncpu + 0.002)
    v["node_cpu_system_frac"] = min(node_busy, 0.03 * node_busy + 2.0 * mem_share / ncpu + 0.005)
    disk = io_rate if local else 0.0
    disk += refault if scn.swap else (refault if local else 0.0)
    disk += nb.disk_bps
    v["node_disk_read_bps"] = disk
    v["node_disk_reads_ps"] = disk / rd.read_req
    dev_bps = scn.storage_bps if local else LOCAL_DISKS["nvme-gen4"] * GB
    u = disk / dev_bps
    nvme = not scn.storage.endswith("sata-ssd")
    v["node_disk_busy_frac"] = min(1.0, 1.6 * u**0.6 if nvme else 1.05 * u)
    v["node_mem_avail_frac"] = float(np.clip(1.0 - (ws_res + nb.anon + 0.03 * scn.node_mem) / scn.node_mem, 0.01, 1.0))
    swap_used = (st.mem.deficit() + 0.02 * nb.anon) if scn.swap else 0.0
    v["node_swap_used_frac"] = min(1.0, swap_used / rd.swap_total) if rd.swap_total > 0 else 0.0
    v["node_majfault_ps"] = job_faults + nb.majfault_ps
    eth_inter = inter_node if scn.fabric == "ethernet" else 0.0
    net_store = io_rate if not local else 0.0
    v["node_net_rx_bps"] = net_store + eth_inter + nb.net_bps + 2e4
    v["node_net_tx_bps"] = eth_inter + 0.02 * net_store + 0.6 * nb.net_bps + 2e4
    rdma = inter_node if scn.fabric != "ethernet" else 0.0
    v["ib_rx_bps"] = rdma + nb.ib_bps
    v["ib_tx_bps"] = rdma + nb.ib_bps * 0.8
    over = max(0.0, (cores + nb.cores) - ncpu) / ncpu
    v["node_psi_cpu_some"] = min(1.0, over * 2.0 + (0.3 if contention else 0.0) + 0.01)
    v["node_psi_io_some"] = min(1.0, v["sc_psi_io_some"] + 0.3 * min(1.0, nb.disk_bps / dev_bps))
    v["node_psi_io_full"] = v["node_psi_io_some"] * 0.4
    v["node_psi_mem_some"] = max(mem_share, nb.mem_stall)
    v["node_psi_mem_full"] = 0.6 * v["node_psi_mem_some"]
