"""From regime activity to each pod's signals, through the exporters' series.

dcgm-exporter publishes per-GPU gauges (clocks and power drawn per GPU, with per-board spread and
per-sample jitter, then averaged over the pod's GPUs as the data layer does); cAdvisor, node-exporter
and the sidecar publish counters that Prometheus rates; kube-state-metrics publishes the limits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyan.activity import QUANTITIES
from bottleneck_operator_dev.familyan.exporters import (
    GRID,
    FloatArray,
    Reader,
    Scrapes,
    counter,
    held,
    scrape_indices,
)
from bottleneck_operator_dev.familyan.physics import Plan

# Shares of time or of a capacity: noise never takes them past 0 or 1.
RATIOS = {"util", "gr", "sm", "occ", "tensor", "dram", "fp32", "fp16", "busy", "node_busy", "node_iowait", "node_system",
          "throttled", "swap_frac", "psi_cpu", "psi_io", "psi_io_full", "psi_mem", "psi_mem_full", "npsi_cpu",
          "npsi_io", "npsi_io_full", "npsi_mem", "npsi_mem_full", "disk_busy"}  # fmt: skip
QI = {q: k for k, q in enumerate(QUANTITIES)}


@dataclass(frozen=True)
class Grid:
    """The Job's activity on the 5 s grid.

    Attributes:
        t: grid times, seconds.
        q: quantity -> (pods, grid) values.
        clock: (pods, grid) clock factor from power limits and stragglers.
        startup: grid points in the model-load phase.
        straggling: (pods, grid) True where a pod runs thermally slowed.
    """

    t: FloatArray
    q: dict[str, FloatArray]
    clock: FloatArray
    startup: npt.NDArray[np.bool_]
    straggling: npt.NDArray[np.bool_]


def make_grid(act: FloatArray, clocks: FloatArray, strag: npt.NDArray[np.bool_], reg_idx: npt.NDArray[np.int64],
              t: FloatArray, startup: npt.NDArray[np.bool_], rng: np.random.Generator) -> Grid:  # fmt: skip
    """Regime values spread over the grid, with sample-to-sample noise (lognormal, a few per cent)."""
    a = act[reg_idx]  # (grid, pods, Q)
    noise = np.exp(rng.normal(0.0, 0.06, a.shape))
    a = a * noise
    q = {name: np.ascontiguousarray(a[:, :, k].T) for name, k in QI.items()}
    for name in RATIOS:
        q[name] = np.clip(q[name], 0.0, 1.0)
    return Grid(t, q, np.ascontiguousarray(clocks[reg_idx].T), startup, np.ascontiguousarray(strag[reg_idx].T))


def _per_gpu(plan: Plan, grid: Grid, rng: np.random.Generator) -> dict[str, FloatArray]:
    """Clock, power, slowdown and framebuffer per GPU, reduced per pod (mean, or max for the framebuffer)."""
    c, b = plan.cluster, plan.cluster.board
    pods, n = grid.clock.shape
    g = c.per_node
    spread = 1.0 - c.clock_spread * np.abs(rng.normal(0, 1, (pods, g, 1)))
    busy = grid.q["gr"][:, None, :]
    load = 0.15 * busy + 0.3 * grid.q["sm"][:, None, :] + 0.35 * grid.q["tensor"][:, None, :] / 0.7
    load = load + 0.2 * grid.q["dram"][:, None, :] / 0.8
    demand = b.idle + (b.tdp - b.idle) * np.clip(load, 0.0, 1.0) * spread
    limit = c.power_limit
    capped = demand > 0.97 * limit
    # power management moves the clock from sample to sample, most where the power limit binds
    jitter = 1.0 + rng.normal(0, 1, (pods, g, n)) * np.where(capped, 0.04, 0.012)
    clock = np.where(busy > 0.05, b.boost * grid.clock[:, None, :] * spread * jitter, b.idle_clock * jitter)
    power = np.minimum(demand, limit * (1 + rng.normal(0, 0.01, demand.shape))) * (
        1 + rng.normal(0, 0.01, demand.shape)
    )
    slowed = capped | grid.straggling[:, None, :]
    fb = plan.workload.fb_frac * (1 + rng.normal(0, 0.01, (pods, g, 1))) * np.where(grid.startup, 0.1, 1.0)
    return {
        "sm_clock_mhz": clock.mean(axis=1),
        "power_w": power.mean(axis=1),
        "clock_slowdown_frac": slowed.mean(axis=1).astype(float),
        "fb_used_frac": np.clip(np.broadcast_to(fb, (pods, g, n)).max(axis=1), 0.0, 1.0),
        "power_limit_w": np.full((pods, n), limit),
    }


def dcgm(plan: Plan, grid: Grid, rng: np.random.Generator, at: FloatArray, step: float,
         gap: tuple[int, int] | None) -> tuple[dict[str, FloatArray], Scrapes]:  # fmt: skip
    """dcgm-exporter's fields, held between collects, as the contract's signals."""
    c, q = plan.cluster, grid.q
    n_gpu = max(c.per_node, 1)
    damp = 1.0 / np.sqrt(n_gpu)  # independent per-GPU jitter averages down over the pod
    values = {
        "gpu_util": q["util"], "gr_engine_active": q["gr"], "tensor_active": q["tensor"],
        "dram_active": q["dram"], "sm_active": q["sm"], "sm_occupancy": q["occ"], "fp32_active": q["fp32"],
        "fp16_active": q["fp16"], "pcie_tx_bps": q["pcie_tx"], "pcie_rx_bps": q["pcie_rx"],
        "nvlink_tx_bps": q["nvl_tx"], "nvlink_rx_bps": q["nvl_rx"],
        "nvlink_total_bps": q["nvl_tx"] + q["nvl_rx"],
        "mem_copy_util": np.clip(q["dram"] * 1.1 + 0.01, 0.0, 1.0),
        "xid_code": np.zeros_like(q["util"]),
    }  # fmt: skip
    values.update(_per_gpu(plan, grid, rng))
    for k in ("gpu_util", "gr_engine_active", "sm_active", "tensor_active", "dram_active"):
        values[k] = np.clip(values[k] * (1 + rng.normal(0, 0.02 * damp, values[k].shape)), 0.0, 1.0)
    idx = scrape_indices(rng, grid.t.size, c.scrape["dcgm"], gap)
    phase = int(rng.integers(0, max(1, round(c.dcgm_collect / GRID))))
    scr = Scrapes("dcgm", idx, grid.t[idx], gauges={k: held(v, idx, c.dcgm_collect, phase) for k, v in values.items()})
    reader = Reader.of(scr, at, step, c.scrape["dcgm"])
    return {k: reader.last(k) for k in values}, scr


def _start(rng: np.random.Generator, pods: int, hi: float) -> FloatArray:
    return rng.uniform(0.0, hi, pods)


def cadvisor_ksm(
    plan: Plan, grid: Grid, rng: np.random.Generator, at: FloatArray, step: float
) -> tuple[dict[str, FloatArray], list[Scrapes]]:
    """cAdvisor's container counters and kube-state-metrics' limits."""
    c, q = plan.cluster, grid.q
    pods = q["cpu"].shape[0]
    idx = scrape_indices(rng, grid.t.size, c.scrape["cadvisor"])
    periods = np.full_like(q["cpu"], 10.0)  # one CFS period per 100 ms
    raw = {
        "container_cpu_usage_seconds_total": counter(q["cpu"], _start(rng, pods, 1e6)),
        "container_fs_reads_bytes_total": counter(q["pod_rd"], _start(rng, pods, 1e12)),
        "container_cpu_cfs_periods_total": counter(periods, _start(rng, pods, 1e7)),
        "container_cpu_cfs_throttled_periods_total": counter(periods * q["throttled"], _start(rng, pods, 1e6)),
    }
    scr = Scrapes("cadvisor", idx, grid.t[idx], counters={k: v[:, idx] for k, v in raw.items()})
    scr.gauges["container_memory_working_set_bytes"] = q["ws"][:, idx]
    scr.gauges["container_spec_memory_limit_bytes"] = np.full((pods, idx.size), plan.mem_limit)
    r = Reader.of(scr, at, step, c.scrape["cadvisor"])
    out = {
        "cpu_cores": r.rate("container_cpu_usage_seconds_total"),
        "fs_read_bps": r.rate("container_fs_reads_bytes_total"),
        "mem_working_set_bytes": r.last("container_memory_working_set_bytes"),
        "cpu_throttled_frac": r.ratio("container_cpu_cfs_throttled_periods_total", "container_cpu_cfs_periods_total"),
    }
    if c.layout["cadvisor"] == "with-spec":
        out["mem_limit_bytes"] = r.last("container_spec_memory_limit_bytes")
    kidx = scrape_indices(rng, grid.t.size, c.scrape["ksm"])
    ksm = Scrapes("ksm", kidx, grid.t[kidx])
    if c.cpu_limit is not None:
        ksm.gauges["kube_pod_container_resource_limits"] = np.full((pods, kidx.size), c.cpu_limit)
        out["cpu_limit_cores"] = Reader.of(ksm, at, step, c.scrape["ksm"]).last("kube_pod_container_resource_limits")
    return out, [scr, ksm]
