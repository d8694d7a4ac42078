"""What each exporter would measure, tick by tick, from the simulated step and the pod's life.

Every value is in its signal's unit (contract/signals.py). Counter signals are given as their
per-second rate (the exporter integrates them, :mod:`.exporters`); gauges as their value. A shared
device's counters count every tenant's work (dcgm-exporter issues 587, 642: time-slicing pods see
the same values); under MIG the PROF fields are the instance's own and ``GPU_UTIL`` is absent.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyao.hardware import DRAM_PRACTICAL_PEAK, Fabric, Sharing
from bottleneck_operator_dev.familyao.plan import Plan
from bottleneck_operator_dev.familyao.steps import StepAccount, kernel_time
from bottleneck_operator_dev.familyao.timeline import TICK, PodTrack, Timeline

FloatArray = npt.NDArray[np.float64]

IDLE_POWER_SHARE = 0.15  # idle draw as a share of the board limit (assumption)
SWAP_PAGE = 4096.0
# Host-to-host checkpoint reads on a restart, B/s, capped by the storage (assumption)
CHECKPOINT_READ = 1.5e9


@dataclass(frozen=True)
class JobDraws:
    """Per-Job constants the exporters need beyond the plan."""

    tensor_eff: float  # tensor-pipe activity while math kernels run
    fb_frac: float  # framebuffer held by the caching allocator
    occupancy: float
    neighbour_net: float  # other pods' network bytes on the node, B/s
    node_mem: float  # node RAM, bytes
    mmap_dataset: bool  # samples read through a memory map: major faults are IO here
    sidecar_reset: int  # a tick where the collector restarted alone (-1: none)


def _union(a: FloatArray, b: float) -> FloatArray:
    """Share of time at least one of two independent activities is on."""
    return np.asarray(1.0 - (1.0 - np.clip(a, 0.0, 1.0)) * (1.0 - b), dtype=np.float64)


def _links(plan: Plan, acct: StepAccount) -> tuple[float, float, float]:
    """Bytes per second per GPU over (NVLink, PCIe for collectives, the fabric) while stepping."""
    c = plan.comm_bytes / acct.step
    has_nvlink = plan.board.nvlink_bps > 0 and plan.sharing is Sharing.WHOLE
    nvlink = c if plan.gpus > 1 and has_nvlink else 0.0
    pcie = c if plan.gpus > 1 and not has_nvlink else 0.0
    fabric = c / plan.gpus if plan.pods > 1 else 0.0
    return nvlink, pcie, fabric


def gpu_series(plan: Plan, acct: StepAccount, track: PodTrack, d: JobDraws) -> dict[str, FloatArray]:
    """dcgm-exporter's fields for one pod (mean over its GPUs), per tick."""
    t, step = plan.times, acct.step
    act = track.run * track.noise
    faster = plan.clock / track.clock  # a faster peer finishes its kernels early, then waits in NCCL
    kern = acct.kernels / step
    busy = np.clip(act * (kern + acct.exposed_comm / step), 0.0, 1.0)
    launch_bound = t.launch >= kernel_time(t.without("launch"))
    fill = 0.25 if launch_bound else (0.9 if t.compute >= t.hbm else 0.78)
    wait = kern * (1.0 - faster) + acct.exposed_comm / step
    sm = act * (kern * faster * fill + 0.1 * wait)
    tensor = act * min(t.compute, acct.kernels) / step * faster * d.tensor_eff
    dram = act * DRAM_PRACTICAL_PEAK * t.hbm / step
    fp32 = act * kern * (0.04 if plan.amp else (0.12 if plan.board.tf32 else 0.45))
    fp16 = act * kern * (0.08 if plan.amp else 0.01)
    u = plan.tenant_load
    if plan.sharing is Sharing.MIG:
        util = busy  # not exported under MIG; kept for power only
        board_load = sm * plan.sm_share + 0.6 * u * (1.0 - plan.sm_share)
    else:
        util = _union(busy, u)
        sm = _union(sm * plan.sm_share, 0.6 * u)
        tensor = _union(tensor * plan.sm_share, 0.3 * u)
        dram = _union(dram * plan.mem_share, 0.3 * u)
        board_load = sm
    want = plan.board.tdp_w * (
        IDLE_POWER_SHARE + (1 - IDLE_POWER_SHARE) * (0.6 * board_load + 0.25 * dram + 0.15 * util)
    )
    capped = want > plan.power_limit * 0.97
    power = np.minimum(want, plan.power_limit * 0.99)
    clock = plan.board.max_clock * np.where(act > 0.05, track.clock * np.where(capped, 0.93, 1.0), 0.5)
    nv, pc, fab = _links(plan, acct)
    gdr = fab if plan.fabric in (Fabric.INFINIBAND, Fabric.ROCE) else 0.0  # GPUDirect RDMA crosses PCIe
    h2d = plan.h2d_bytes / step
    return {
        "gpu_util": util,
        "gr_engine_active": np.clip(busy if plan.sharing is Sharing.MIG else util, 0, 1) * 0.98,
        "sm_active": np.clip(sm, 0, 1),
        "sm_occupancy": np.clip(sm * d.occupancy, 0, 1),
        "tensor_active": np.clip(tensor, 0, 1),
        "dram_active": np.clip(dram, 0, 1),
        "fp32_active": np.clip(fp32, 0, 1),
        "fp16_active": np.clip(fp16, 0, 1),
        "mem_copy_util": np.clip(dram * 1.15 + 0.03 * util, 0, 1),
        "pcie_rx_bps": act * (h2d + pc + gdr) + 2e6,
        "pcie_tx_bps": act * (0.02 * h2d + pc + gdr) + 1e6,
        "nvlink_tx_bps": act * nv,
        "nvlink_rx_bps": act * nv,
        "nvlink_total_bps": act * 2 * nv,
        "power_w": power * (1 + 0.01 * (track.noise - 1)),
        "sm_clock_mhz": clock,
        "power_limit_w": np.full(act.shape, plan.power_limit),
        "clock_slowdown_frac": (capped & (act > 0.05)).astype(np.float64),
        "fb_used_frac": np.full(
            act.shape, min(0.99, d.fb_frac + (0.3 * u if plan.sharing is Sharing.TIME_SLICED else 0))
        ),
        "xid_code": np.zeros(act.shape),
    }


def _cpu(plan: Plan, acct: StepAccount, act: FloatArray, restore: FloatArray) -> dict[str, FloatArray]:
    """The pod's CPU: loader workers' decode, the trainer's main thread, and the CFS quota."""
    t, step = plan.times, acct.step
    room = plan.node_cpus - plan.neighbour_cores
    cap = min(plan.cpu_limit if plan.cpu_limit is not None else np.inf, room)
    used = np.minimum(act * (plan.cpu_work / step + 0.8 + t.launch / step) + 0.05 + 0.5 * restore, cap)
    if plan.cpu_limit is not None:
        throttled = np.clip((used / plan.cpu_limit - 0.8) / 0.2, 0.0, 1.0) * 0.92
    else:
        throttled = np.zeros_like(used)
    crowded = np.clip(((used + plan.neighbour_cores) / plan.node_cpus - 0.85) / 0.15, 0.0, 1.0)
    workers_busy = np.clip(used - 1.0, 0.0, plan.workers)
    return {
        "cpu_cores": used,
        "sc_cpu_cores": used + 0.02,  # the collector's own share of the pod cgroup
        "cpu_throttled_frac": throttled,
        "sc_throttled_frac": throttled,
        "sc_psi_cpu_some": np.clip(0.02 + 0.8 * throttled + 0.6 * crowded, 0, 1),
        "node_psi_cpu_some": np.clip(0.03 + 0.3 * throttled + 0.7 * crowded, 0, 1),
        "node_cpu_busy_frac": np.clip((used + plan.neighbour_cores) / plan.node_cpus, 0, 1),
        "sc_procs_running": 1.0 + np.minimum(np.ceil(workers_busy), plan.workers),
        "sc_procs_busy": np.floor(np.clip(workers_busy * 0.95, 0, plan.workers)),
        "cpu_limit_cores": np.full(used.shape, np.nan if plan.cpu_limit is None else plan.cpu_limit),
        "node_cpus": np.full(used.shape, float(plan.node_cpus)),
    }


def _io(plan: Plan, acct: StepAccount, act: FloatArray, restore: FloatArray, d: JobDraws) -> dict[str, FloatArray]:
    """Sample reads: block devices show in disk and cgroup counters, NFS and object stores on the network."""
    t, step = plan.times, acct.step
    read = act * plan.io_bytes / step + restore * min(CHECKPOINT_READ, plan.storage_bps)
    block = read if plan.storage.local else np.zeros_like(read)
    waiting = np.clip(act * t.io / step, 0, 1)
    # object-store readers wait in socket receive (S state): no iowait, no D state, no io pressure
    dstate = 0.0 if plan.storage.value == "object-store" else 1.0
    device_bps = 3.5e9 if plan.storage.value == "throttled-block" else plan.storage_bps / 0.8
    mmap = read / SWAP_PAGE / 8 if d.mmap_dataset and plan.storage.local else np.zeros_like(read)
    return {
        "fs_read_bps": block,
        "sc_io_read_bps": block,
        "node_disk_read_bps": block + 2e5,
        "node_disk_reads_ps": block / 131072 + 2.0,
        "node_disk_busy_frac": np.clip(block / device_bps, 0, 1),
        "sc_psi_io_some": np.clip(dstate * 0.9 * waiting, 0, 1),
        "sc_psi_io_full": np.clip(dstate * 0.35 * waiting, 0, 1),
        "node_psi_io_some": np.clip(dstate * 0.8 * waiting + 0.01, 0, 1),
        "node_psi_io_full": np.clip(dstate * 0.3 * waiting, 0, 1),
        "node_cpu_iowait_frac": np.clip(dstate * waiting * plan.workers / plan.node_cpus * 0.5, 0, 1),
        "sc_procs_iowait": np.round(dstate * waiting * plan.workers),
        "_net_reads": read - block,  # network storage bytes, split below by where they are counted
        "_mmap_faults": mmap,
    }


def _memory(plan: Plan, acct: StepAccount, act: FloatArray, d: JobDraws, oom_ticks: list[int]) -> dict[str, FloatArray]:
    """Host memory: swap-in or refaults while the working set exceeds what the cgroup allows."""
    stall = act * plan.times.hostmem / acct.step
    # pages brought back per second while stalled: at ~0.8 GB/s from swap or the page cache (assumption)
    pages = stall * 0.8e9 / SWAP_PAGE
    oom = np.zeros_like(act)
    for k in oom_ticks:
        oom[k] = 1.0 / TICK  # one kill in that tick
    ws = plan.working_set * np.ones_like(act)
    swap_used = (0.5 if plan.times.hostmem > 0 else 0.02) if plan.swap else 0.0
    return {
        "sc_psi_mem_some": np.clip(stall, 0, 1),
        "sc_psi_mem_full": np.clip(0.7 * stall, 0, 1),
        "node_psi_mem_some": np.clip(0.9 * stall, 0, 1),
        "node_psi_mem_full": np.clip(0.6 * stall, 0, 1),
        "sc_swapin_ps": pages if plan.swap else np.zeros_like(pages),
        "sc_majfault_ps": pages,
        "node_majfault_ps": pages + 5.0,
        "sc_oom_kills": oom,
        "mem_working_set_bytes": ws,
        "mem_limit_bytes": np.full(act.shape, plan.mem_limit),
        "node_mem_avail_frac": np.clip(1.0 - (ws + 0.3 * d.node_mem) / d.node_mem, 0.01, 1),
        "node_swap_used_frac": np.full(act.shape, swap_used),
        "node_cpu_system_frac": np.clip(0.02 + 0.15 * stall, 0, 1),
    }


def host_series(
    plan: Plan, acct: StepAccount, track: PodTrack, tl: Timeline, d: JobDraws, oom_ticks: list[int]
) -> dict[str, FloatArray]:
    """cAdvisor's, kube-state-metrics', node-exporter's and the collector's series for one pod, per tick."""
    act = track.run * track.noise
    restore = tl.restore.astype(np.float64) * track.present
    out = _cpu(plan, acct, act, restore)
    io = _io(plan, acct, act, restore, d)
    out |= _memory(plan, acct, act, d, oom_ticks)
    net_reads, mmap = io.pop("_net_reads"), io.pop("_mmap_faults")
    out |= io
    out["sc_majfault_ps"] = out["sc_majfault_ps"] + mmap
    out["node_majfault_ps"] = out["node_majfault_ps"] + mmap
    _, _, fab = _links(plan, acct)
    comm = act * fab * plan.gpus
    tcp = comm if plan.fabric is Fabric.TCP else np.zeros_like(comm)
    rdma = comm if plan.fabric in (Fabric.INFINIBAND, Fabric.ROCE) else np.zeros_like(comm)
    # NFS is mounted by the node's kernel: outside the pod's network namespace; an object store is inside
    pod_reads = net_reads if plan.storage.value == "object-store" else np.zeros_like(net_reads)
    out["sc_net_rx_bps"] = pod_reads + tcp + 5e4
    out["sc_net_tx_bps"] = tcp + 0.02 * pod_reads + 5e4
    out["node_net_rx_bps"] = net_reads + tcp + d.neighbour_net
    out["node_net_tx_bps"] = tcp + 0.02 * net_reads + 0.5 * d.neighbour_net
    out["ib_rx_bps"] = rdma + 1e3
    out["ib_tx_bps"] = rdma + 1e3
    return out
