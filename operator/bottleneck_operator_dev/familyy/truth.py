"""What really happens on each pod, second by second: the primal solution turned into physical rates.

Every quantity is the program's own usage of a resource (x a_r) or a consequence of how close a row is
to binding, so the telemetry and the label come from one solution. Values are per pod (all its GPUs)
on a fine grid; :mod:`.exporters` then reads them the way each exporter does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .hardware import PAGE
from .program import ROWS
from .steady import Phase, PodState, Steady
from .workload import Setup

FloatArray = npt.NDArray[np.float64]
DT = 5.0  # seconds between points of the fine grid


@dataclass(frozen=True)
class Looks:
    """Per-Job constants of how hardware and kernels look to the exporters (drawn once per Job)."""

    sm_compute: float  # SM activity while compute-bound kernels run
    sm_memory: float  # ... while bandwidth-bound kernels run (waiting warps count as active)
    occ_compute: float
    occ_memory: float
    tensor: float  # tensor-pipe activity while matmuls run
    dram_compute: float  # DRAM activity while compute-bound kernels run
    fb_frac: float
    psi_cpu: float
    psi_io: float
    full_share: float
    board: FloatArray  # per-pod clock spread between boards
    noise: float


def draw_looks(rng: np.random.Generator, pods: int) -> Looks:
    return Looks(
        sm_compute=float(rng.uniform(0.85, 0.97)),
        sm_memory=float(rng.uniform(0.7, 0.95)),
        occ_compute=float(rng.uniform(0.15, 0.4)),
        occ_memory=float(rng.uniform(0.45, 0.8)),
        tensor=float(rng.uniform(0.45, 0.85)),
        dram_compute=float(rng.uniform(0.1, 0.35)),
        fb_frac=float(rng.uniform(0.88, 0.99) if rng.random() < 0.7 else rng.uniform(0.3, 0.88)),
        psi_cpu=float(rng.uniform(0.5, 0.95)),
        psi_io=float(rng.uniform(0.5, 0.95)),
        full_share=float(rng.uniform(0.3, 0.7)),
        board=rng.uniform(0.93, 1.0, size=pods),
        noise=float(rng.uniform(0.02, 0.07)),
    )


def _usage(ps: PodState) -> dict[str, float]:
    """Each row's utilisation at the rate the Job runs (not the pod's own optimum)."""
    sol = ps.solution
    scale = ps.x / sol.x if sol.x > 0 else 0.0
    out: dict[str, float] = {}
    for k, name in enumerate(ROWS[:-1]):
        cap = {"thread": 1.0, "stream": 1.0}.get(name)
        cap = cap if cap is not None else _cap(ps, name)
        out[name] = float(sol.usage[k] * scale / cap) if cap > 0 else 0.0
    return out


def _cap(ps: PodState, row: str) -> float:
    key = {"storage": "storage_bw", "requests": "storage_iops", "swap": "swap_bw"}.get(row, row)
    return ps.caps[key]


def _pod_point(setup: Setup, ps: PodState, looks: Looks) -> dict[str, float]:
    """The pod's physical rates in one interval of training or evaluation."""
    return _gpu_point(setup, ps, looks) | _host_point(setup, ps)


def _gpu_point(setup: Setup, ps: PodState, looks: Looks) -> dict[str, float]:
    """Per GPU: the stream's time shares by kind of kernel, link bytes, power and clock."""
    d, c, x, g = ps.demand, ps.caps, ps.x, ps.g
    comm = 0.0
    if d.ar_intra > 0:
        comm += d.ar_intra / c["nvlink" if d.intra_link == "nvlink" else "pcie"]
    if d.ar_net > 0:
        comm += d.ar_net / c["rdma" if d.net_link == "rdma" else "nic"]
    t_c, t_m = d.flops / c["flops"], d.hbm_bytes / c["hbm"]
    t_x, t_l = (1 - d.overlap) * comm, d.msgs / c["msg_rate"]
    t_g = d.gpu_dec_flops / c["flops"]
    busy = min(1.0, x * (t_c + t_m + t_x + t_l) + g * t_g)
    amp = setup.precision == "amp"
    tensor = x * t_c * looks.tensor * (0.0 if setup.precision == "fp32" else (1.0 if amp else 0.6))
    fp32 = x * t_c * 0.7 if setup.precision == "fp32" else x * (0.03 * t_c + 0.1 * t_m)
    # bandwidth-bound kernels run at the practical peak (0.85 of the datasheet), matmuls far below it
    dram = min(0.95, x * (0.85 * t_m + looks.dram_compute * t_c) + g * t_g * 0.3)
    gpu = setup.gpu
    act = 0.3 * busy + 0.5 * max(tensor, fp32) + 0.2 * dram
    demand_w = gpu.idle_w + (gpu.tdp_w - gpu.idle_w) * min(1.0, act * 1.25)
    capped = demand_w >= setup.power_limit_w
    pcie_peer = x * (d.ar_intra * (d.intra_link == "pcie") + d.ar_net * d.gpudirect)
    return {
        "busy": busy,
        "sm": min(1.0, x * (t_c * looks.sm_compute + t_m * looks.sm_memory + 0.15 * t_x + 0.05 * t_l) + g * t_g * 0.5),
        "occ": min(1.0, x * (t_c * looks.occ_compute + t_m * looks.occ_memory + 0.05 * (t_x + t_l))),
        "tensor": min(1.0, tensor),
        "fp32": min(1.0, fp32),
        "fp16": min(1.0, x * t_m * 0.25) if amp else 0.0,
        "dram": dram,
        "pcie_rx": 1.06 * ((x - g) * d.h2d + g * d.h2d_gpu + pcie_peer),  # PCIe bytes count headers
        "pcie_tx": 1.06 * (x * 2e3 + pcie_peer),
        "nvlink": x * d.ar_intra * (d.intra_link == "nvlink"),
        "power": setup.power_limit_w * 0.985 if capped else demand_w,
        "clock_factor": setup.clock_factor if capped else 1.0,
        "slowdown": 1.0 if capped and setup.power_capped else 0.0,
    }


def _host_point(setup: Setup, ps: PodState) -> dict[str, float]:
    """Per pod: cores, storage, memory and network, and how close each row is to binding."""
    d, c, x, g = ps.demand, ps.caps, ps.x, ps.g
    n = setup.gpus_per_node
    use = _usage(ps)
    miss = 1.0 - d.hit
    short = d.shortfall(c["host_mem"])
    s_w, s_t = short * d.touch, short * d.touch_thread
    per_sample = d.read_cpu * miss + d.collate / c["thread"] + d.launch / c["launch"] + (s_w + s_t) * d.reclaim_cpu
    cores = n * ((x - g) * d.dec_cpu + x * per_sample)
    fault_share = min(1.0, max(x * s_t / PAGE * d.fault_s, (x - g) * s_w / PAGE * d.fault_s / c["workers"]))
    storage_bps = n * x * miss * d.read_bytes
    io_rho = max(use["storage"], use["requests"], use["nic"] if d.remote else 0.0)
    return {
        "cores": cores + 0.3,
        "cpu_rho": use["cores"],
        "thread_rho": use["thread"],
        "workers_rho": use["workers"],
        "io_rho": io_rho if setup.storage.d_state else 0.05 * io_rho,
        "storage_bps": storage_bps,
        "storage_reqs": n * x * miss * d.read_reqs,
        "swapin_ps": n * x * (s_w + s_t) / PAGE,
        "mmap_faults": storage_bps / PAGE if setup.mmap_reader else 0.0,
        "mem_stall": min(0.98, fault_share * 1.2 + (0.02 if short > 0 else 0.0)),
        "reclaim_cores": n * x * (s_w + s_t) * d.reclaim_cpu,
        "net_coll": n * x * d.ar_net * (d.net_link == "nic"),
        "rdma_coll": n * x * d.ar_net * (d.net_link == "rdma"),
        "remote_bps": storage_bps if d.remote else 0.0,
        "short": short,
    }


def _pause_point(setup: Setup) -> dict[str, float]:
    """A checkpoint: the GPUs wait while the weights are copied out and written."""
    gpu, n = setup.gpu, setup.gpus_per_node
    out = dict.fromkeys(
        [
            "sm",
            "occ",
            "tensor",
            "fp32",
            "fp16",
            "dram",
            "nvlink",
            "slowdown",
            "cpu_rho",
            "thread_rho",
            "workers_rho",
            "io_rho",
            "storage_bps",
            "storage_reqs",
            "swapin_ps",
            "mmap_faults",
            "mem_stall",
            "reclaim_cores",
            "net_coll",
            "rdma_coll",
            "remote_bps",
            "short",
        ],
        0.0,
    )
    out.update(
        busy=0.02,
        pcie_rx=1e6,
        pcie_tx=setup.model.params * 4 / 30.0,
        power=gpu.idle_w * 1.1,
        clock_factor=0.7,
        cores=1.0 * n,
    )
    out["remote_bps"] = 0.0
    out["ckpt_tx"] = setup.model.params * 12 / setup.nodes / 60.0 if setup.storage.remote else 0.0
    return out


def pod_timeline(
    setup: Setup, steady: Steady, looks: Looks, pod: int, grid: FloatArray, rng: np.random.Generator
) -> dict[str, FloatArray]:
    """The pod's rates on the fine grid (seconds from the window's start), with sample-to-sample noise."""
    keys: list[str] | None = None
    cols: dict[str, FloatArray] = {}
    nb = np.zeros(grid.size)
    for ph in steady.phases:
        mask = (grid >= ph.t0) & (grid < ph.t1) if ph is not steady.phases[-1] else (grid >= ph.t0)
        if not mask.any():
            continue
        point = _pause_point(setup) if not ph.pods else _pod_point(setup, ph.pods[pod], looks)
        point.setdefault("ckpt_tx", 0.0)
        if keys is None:
            keys = list(point)
            cols = {k: np.zeros(grid.size) for k in keys}
        for k in keys:
            cols[k][mask] = point[k]
        if _phase_has_neighbour(setup, ph, pod):
            nb[mask] = 1.0
    # Sample-to-sample wander: smooth multiplicative noise (loader hiccups, step-time spread).
    wander = np.exp(np.cumsum(rng.normal(0.0, looks.noise, size=grid.size)) * 0.3)
    wander /= np.convolve(wander, np.ones(12) / 12, mode="same")
    for k in ("busy", "sm", "occ", "tensor", "fp32", "fp16", "dram", "pcie_rx", "nvlink", "cores"):
        cols[k] = cols[k] * np.clip(wander * rng.normal(1.0, looks.noise / 2, grid.size), 0.7, 1.3)
    for k in ("storage_bps", "storage_reqs", "net_coll", "rdma_coll", "remote_bps", "swapin_ps", "mmap_faults"):
        cols[k] = cols[k] * np.clip(rng.normal(1.0, looks.noise, grid.size), 0.5, 1.5)
    for k in ("busy", "sm", "occ", "tensor", "fp32", "fp16", "dram"):
        cols[k] = np.clip(cols[k], 0.0, 1.0)
    cols["neighbour"] = nb
    return cols


def _phase_has_neighbour(setup: Setup, ph: Phase, pod: int) -> bool:
    if pod != 0:
        return False
    return 0.5 * (ph.t0 + ph.t1) >= setup.neighbour_from
