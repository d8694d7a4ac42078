"""What each exporter would see of a schedule, as steady per-second values of one phase.

The schedule gives each rank's busy time per step on each resource; here those become the
quantities the exporters measure: time shares of kernel activity (DCGM), bytes per second on the
links, CPU seconds per second of the pod and the node, pressure as the share of wall time some task
waited. Node-level values add the node's other tenants, which is how a neighbour makes them lie.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bottleneck_operator_dev.familyx.graph import Schedule
from bottleneck_operator_dev.familyx.workload import Config


@dataclass(frozen=True)
class Node:
    """What is on a pod's node besides the pod (drawn once per Job)."""

    other_pods: int
    disk_read_bps: float  # other tenants' block reads
    net_bps: float  # other tenants' network traffic, each way
    mem_hog: bool  # a tenant exhausts the node's memory (this pod is fine)
    swap: bool


def _clip(x: float) -> float:
    return float(min(1.0, max(0.0, x)))


def train_rates(cfg: Config, sched: Schedule, rank: int, node: Node, rng: np.random.Generator) -> dict[str, float]:
    """One pod's per-second values while it trains (signal name -> value in the contract's unit)."""
    load = _host_load(cfg, sched, rank, node, rng)
    return {**_gpu(cfg, sched, rank, rng), **_pod(cfg, load), **_node(cfg, load, node, rng)}


def _ring_bytes(cfg: Config) -> float:
    """Bytes each GPU (and each node's fabric edge) sends each way per step in the gradient ring."""
    width = 2.0 if cfg.precision == "amp" else 4.0
    factor = 2.0 * (cfg.ranks - 1) / max(cfg.ranks, 1) * (1.5 if cfg.fsdp else 1.0)
    return factor * cfg.model.params_m * 1e6 * width


def _gpu(cfg: Config, sched: Schedule, rank: int, rng: np.random.Generator) -> dict[str, float]:
    """dcgm-exporter's fields: time shares of what the schedule ran, bytes on the links, power and clocks."""
    b, st, g, m = sched.busy[rank], sched.step_time, cfg.gpu, cfg.model
    gpn = cfg.gpus_per_node
    kernel_run = b["compute"] - b["launchy"]
    # a launch-bound stream is mostly idle between kernels, but each tiny kernel still runs a few
    # microseconds of its launch interval (about a third of it at 6-20 us per launch)
    gpu_any = _clip((b["gpu_any"] - 0.7 * b["launchy"]) / st)
    sm = min(gpu_any, _clip((m.fill * (0.92 * b["flop_run"] + 0.8 * b["byte_run"]) + 0.12 * b["comm"]) / st))
    dram = _clip(b["byte"] * cfg.hbm_eff / st + 0.02 * gpu_any)
    ring = _ring_bytes(cfg) / st
    nvlink = ring if (g.nvlink_gbs > 0 and gpn > 1) else 0.0
    gdr = ring / gpn if (cfg.fabric.rdma and cfg.nodes > 1) else 0.0  # GPUDirect RDMA crosses each GPU's PCIe
    p2p = ring if (g.nvlink_gbs == 0 and gpn > 1) else 0.0
    headers = float(rng.uniform(1.04, 1.1))  # PCIe counters include packet headers
    clock = cfg.clocks[rank] * min(1.0, (cfg.power_ratio / 0.9) ** 0.8)
    limit = g.tdp_w * cfg.power_ratio
    power = min(
        limit * float(rng.uniform(0.97, 1.0)),
        g.idle_w + (g.tdp_w - g.idle_w) * (0.12 * gpu_any + 0.6 * sm * clock + 0.28 * dram),
    )
    fp32 = b["flop"] * cfg.gemm_eff * m.gemm_eff if cfg.precision == "fp32" else 0.08 * kernel_run
    return {
        "gpu_util": gpu_any,
        "gr_engine_active": _clip(gpu_any * float(rng.uniform(0.96, 1.0))),
        "sm_active": sm,
        "sm_occupancy": _clip(sm * float(rng.uniform(0.25, 0.6))),
        "tensor_active": _clip(b["tensor_flop"] * cfg.gemm_eff * m.gemm_eff / st),
        "dram_active": dram,
        "mem_copy_util": _clip(dram * float(rng.uniform(1.0, 1.3)) + 0.02 * gpu_any),
        "fp32_active": _clip(fp32 / st),
        "fp16_active": _clip(0.05 * kernel_run / st) if cfg.precision == "amp" else 0.0,
        "pcie_rx_bps": (cfg.batch * m.h2d_mb * 1e6 / st + gdr + p2p) * headers,
        "pcie_tx_bps": (2e5 + gdr + p2p) * headers,
        "nvlink_tx_bps": nvlink,
        "nvlink_rx_bps": nvlink,
        "nvlink_total_bps": 2 * nvlink,
        "power_w": power,
        "power_limit_w": limit,
        "sm_clock_mhz": g.max_clock * clock,
        "clock_slowdown_frac": 1.0 if (power >= limit * 0.96 or cfg.power_ratio < 0.9) else 0.0,
        "fb_used_frac": float(rng.uniform(0.85, 0.98)) if m.params_m > 20 else float(rng.uniform(0.1, 0.6)),
        "xid_code": 0.0,
    }


def _host_load(cfg: Config, sched: Schedule, rank: int, node: Node, rng: np.random.Generator) -> dict[str, float]:
    """What the pod's processes do on the host: CPU used, waits on CPU, IO and memory, faults."""
    b, st, gpn = sched.busy[rank], sched.step_time, cfg.gpus_per_node
    # work per batch, not the time it took: a throttled or shared core stretches time, not work
    workers_cpu = cfg.batch * cfg.model.decode_ms * 1e-3 / cfg.cpu_speed
    workers_cpu += 0.5 * cfg.mem_stretch * b["cpu"] / (1 + cfg.mem_stretch)  # reclaim is CPU time too
    pod_cpu = gpn * (workers_cpu / st + float(rng.uniform(0.7, 1.0)))  # the trainer spins on CUDA syncs
    if cfg.cpu_limit is not None:
        pod_cpu = min(pod_cpu, cfg.cpu_limit * float(rng.uniform(0.97, 1.0)))
    quota, free = cfg.cpu_supply(rank)
    throttled = 0.0
    if cfg.cpu_limit is not None:
        usage = pod_cpu / cfg.cpu_limit
        throttled = float(rng.uniform(0.7, 0.98)) if quota < cfg.demand() and usage > 0.9 else _clip(usage - 0.6) * 0.5
    if quota < cfg.demand() and cfg.cpu_limit is not None:
        cpu_wait = _clip(0.3 + 0.7 * throttled)
    elif free < cfg.demand():
        cpu_wait = _clip(0.2 + (cfg.demand() - free) / cfg.demand())
    else:
        cpu_wait = float(rng.uniform(0.0, 0.06))
    worker_busy = _clip(b["cpu"] / (cfg.workers * st))
    reading = _clip(b["ioread"] / (cfg.workers * st))
    data_wait = _clip(1 - b["compute"] / st)
    read_bps = cfg.batch * cfg.model.sample_mb * 1e6 * (1 - cfg.cache_hit) / st * gpn
    io_some = _clip(1 - (1 - reading) ** cfg.workers) if cfg.storage.iowait and read_bps > 0 else 0.0
    pressure = min(1.0, cfg.mem_stretch)
    mem_some = _clip(worker_busy * cfg.mem_stretch / (1 + cfg.mem_stretch) * 1.5)
    limit = (cfg.mem_limit_gb or 0.0) * 2**30
    return {
        "pod_cpu": pod_cpu,
        "throttled": throttled,
        "cpu_wait": cpu_wait,
        "worker_busy": worker_busy,
        "reading": reading,
        "read_bps": read_bps,
        "io_some": io_some,
        "io_full": _clip(io_some * data_wait * reading),
        "mem_some": mem_some,
        "mem_full": _clip(mem_some * data_wait),
        "swapin": float(rng.uniform(2e3, 3e4)) * pressure if node.swap else 0.0,
        "refault": float(rng.uniform(5e2, 2e4)) * pressure,
        "mmap_faults": read_bps / 4096 * 0.25 if cfg.mmap else 0.0,
        "limit": limit,
        "ws": limit * float(rng.uniform(0.97, 0.995))
        if pressure
        else (limit or 256 * 2**30) * float(rng.uniform(0.2, 0.8)),
        "net": _ring_bytes(cfg) / st if cfg.nodes > 1 else 0.0,
        "neighbour": cfg.neighbour_cores[rank],
    }


def _pod(cfg: Config, h: dict[str, float]) -> dict[str, float]:
    """The pod's own cgroup, as cAdvisor, kube-state-metrics and the collector publish it."""
    gpn = cfg.gpus_per_node
    local_read = h["read_bps"] if cfg.storage.local else 0.0
    return {
        "cpu_cores": h["pod_cpu"],
        "cpu_throttled_frac": h["throttled"],
        "mem_working_set_bytes": h["ws"],
        "mem_limit_bytes": h["limit"] if cfg.mem_limit_gb else math.nan,
        "fs_read_bps": local_read,
        "cpu_limit_cores": cfg.cpu_limit if cfg.cpu_limit is not None else math.nan,
        "sc_psi_cpu_some": h["cpu_wait"],
        "sc_psi_io_some": h["io_some"],
        "sc_psi_io_full": h["io_full"],
        "sc_psi_mem_some": h["mem_some"],
        "sc_psi_mem_full": h["mem_full"],
        "sc_cpu_cores": h["pod_cpu"] + 0.01,
        "sc_throttled_frac": h["throttled"],
        "sc_io_read_bps": local_read + h["swapin"] * 4096,
        "sc_majfault_ps": h["swapin"] + h["refault"] + h["mmap_faults"],
        "sc_swapin_ps": h["swapin"],
        "sc_oom_kills": 0.0,
        "sc_procs_running": gpn * (cfg.workers * h["worker_busy"] + 1.0),
        "sc_procs_iowait": gpn * cfg.workers * h["reading"] if cfg.storage.iowait else 0.0,
        "sc_procs_busy": gpn * ((cfg.workers if h["worker_busy"] > 0.9 else 0) + 1.0),
    }


def _node(cfg: Config, h: dict[str, float], node: Node, rng: np.random.Generator) -> dict[str, float]:
    """node-exporter on the pod's node: the pod plus the node's other tenants."""
    gpn, rdma = cfg.gpus_per_node, cfg.fabric.rdma
    local_read = h["read_bps"] if cfg.storage.local else 0.0
    busy = _clip((h["pod_cpu"] + h["neighbour"] + 0.4) / cfg.cores)
    tcp = 0.0 if rdma else h["net"]
    pressure = cfg.mem_stretch > 0
    system = 0.06 * h["pod_cpu"] + (2.0 * cfg.mem_stretch * gpn if pressure else 0.0) + tcp / 2e9
    hog = node.mem_hog
    return {
        "node_cpus": float(cfg.cores),
        "node_cpu_busy_frac": busy,
        "node_cpu_iowait_frac": _clip(min(1 - busy, h["io_some"] * cfg.workers * gpn / cfg.cores)),
        "node_cpu_system_frac": _clip(system / cfg.cores),
        "node_disk_read_bps": local_read + node.disk_read_bps + h["swapin"] * 4096,
        "node_disk_reads_ps": (local_read + node.disk_read_bps) / (cfg.storage.request_mb * 1e6) + h["swapin"],
        "node_disk_busy_frac": _clip(
            (h["reading"] * cfg.workers * gpn * 0.3 if local_read else 0.0) + node.disk_read_bps / 2e9
        ),
        "node_mem_avail_frac": float(rng.uniform(0.01, 0.08)) if hog else float(rng.uniform(0.15, 0.85)),
        "node_swap_used_frac": float(rng.uniform(0.3, 0.95) if (hog or pressure) else rng.uniform(0, 0.05))
        if node.swap
        else 0.0,
        "node_majfault_ps": h["swapin"]
        + h["refault"]
        + h["mmap_faults"]
        + (float(rng.uniform(3e3, 3e4)) if hog else 5.0),
        "node_net_rx_bps": (0.0 if cfg.storage.local else h["read_bps"]) + tcp + node.net_bps,
        "node_net_tx_bps": tcp + node.net_bps * 0.5 + 1e5,
        "ib_rx_bps": h["net"] if rdma else 0.0,
        "ib_tx_bps": h["net"] if rdma else 0.0,
        "node_psi_cpu_some": _clip(max(h["cpu_wait"] * 0.5, (busy - 0.85) * 4)),
        "node_psi_io_some": _clip(h["io_some"] + node.disk_read_bps / 4e9),
        "node_psi_io_full": _clip(h["io_full"] + node.disk_read_bps / 2e10),
        "node_psi_mem_some": _clip(h["mem_some"] + (float(rng.uniform(0.2, 0.6)) if hog else 0.0)),
        "node_psi_mem_full": _clip(h["mem_full"] + (float(rng.uniform(0.05, 0.3)) if hog else 0.0)),
    }


def pause_rates(train: dict[str, float], kind: str, cfg: Config, rng: np.random.Generator) -> dict[str, float]:
    """A checkpoint (GPU idle, weights copied out and written) or an evaluation (forward only, no gradients)."""
    out = dict(train)
    g = cfg.gpu
    if kind == "checkpoint":
        for name in (
            "gpu_util",
            "gr_engine_active",
            "sm_active",
            "sm_occupancy",
            "tensor_active",
            "dram_active",
            "mem_copy_util",
            "fp32_active",
            "fp16_active",
            "nvlink_tx_bps",
            "nvlink_rx_bps",
            "nvlink_total_bps",
            "ib_rx_bps",
            "ib_tx_bps",
            "sc_psi_io_full",
            "sc_psi_cpu_some",
        ):
            out[name] = 0.0
        out["pcie_tx_bps"] = cfg.model.params_m * 1e6 * 12 / 60.0
        out["power_w"] = g.idle_w * float(rng.uniform(1.0, 1.3))
        out["sm_clock_mhz"] = g.max_clock * float(rng.uniform(0.3, 0.7))
        out["clock_slowdown_frac"] = 0.0
        out["cpu_cores"] = out["sc_cpu_cores"] = cfg.gpus_per_node * 1.1
        out["node_net_tx_bps"] = train["node_net_tx_bps"] * 0.1 + cfg.model.params_m * 1e6 * 12 / 60.0
        out["sc_procs_running"] = float(cfg.gpus_per_node)
        out["sc_procs_busy"] = float(cfg.gpus_per_node)
    else:
        for name in ("gpu_util", "gr_engine_active", "sm_active", "tensor_active", "dram_active", "fp32_active"):
            out[name] = train[name] * float(rng.uniform(0.3, 0.6))
        for name in ("nvlink_tx_bps", "nvlink_rx_bps", "nvlink_total_bps", "ib_rx_bps", "ib_tx_bps"):
            out[name] = 0.0
        out["power_w"] = g.idle_w + (train["power_w"] - g.idle_w) * 0.5
    return out
