"""A pod's steady training-time rates: each unit's busy time per step over the step time.

Gauges are what the exporters define (busy shares, bytes per second, watts); counter rates are
per second of the counter's unit. The exporters (:mod:`.exporters`) add phases, noise and scraping.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator_dev.familyt.draw import JobSpec, idle_power

GB = 1e9


def pod_rates(spec: JobSpec, rng: np.random.Generator) -> tuple[dict[str, float], dict[str, float]]:
    """One pod's steady training-time gauges and counter rates, per the exporters' definitions."""
    gauges = gpu_rates(spec, rng)
    host_gauges, rates = host_rates(spec, rng)
    return {**gauges, **host_gauges}, rates


def _share(spec: JobSpec, seconds: float) -> float:
    return float(min(1.0, seconds / spec.composed.step))


def gpu_rates(spec: JobSpec, rng: np.random.Generator) -> dict[str, float]:
    """Busy shares of the GPU's engines, pipes and links while training (DCGM's definitions)."""
    st, comp, roof, w, gpu = spec.stages, spec.composed, spec.roof, spec.work, spec.gpu
    step, g = comp.step, spec.gpus_per_node

    def share(seconds: float) -> float:
        return _share(spec, seconds)

    hbm_warps = rng.uniform(0.5, 0.85)  # warps waiting on memory count as active
    sm = share(0.9 * st.compute + hbm_warps * st.hbm + 0.08 * st.collective)
    tensor = 0.0 if w.precision == "fp32" else share(roof.tensor_time * rng.uniform(0.35, 0.75))
    dram = min(0.9, roof.bytes / gpu.hbm_bps / step)
    util = share(st.compute + st.hbm + comp.comm_exposed)
    demand = min(1.0, 1.1 * (st.compute + 0.6 * st.hbm) / step)
    cf = float(spec.clock_factor.mean())
    power = min(spec.power_limit_w, idle_power(gpu) + (gpu.tdp_w - idle_power(gpu)) * demand * min(1.0, cf**2.5))
    rdma = spec.fabric is not None and spec.fabric.rdma
    inter_gpu = spec.coll.inter_bytes / g / step  # per GPU: GPUDirect RDMA goes over the GPU's PCIe
    pcie_coll = 0.0 if spec.nvlink else spec.coll.intra_bytes / step
    nvl = spec.coll.intra_bytes / step if spec.nvlink else 0.0
    gauges = {
        "gpu_util": util,
        "gr_engine_active": util * rng.uniform(0.93, 1.0),
        "mem_copy_util": share(st.hbm + 0.4 * st.compute + 0.5 * st.collective),
        "sm_active": sm,
        "sm_occupancy": sm * rng.uniform(0.2, 0.6),
        "tensor_active": tensor,
        "dram_active": dram,
        "fp32_active": share(0.6 * st.compute) if w.precision == "fp32" else share(0.05 * st.hbm),
        "fp16_active": share(0.15 * st.hbm) if w.precision in ("bf16", "fp16") else 0.0,
        "pcie_rx_bps": spec.h2d_step_bytes / step + pcie_coll + (inter_gpu if rdma else 0.0),
        "pcie_tx_bps": 2e6 + pcie_coll + (inter_gpu if rdma else 0.0),
        "nvlink_tx_bps": nvl,
        "nvlink_rx_bps": nvl,
        "power_w": power,
        "busy_clock": cf,
    }
    return gauges


def host_rates(spec: JobSpec, rng: np.random.Generator) -> tuple[dict[str, float], dict[str, float]]:
    """The pod's CPU, memory, storage and network while training (cgroup and node-exporter definitions)."""
    st, w, step, g = spec.stages, spec.work, spec.composed.step, spec.gpus_per_node

    def share(seconds: float) -> float:
        return _share(spec, seconds)

    cores_decode = g * w.batch * w.decode_s / step
    trainer = g * min(1.0, 0.35 + st.launch / step + st.host_memory / step * 0.5)
    swap_sys = g * spec.fault_pages * 4e-6 / step  # the kernel's fault path, a few µs per page
    cores = cores_decode + trainer + swap_sys
    if spec.cpu_limit is not None:
        cores = min(cores, spec.cpu_limit)
    load = cores / spec.cpu_limit if spec.cpu_limit else 0.0
    throttled = float(np.clip((load - 0.75) / 0.25, 0.0, 1.0) ** 1.5 * 0.95) if spec.cpu_limit else 0.0
    local_reads = g * w.batch * w.sample_bytes * (1 - spec.cache_hit) / step
    blocking_wait = share(st.storage) if spec.storage.blocks else 0.0
    mem_stall = share(st.host_memory)
    faults = g * spec.fault_pages / step
    tcp_coll = spec.coll.inter_bytes / step if spec.fabric is not None and not spec.fabric.rdma else 0.0
    storage_net = 0.0 if spec.storage.local else local_reads
    rates = {
        "cpu_seconds": cores,
        "cfs_periods": 10.0,  # the CFS period is 100 ms
        "cfs_throttled": 10.0 * throttled,
        "fs_reads": local_reads if spec.storage.local else 0.0,
        "io_read": local_reads if spec.storage.local else 0.0,
        "majfault": faults,
        "swapin": faults if spec.swap != "none" else 0.0,
        "oom": (rng.uniform(0.5, 3) / 3600.0) if spec.swap == "none" and mem_stall > 0.05 else 0.0,
        "psi_cpu_some": float(
            min(0.95, throttled * 0.8 + max(0.0, (cores_decode / max(spec.worker_cores * g, 1)) - 0.9))
        ),
        "psi_io_some": min(0.95, blocking_wait * rng.uniform(0.9, 1.2)),
        "psi_io_full": min(0.95, blocking_wait * rng.uniform(0.3, 0.7)),
        "psi_mem_some": min(0.98, mem_stall * rng.uniform(1.0, 1.3)),
        "psi_mem_full": min(0.95, mem_stall * rng.uniform(0.4, 0.8)),
        "net_rx": tcp_coll + storage_net,
        "net_tx": tcp_coll + 0.02 * storage_net,
        "ib": spec.coll.inter_bytes / step if spec.fabric is not None and spec.fabric.rdma else 0.0,
        "swap_sys": swap_sys,
    }
    gauges: dict[str, float] = {}
    gauges["ws"] = min(spec.working_set_gb, spec.mem_limit_gb or 1e9) * GB
    gauges["procs_running"] = float(min(spec.workers * g, cores_decode) + g)
    gauges["procs_iowait"] = float(round(spec.workers * g * blocking_wait))
    gauges["procs_busy"] = float(spec.workers * g if cores_decode / max(spec.workers * g, 1) > 0.9 else 0) + (
        g if trainer / g > 0.9 else 0
    )
    return gauges, rates
