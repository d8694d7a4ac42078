"""Service demands of each station per training step, on the base grid: the operational-analysis view.

A customer is one step of one pod (each of its GPUs processes one micro-batch). For each station k
this module gives, at every base-grid time and for every pod:

- ``demand`` D_k: seconds of that resource one step needs (summed over its servers);
- ``servers`` m_k: how many servers the station has (cores, GPUs, links);
- ``parallel`` p_k: over how many servers one step spreads (a step uses all of a pod's GPUs at once,
  but only as many loader cores as it has ranks), so a lone step stays D_k / p_k there.

D_k / m_k is the demand per server that the operational laws rank stations by (label.py), and the
utilisation law gives U_k = X D_k / m_k once mva.py has the throughput X.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .cluster import Setup
from .dynamics import Timeline
from .hardware import FABRICS, FAULT_S, HBM_PRACTICAL, PAGE, PCIE_GBPS
from .workload import Workload

FloatArray = npt.NDArray[np.float64]

STATIONS = ("storage", "loader", "host_memory", "pcie", "launch", "gpu", "nvlink", "network")
GEMM_INTENSITY = 150.0  # FLOP per HBM byte of a large GEMM/convolution: far right of every ridge point
ELEMENTWISE_INTENSITY = 0.25  # FLOP per byte of an element-wise kernel


@dataclass(frozen=True)
class Demands:
    """Station demands and the per-step physics the exporters need, arrays of shape (pods, T).

    Attributes:
        demand, servers, parallel: shape (len(STATIONS), pods, T), see the module.
        f_c, b_c, f_m, b_m: per GPU and step, seconds the SMs (f) and HBM (b) need in
            compute-bound (c) and memory-bound (m) kernels, at the GPUs' mean clock.
        clock: mean clock factor of the pod's GPUs (spread and power cap); capped: share of them capped.
        h2d, p2p, netpcie, nvl: bytes per GPU and step: input copies, peer traffic over PCIe, fabric
            traffic crossing PCIe, NVLink traffic (each way).
        net: bytes per node and step over the fabric (each way).
        read: bytes a pod reads from storage per step; core_s: loader core-seconds per step (the
            host CPU station's demand adds the ranks' launch time to it).
        faults: major faults per step from memory pressure; ws_gb: host memory the pod wants;
            limit_gb: what it may hold (its limit, or what the node leaves it).
        cpu_caps: (threads, quota, free cores) of the host CPU station, shape (3, pods, T).
        hbm: demand on HBM per step (seconds), sm: demand on the SMs per step (seconds).
        comm_s: seconds of collectives per step (NCCL kernels resident on the GPU).
    """

    demand: FloatArray
    servers: FloatArray
    parallel: FloatArray
    f_c: FloatArray
    b_c: FloatArray
    f_m: FloatArray
    b_m: FloatArray
    clock: FloatArray
    capped: FloatArray
    h2d: FloatArray
    p2p: FloatArray
    netpcie: FloatArray
    nvl: FloatArray
    net: FloatArray
    read: FloatArray
    core_s: FloatArray
    faults: FloatArray
    ws_gb: FloatArray
    limit_gb: FloatArray
    cpu_caps: FloatArray
    hbm: FloatArray
    sm: FloatArray
    comm_s: FloatArray

    @property
    def per_server(self) -> FloatArray:
        """D_k / m_k: what the operational laws rank stations by."""
        out: FloatArray = self.demand / self.servers
        return out


def peak_flops(wl: Workload, su: Setup) -> float:
    """The tensor-core (or FP32) peak the workload's GEMMs run against, FLOP/s."""
    g = su.gpu
    if wl.precision in ("bf16", "fp16"):
        return g.tensor_tflops * 1e12
    if wl.precision == "tf32" and g.bf16:  # TF32 tensor cores exist exactly where BF16 does
        return g.tensor_tflops * 0.5e12
    return g.fp32_tflops * 1e12


def _gpu_work(wl: Workload, su: Setup, tl: Timeline) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """FLOPs and HBM bytes per GPU and step, compute-bound (c) and memory-bound (m) kernels, shape (T,)."""
    e = np.where(tl.eval, 1.0 / 3.0, 1.0) * tl.group("gpu")
    flops_c = wl.batch * wl.flops / wl.tp * e
    bytes_m = wl.batch * wl.mem_bytes / wl.tp * e + np.where(tl.eval, 0.0, wl.step_mem_bytes / wl.tp)
    return flops_c, flops_c / GEMM_INTENSITY, bytes_m * ELEMENTWISE_INTENSITY, bytes_m


def _gpu_times(
    wl: Workload, su: Setup, tl: Timeline, clock: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Seconds per step of SMs and HBM in each kernel class, for a clock factor of shape (pods, T)."""
    flops_c, bytes_c, flops_m, bytes_m = _gpu_work(wl, su, tl)
    bw = su.gpu.hbm_gbps * 1e9 * HBM_PRACTICAL
    f_c = flops_c / (peak_flops(wl, su) * wl.compute_eff * clock)
    f_m = flops_m / (su.gpu.fp32_tflops * 1e12 * 0.5 * clock)
    b_c = np.broadcast_to(bytes_c / bw, clock.shape)
    b_m = np.broadcast_to(bytes_m / bw, clock.shape)
    return f_c, b_c, f_m, b_m


def _kernel_time(f_c: FloatArray, b_c: FloatArray, f_m: FloatArray, b_m: FloatArray) -> FloatArray:
    # the roofline per kernel class: a kernel takes as long as its slower resource
    out: FloatArray = np.maximum(f_c, b_c) + np.maximum(f_m, b_m)
    return out


def power_fraction(f_c: FloatArray, b_c: FloatArray, f_m: FloatArray, b_m: FloatArray) -> FloatArray:
    """Share of (TDP - idle) a GPU draws while busy with this kernel mix (tensor work costs most)."""
    busy = np.maximum(_kernel_time(f_c, b_c, f_m, b_m), 1e-12)
    tensor, dram = f_c / busy, (b_c + b_m) / busy
    out: FloatArray = np.clip(0.25 + 0.55 * tensor + 0.3 * dram, 0.0, 1.0)
    return out


def _intra_bytes(wl: Workload, su: Setup, tl: Timeline) -> FloatArray:
    """Bytes each GPU exchanges with its node's other GPUs per step (each way), shape (T,)."""
    train = np.where(tl.eval, 0.0, 1.0)
    dp = max(su.gpus // wl.tp, 1)
    ring = 2.0 * (dp - 1) / dp * wl.grad_bytes / wl.tp * train
    tp = wl.batch * wl.tp_bytes * np.where(tl.eval, 1.0 / 3.0, 1.0)
    a2a = wl.batch * wl.a2a_bytes * (su.gpus - 1) / (su.gpus * su.pods) * np.where(tl.eval, 0.5, 1.0)
    out: FloatArray = (ring + tp + a2a) * tl.group("net")
    return out


def _net_bytes(wl: Workload, su: Setup, tl: Timeline) -> FloatArray:
    """Bytes each node sends (and receives) over the fabric per step, shape (T,)."""
    n = su.pods
    if n == 1:
        return np.zeros(tl.t.size)
    ring = 2.0 * (n - 1) / n * wl.grad_bytes * np.where(tl.eval, 0.0, 1.0)
    a2a = su.gpus * wl.batch * wl.a2a_bytes * (n - 1) / n * np.where(tl.eval, 0.5, 1.0)
    out: FloatArray = (ring + a2a) * tl.group("net")
    return out


def _loader(wl: Workload, su: Setup, tl: Timeline, read: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Loader core-seconds per step (T,) and the pod's CPU caps (threads, quota, free cores), shape (3, pods, T).

    The ranks' own threads (Python, kernel launches) run under the same quota and on the same cores
    as the loader workers: they count among the threads that can run at once.
    """
    tls = 1.0e-9 * read if su.storage.kind == "object" else 0.0  # HTTPS and parsing: ~1 core per GB/s
    core_s = (su.gpus * wl.batch * wl.decode_s + su.gpus * 0.002) * tl.group("cpu") + tls
    threads = np.full(tl.nb.shape, float(su.gpus * (su.workers + 1)))
    quota = np.full(tl.nb.shape, np.inf if su.cpu_limit is None else su.cpu_limit)
    free = np.maximum(su.node_cpus - su.nb_cpu * tl.nb - 1.0, 0.5)
    return core_s, np.stack([threads, quota, free])


def _storage(wl: Workload, su: Setup, tl: Timeline) -> tuple[FloatArray, FloatArray]:
    """Bytes read per pod step (T,) and the storage station's demand, shape (pods, T)."""
    samples = su.gpus * wl.batch * (1.0 - su.cache_hit)
    read = samples * wl.sample_bytes * tl.group("io")
    workers = su.gpus * su.workers
    nic = FABRICS[su.fabric][0] / 8.0 * su.nics * (1.0 - su.nb_net * tl.nb)
    if su.storage.kind == "object":
        gbps = np.minimum(su.storage_gbps * su.conns * workers, 0.8 * np.minimum(nic, 12.5))
        concurrency = workers * su.conns
    else:
        gbps = su.storage_gbps * (1.0 - su.nb_io * tl.nb)
        if su.storage.kind == "nfs":
            gbps = np.minimum(gbps, 0.8 * np.minimum(nic, 12.5))
        concurrency = workers * 2
    latency = samples * wl.requests * su.storage_latency_s / concurrency
    return read, read / (gbps * 1e9) + latency


def _memory(wl: Workload, su: Setup, tl: Timeline) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    """Major faults per step, their demand, working set wanted and limit (GB), all shape (pods, T)."""
    workers = su.gpus * su.workers
    batch_gb = wl.batch * (wl.sample_bytes + 2 * wl.h2d_bytes) / 1e9
    ws = su.gpus * wl.rank_gb + workers * (wl.worker_gb + su.prefetch * batch_gb) + wl.cache_gb
    ws_t = ws * (1.0 + 0.03 * np.linspace(0.0, 1.0, tl.t.size)) * tl.group("mem")  # workers' copy-on-write growth
    node_left = su.node_mem_gb - su.nb_mem_gb * (0.85 + 0.15 * tl.nb) - 4.0
    limit = np.minimum(np.inf if su.mem_limit_gb is None else su.mem_limit_gb, node_left)
    rho = ws_t / np.maximum(limit, 1.0)
    # uniform reuse over the working set leaves 1 - limit/ws of it out of an LRU; a skewed reuse keeps
    # its hot set resident and misses less (locality > 1)
    miss = np.maximum(0.0, 1.0 - 0.98 / rho) ** su.locality
    touch = su.gpus * wl.batch * (wl.sample_bytes + 3.0 * wl.h2d_bytes) * (2.0 if wl.cache_gb > 0 else 1.0)
    touch += su.gpus * 0.2e9  # each rank's own host tensors, pinned staging and Python heap per step
    faults = touch * miss / (PAGE * 4.0)  # swap and file readahead bring ~4 pages per fault
    fault_s = float(np.mean(FAULT_S[su.swap]))
    return faults, faults * fault_s, np.broadcast_to(ws_t, rho.shape).copy(), np.broadcast_to(limit, rho.shape), rho


def _caps(su: Setup, f: tuple[FloatArray, ...], bound: FloatArray) -> FloatArray:
    """Per-GPU clock factor under the power cap, shape (pods, gpus, T); ``bound`` is U_gpu's upper bound."""
    phi = power_fraction(*f)[:, None, :]
    want = (su.gpu.tdp_w - su.gpu.idle_w) * phi * bound[:, None, :]
    room = max(su.power_cap_w - su.gpu.idle_w, 1.0)
    # dynamic power grows roughly with the square of the clock near the top of the DVFS curve
    factor = np.sqrt(np.clip(room / np.maximum(want, 1e-9), 0.0, 1.0))
    out: FloatArray = su.clocks[:, :, None] * factor
    return out


def _links(wl: Workload, su: Setup, tl: Timeline) -> dict[str, FloatArray]:
    """Bytes per step on each link and the seconds they take, shapes (T,) or (pods, T)."""
    intra, net = _intra_bytes(wl, su, tl), _net_bytes(wl, su, tl)
    has_nvlink = su.gpu.nvlink_gbps > 0
    zero = np.zeros(tl.t.size)
    nvl, p2p = (intra, zero) if has_nvlink else (zero, intra)
    netpcie = net / su.gpus  # GPUDirect RDMA, or NCCL's socket staging, crosses each GPU's link
    h2d = np.full(tl.t.size, wl.batch * wl.h2d_bytes)
    pcie = PCIE_GBPS[su.gpu.pcie_gen] * 1e9
    gbps, rdma = FABRICS[su.fabric]
    nic = su.nics * gbps / 8.0 * 1e9 * su.fabric_eff * (1.0 if rdma else 1.0 - su.nb_net * tl.nb)
    return {
        "nvl": nvl, "p2p": p2p, "netpcie": netpcie, "h2d": h2d, "net": net,
        "t_pcie": h2d / (pcie * su.h2d_eff) + (p2p + netpcie) / (pcie * 0.8),
        "t_p2p": (p2p + netpcie) / (pcie * 0.8),
        "t_nvl": nvl / (su.gpu.nvlink_gbps / 2.0 * 1e9 * 0.8) if has_nvlink else zero,
        "t_net": net / nic,
    }  # fmt: skip


def compute_demands(wl: Workload, su: Setup, tl: Timeline) -> Demands:
    """Every station's demand per step, for every pod at every base-grid time."""
    shape = tl.nb.shape
    read, s_storage = _storage(wl, su, tl)
    core_s, caps = _loader(wl, su, tl, read)
    m_cpu = caps.min(axis=0)
    faults, d_mem, ws, limit, _ = _memory(wl, su, tl)
    ln = _links(wl, su, tl)
    t_launch = wl.ops * np.where(tl.eval, 0.35, 1.0) * su.op_s
    host_s = core_s + su.gpus * t_launch  # all the pod's CPU work of a step: decoding and issuing kernels
    ones = np.ones(shape)
    nominal = _gpu_times(wl, su, tl, su.clocks.min(axis=1)[:, None] * ones)
    per_server = [s_storage, host_s / m_cpu, d_mem, ln["t_pcie"], t_launch, _kernel_time(*nominal), ln["t_nvl"]]
    per_server.append(ln["t_net"])
    stacked = np.stack([np.broadcast_to(s, shape) for s in per_server])
    bound = np.clip(stacked[5] / np.maximum(stacked.max(axis=(0, 1)), 1e-12), 0.0, 1.0)
    clocks = _caps(su, _gpu_times(wl, su, tl, su.clocks.mean(axis=1)[:, None] * ones), bound)
    slow = _gpu_times(wl, su, tl, clocks.min(axis=1))
    f_c, b_c, f_m, b_m = _gpu_times(wl, su, tl, clocks.mean(axis=1))
    stacked[5] = _kernel_time(*slow)
    g = float(su.gpus)
    gang = np.array([1.0, 0.0, 1.0, g, g, g, g, 1.0])[:, None, None] * ones  # servers of the lockstep stations
    servers = np.where(gang > 0, gang, m_cpu[None])
    parallel = np.where(gang > 0, gang, np.minimum(2 * g, m_cpu)[None])
    return Demands(
        demand=stacked * servers, servers=servers, parallel=parallel,
        f_c=f_c, b_c=b_c, f_m=f_m, b_m=b_m,
        clock=clocks.mean(axis=1), capped=(clocks < su.clocks[:, :, None] - 1e-9).mean(axis=1),
        h2d=ln["h2d"] * ones, p2p=ln["p2p"] * ones, netpcie=ln["netpcie"] * ones, nvl=ln["nvl"] * ones,
        net=ln["net"] * ones, read=read * ones, core_s=core_s * ones,
        faults=np.broadcast_to(faults, shape).copy(), ws_gb=ws, limit_gb=np.asarray(limit, dtype=np.float64),
        cpu_caps=caps, hbm=slow[1] + slow[3], sm=slow[0] + slow[2],
        comm_s=ln["t_nvl"] + ln["t_net"] + ln["t_p2p"],
    )  # fmt: skip
