"""What dcgm-exporter would report for each GPU, from where each rank's iteration time goes.

Definitions followed (NVIDIA DCGM profiling-metrics documentation, NVML): ``GPU_UTIL`` is the
share of a short sample period in which any kernel ran (collectives and kernels waiting for a
slower rank included); ``SM_ACTIVE`` the share of time an SM had a warp resident, averaged over
SMs (warps stalled on memory count); ``PIPE_TENSOR_ACTIVE`` the tensor pipes' busy share;
``DRAM_ACTIVE`` the memory interface's busy share, whose practical ceiling is about 0.8;
``MEM_COPY_UTIL`` the share of time memory was read or written. Power follows activity up to the
enforced limit, where the clock gives way (the power-capping clock-event reason).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyh.cluster import Cluster
from bottleneck_operator_dev.familyh.draft import Draft
from bottleneck_operator_dev.familyh.timeline import Timeline

Rng = np.random.Generator
Array = npt.NDArray[np.float64]


def clock_factors(rng: Rng, d: Draft, power: tuple[float, bool]) -> Array:
    """Per-GPU clock under load as a share of boost (pods, gpus), given (cap share of TDP, clocks locked).

    A board asking for more power than its enforced limit lowers its clock: dynamic power grows
    roughly with the cube of the clock (voltage follows frequency), so the clock settles near
    ``(cap / demand) ** (1/3)`` of boost. Boards of one model differ by a few per cent.
    """
    b = d.board
    cap = b.tdp_w * power[0]
    busy_demand = b.idle_w + (b.tdp_w * 1.02 - b.idle_w) * float(rng.uniform(0.75, 1.0))
    over = max(1.0, (busy_demand - b.idle_w) / max(cap - b.idle_w, 1.0))
    base = over ** (-1.0 / 3.0)
    spread = 0.003 if power[1] else float(rng.uniform(0.01, 0.05))
    per_gpu = base * (1.0 - np.abs(rng.normal(0.0, spread, (d.pods, d.gpus))))
    return np.asarray(np.clip(per_gpu, 0.3, 1.0), dtype=np.float64)


def _shares(tl: Timeline) -> dict[str, Array]:
    """Per-rank time shares of each kind of kernel (pods, T)."""
    it = np.broadcast_to(tl.running / tl.step, tl.tensor.shape)
    sync = tl.comm + tl.nccl_wait
    return {
        "tensor": np.clip(it * tl.tensor, 0, 1),
        "hbm": np.clip(it * tl.hbm, 0, 1),
        "sync": np.clip(it * sync, 0, 1),
        "it": it,
    }


def gpu_fields(rng: Rng, d: Draft, cl: Cluster, tl: Timeline) -> dict[str, Array]:
    """dcgm-exporter's fields per GPU, in the contract's units, on the timeline's grid (pods, gpus, T)."""
    sh = _shares(tl)
    shape = (d.pods, d.gpus, tl.t.size)
    wiggle = np.clip(1.0 + rng.normal(0.0, 0.02, shape), 0.9, 1.1)

    def per_gpu(x: Array) -> Array:
        return np.asarray(np.clip(x[:, None, :] * wiggle, 0.0, 1.0), dtype=np.float64)

    ten, hbm, sync = sh["tensor"], sh["hbm"], sh["sync"]
    fill_tc, fill_bw, fill_sync = rng.uniform(0.85, 0.98), rng.uniform(0.75, 0.95), rng.uniform(0.04, 0.2)
    dram_tc, dram_bw = rng.uniform(0.1, 0.35), rng.uniform(0.68, 0.84)
    out: dict[str, Array] = {
        "gpu_util": per_gpu(ten + hbm + sync + 0.02 * tl.pause[None, :]),
        "gr_engine_active": per_gpu((ten + hbm + sync) * rng.uniform(0.93, 1.0)),
        "sm_active": per_gpu(ten * fill_tc + hbm * fill_bw + sync * fill_sync),
        "sm_occupancy": per_gpu(ten * rng.uniform(0.12, 0.35) + hbm * rng.uniform(0.4, 0.8) + sync * 0.04),
        "tensor_active": per_gpu(ten * d.tensor_fill),
        "dram_active": per_gpu(ten * dram_tc + hbm * dram_bw + sync * 0.04),
        "mem_copy_util": per_gpu(ten * rng.uniform(0.25, 0.55) + hbm * rng.uniform(0.8, 1.0) + sync * 0.08),
        "fp32_active": per_gpu(ten * (0.55 if d.fp32_math else 0.01) + hbm * rng.uniform(0.03, 0.15)),
        "fp16_active": per_gpu(hbm * (0.0 if d.fp32_math else rng.uniform(0.03, 0.2))),
    }
    if d.timeslice > 0:
        _add_neighbour(out, d.timeslice * np.clip(1.0 - (ten + hbm + sync), 0.0, 1.0), per_gpu)
    out.update(_links(d, tl, sh["it"], wiggle))
    out.update(_power_clock(rng, d, cl, tl, out))
    fb = rng.uniform(0.88, 0.985) if rng.random() < 0.8 else rng.uniform(0.25, 0.88)
    out["fb_used_frac"] = np.clip(fb + rng.normal(0.0, 0.004, shape), 0.0, 1.0)
    # the last XID since the driver loaded: most boards have none; 13 and 31 are application faults,
    # 94 a contained ECC error
    xid = float(rng.choice((0.0, 13.0, 31.0, 94.0), p=(0.92, 0.03, 0.03, 0.02)))
    out["xid_code"] = np.full(shape, xid)
    return out


def _add_neighbour(out: dict[str, Array], busy: Array, per_gpu: Callable[[Array], Array]) -> None:
    """A time-sliced GPU: the other pod's kernels fill part of the job's idle time, and every pod
    sharing the GPU reads the same device-wide values."""
    mix = {
        "gpu_util": 1.0,
        "gr_engine_active": 0.97,
        "sm_active": 0.7,
        "sm_occupancy": 0.3,
        "tensor_active": 0.3,
        "dram_active": 0.3,
        "mem_copy_util": 0.4,
        "fp32_active": 0.05,
        "fp16_active": 0.05,
    }
    for name, share in mix.items():
        out[name] = np.clip(out[name] + per_gpu(busy * share), 0.0, 1.0)


def _links(d: Draft, tl: Timeline, it: Array, wiggle: Array) -> dict[str, Array]:
    """PCIe and NVLink bytes per second per GPU (pods, gpus, T)."""
    nvlink = d.board.nvlink_bps > 0
    peer = d.nvlink_bytes / d.accum
    rdma = d.link_bytes / d.accum if d.fabric is not None and d.fabric.gpudirect else 0.0
    rx = it * (d.h2d_bytes + (0.0 if nvlink else peer) + rdma)
    tx = it * (d.d2h_bytes + (0.0 if nvlink else peer) + rdma)
    # a checkpoint first copies the model's state to host memory
    tx = tx + tl.pause[None, :] * d.board.pcie_bps * 0.15
    rx, tx = np.broadcast_to(rx, it.shape), np.broadcast_to(tx, it.shape)
    link = it * (peer if nvlink else 0.0)
    cap = d.board.pcie_bps

    def g(x: Array, limit: float) -> Array:
        return np.asarray(np.clip(x[:, None, :] * wiggle, 0.0, limit), dtype=np.float64)

    both = g(link, max(d.board.nvlink_bps, 1.0))
    return {
        "pcie_rx_bps": g(rx, cap),
        "pcie_tx_bps": g(tx, cap),
        "nvlink_tx_bps": both,
        "nvlink_rx_bps": both,
        "nvlink_total_bps": 2.0 * both,
    }


def _power_clock(rng: Rng, d: Draft, cl: Cluster, tl: Timeline, f: dict[str, Array]) -> dict[str, Array]:
    """Power, SM clock, the enforced limit and the power-cap clock-event share (pods, gpus, T)."""
    b = d.board
    cap = b.tdp_w * cl.power_cap_frac
    activity = np.clip(
        0.15 * f["gpu_util"]
        + 0.35 * f["sm_active"]
        + 0.35 * np.minimum(1.0, f["tensor_active"] / 0.6)
        + 0.15 * np.minimum(1.0, f["dram_active"] / 0.8),
        0.0,
        1.0,
    )
    demand = b.idle_w + (b.tdp_w * 1.02 - b.idle_w) * activity
    capped = demand >= cap * 0.985
    power = np.minimum(demand, cap * 0.99) * (1.0 - np.abs(rng.normal(0.0, 0.01, demand.shape)))
    # under the cap only the boards' own spread remains; at it, the clock gives way
    spread = tl.clock / max(float(tl.clock.max()), 1e-6)
    clock = np.where(capped, tl.clock[:, :, None], spread[:, :, None]) * b.boost_mhz
    if not cl.clocks_locked:
        # a board with little to do drops towards its idle clock
        idle = np.clip(1.0 - f["gpu_util"] * 3.0, 0.0, 1.0)
        clock = clock * (1.0 - idle) + b.idle_mhz * idle
        clock = clock * (1.0 + rng.normal(0.0, 0.008, clock.shape))
    clock = np.minimum(np.round(clock / 15.0) * 15.0, b.boost_mhz)
    return {
        "power_w": np.clip(power, b.idle_w * 0.8, cap * 0.995),
        "sm_clock_mhz": clock,
        "power_limit_w": np.full(demand.shape, round(cap)),
        # a board at its cap reports the software-power-cap clock-event reason (NVML, 0x4)
        "clock_slowdown_frac": capped.astype(np.float64),
    }
