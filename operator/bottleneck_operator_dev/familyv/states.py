"""What each pod's devices do in one state of the window, from the solved network.

The operational laws turn the solution into what exporters count: a station's utilisation is
throughput times demand (U = X D), its mean population is throughput times residence (Little's
law), and the load-dependent decode station's marginal distribution says how often a worker waits
for a core. Values here are per pod (GPU fields are means over its boards, host fields its totals)
or per node (its neighbour included).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bottleneck_operator_dev.familyv.hardware import GB
from bottleneck_operator_dev.familyv.model import (
    STORAGE_BW,
    STORAGE_LAT,
    SWAP,
    TRAINER,
    Rank,
    parts,
    solve_ranks,
    station_demands,
)
from bottleneck_operator_dev.familyv.mva import FloatArray, Solution
from bottleneck_operator_dev.familyv.plan import Plan, Pod

ONES = np.ones((1, 9))


@dataclass(frozen=True)
class Traits:
    """Per-job constants of how kernels and hosts behave, drawn once."""

    sm_compute: float  # SM activity while compute-bound kernels run
    sm_memory: float  # ... while HBM-bound kernels run (warps waiting on memory count as active)
    occ_compute: float
    occ_memory: float
    tensor: float  # tensor-pipe activity while matrix multiplies run
    dram_compute: float  # DRAM activity while compute-bound kernels run
    dram_memory: float  # ... while HBM-bound ones run (about 0.8 is the practical peak)
    copy_share: float  # MEM_COPY_UTIL per unit of kernel time
    nvml_period: float  # GPU_UTIL's sample period, seconds
    main_cpu: float  # cores the trainer's main process uses while it trains
    page_s: float  # seconds of swap service per 4 KiB page
    mmap: bool  # the dataset is memory-mapped: its reads are major faults
    node_mem: float  # node memory, bytes
    swap_on: bool  # the node has swap


def draw_traits(rng: np.random.Generator, plan: Plan) -> Traits:
    """The job's kernel and host constants."""
    amp = plan.precision in ("amp", "bf16")
    tf32_capable = plan.gpu.model_name not in ("Tesla V100-SXM2-32GB", "Tesla T4")
    tensor = float(rng.uniform(0.45, 0.8)) if amp else float(rng.uniform(0.2, 0.45)) if tf32_capable else 0.0
    return Traits(
        sm_compute=float(rng.uniform(0.85, 0.98)),
        sm_memory=float(rng.uniform(0.75, 0.95)),
        occ_compute=float(rng.uniform(0.2, 0.45)),
        occ_memory=float(rng.uniform(0.4, 0.7)),
        tensor=tensor,
        dram_compute=float(rng.uniform(0.1, 0.35)),
        dram_memory=float(rng.uniform(0.7, 0.85)),
        copy_share=float(rng.uniform(0.3, 0.6)),
        nvml_period=float(rng.uniform(1 / 6, 0.5)),
        main_cpu=float(rng.uniform(0.7, 1.0)),
        page_s=float(rng.uniform(10e-6, 40e-6)),
        mmap=plan.storage.local and bool(rng.random() < 0.3),
        node_mem=plan.cores * float(rng.choice([4.0, 8.0, 16.0])) * GB,
        swap_on=plan.swap_s > 0 or bool(rng.random() < 0.2),
    )


def _neighbour(pod: Pod, phase: int, plan: Plan) -> dict[str, float]:
    """What the co-located tenant adds to the node's signals."""
    kind = pod.neighbour if pod.active[phase] else "none"
    lv, c = pod.level, plan.cores
    out = {"cpu": 0.0, "sys": 0.0, "disk": 0.0, "iowait_tasks": 0.0, "net": 0.0, "ib": 0.0, "mem": 0.0}
    out |= {"majfault": 0.0, "psi_cpu": 0.0, "psi_io": 0.0, "psi_mem": 0.0}
    if kind == "quiet":
        out |= {"cpu": 0.05 * c, "mem": 0.05}
    elif kind == "cpu":
        out |= {"cpu": 0.9 * lv * c, "sys": 0.03 * c, "psi_cpu": 0.5 * lv, "mem": 0.1}
    elif kind == "disk":
        out |= {"cpu": 2.0, "sys": 1.0, "disk": lv * 0.8 * plan.storage.bandwidth, "iowait_tasks": 8 * lv}
        out |= {"psi_io": 0.6 * lv, "mem": 0.1}
    elif kind == "net":
        nic = plan.nic.gbits / 8 * GB
        out |= {"cpu": 3.0, "sys": 1.5, "net": 0.5 * lv * nic, "ib": 0.3 * lv * nic if plan.nic.rdma else 0.0}
        out |= {"mem": 0.1}
    elif kind == "mem":
        out |= {"cpu": 2.0, "sys": 1.0 + 2.0 * lv, "mem": 0.5 + 0.4 * lv, "majfault": 20000.0 * lv}
        out |= {"psi_mem": 0.5 * lv}
    return out


def _combine(a: float, b: float) -> float:
    """Share of time either of two independent sources stalls."""
    return 1.0 - (1.0 - min(a, 1.0)) * (1.0 - min(b, 1.0))


@dataclass(frozen=True)
class _Ctx:
    """One pod in one state: the solved network and what the state adds."""

    plan: Plan
    t: Traits
    r: Rank
    pod: Pod
    nb: dict[str, float]
    sol: Solution
    i: int  # the pod's row in the solution
    x: float  # the job's steps per second (its slowest rank's)
    d: FloatArray  # station demands
    compute: float
    hbm: float
    launch: float
    comm: float
    exposed: float
    wait: float  # seconds per step this rank's NCCL kernels spin waiting for the slowest rank
    mode: str


def pod_states(plan: Plan, traits: Traits, phase: int, mode: str) -> list[dict[str, float]]:
    """Every pod's quantities in one state ("train", "eval" or "checkpoint"), in contract units."""
    # A checkpoint stops the loop: the ranks are solved as in training and then held at zero throughput.
    ranks = [plan.rank(i, phase, "eval" if mode == "eval" else "train") for i in range(plan.n_pods)]
    sol = solve_ranks(ranks, ONES)
    x = float(sol.throughput.min()) if mode != "checkpoint" else 0.0
    out = []
    for i, (r, pod) in enumerate(zip(ranks, plan.pods, strict=True)):
        p = parts(r, ONES)
        own = float(sol.throughput[i])
        wait = max(0.0, 1.0 / x - 1.0 / own) if x > 0 and plan.n_pods > 1 else 0.0
        c = _Ctx(
            plan, traits, r, pod, _neighbour(pod, phase, plan), sol, i, x, station_demands(r, ONES, p)[0],
            float(p.compute[0]), float(p.hbm[0]), float(p.launch[0]), float(p.comm[0]), float(p.exposed[0]),
            wait, mode,
        )  # fmt: skip
        q = _gpu(c)
        q |= _host(c)
        q |= _node(c, q)
        out.append(q)
    return out


def _gpu(c: _Ctx) -> dict[str, float]:
    """DCGM's view, mean over the pod's boards: busy fractions are X times seconds per step."""
    t, x, plan, r = c.t, c.x, c.plan, c.r
    compute, hbm, wait = c.compute, c.hbm, c.wait
    fill = 0.5 if c.launch > compute + hbm else 1.0  # launch-bound: small grids leave SMs idle
    q: dict[str, float] = {}
    span = max(compute + hbm, c.launch) + c.exposed + wait
    # GPU_UTIL counts a sample period as busy if any kernel ran in it: it overstates short gaps
    q["gpu_util"] = min(1.0, x * (span + t.nvml_period)) if x > 0 else 0.0
    q["gr_engine_active"] = min(1.0, x * (compute + hbm + c.exposed + wait))
    q["sm_active"] = min(1.0, x * (fill * (compute * t.sm_compute + hbm * t.sm_memory) + 0.1 * c.comm + 0.05 * wait))
    q["sm_occupancy"] = min(1.0, x * fill * (compute * t.occ_compute + hbm * t.occ_memory))
    q["tensor_active"] = min(1.0, x * compute * t.tensor)
    q["dram_active"] = min(1.0, x * (compute * t.dram_compute + hbm * t.dram_memory + 0.15 * c.comm))
    q["mem_copy_util"] = min(1.0, x * (compute + hbm) * t.copy_share + x * hbm * 0.3)
    amp = plan.precision in ("amp", "bf16")
    q["fp16_active"] = min(1.0, x * (0.03 * compute + 0.1 * hbm)) if amp else 0.0
    plain_fp32 = not amp and t.tensor == 0.0  # FP32 on parts without TF32 runs on the FP32 pipes
    q["fp32_active"] = min(1.0, x * compute * 0.6) if plain_fp32 else min(1.0, x * (0.05 * compute + 0.15 * hbm))
    g, n, grad = plan.gpus, plan.n_pods, plan.grad_bytes
    intra = 2.0 * (g - 1) / g * grad if g > 1 and c.mode == "train" else 0.0
    inter = 2.0 * (n - 1) / n * grad / g if n > 1 and c.mode == "train" else 0.0
    both = (x * inter if plan.gdr else 0.0) + (x * intra if r.intra_over_pcie else 0.0)  # symmetric traffic
    q["pcie_rx_bps"] = x * r.h2d_bytes + both
    q["pcie_tx_bps"] = x * 0.01 * r.h2d_bytes + both
    if c.mode == "checkpoint":
        q["pcie_tx_bps"] = 12.0 * grad / 4.0 / g / 60.0  # weights and optimiser state, over a minute
    nvl = 0.0 if r.intra_over_pcie else x * intra
    q["nvlink_tx_bps"] = q["nvlink_rx_bps"] = nvl
    q["nvlink_total_bps"] = 2.0 * nvl
    idle, limit = plan.gpu.idle, float(c.pod.limit.mean())
    active = min(1.0, x * (compute + 0.8 * hbm + 0.3 * (c.comm + wait)))
    q["power_w"] = min(limit, idle + (float(c.pod.busy_power.mean()) - idle) * active)
    busy_clock = float((c.pod.clock * plan.gpu.max_clock).mean())
    q["sm_clock_mhz"] = busy_clock if active > 0.02 else min(busy_clock, 0.35 * plan.gpu.max_clock)
    q["power_limit_w"] = limit
    q["clock_slowdown_frac"] = float(c.pod.capped.mean()) if active > 0.3 else 0.0
    return q


def _host(c: _Ctx) -> dict[str, float]:
    """The pod's cgroup (cAdvisor and the collector): its ranks' loaders and trainers together."""
    t, x, plan, r, sol, i = c.t, c.x, c.plan, c.r, c.sol, c.i
    g = plan.gpus
    q: dict[str, float] = {}
    dec_cores = x * r.decode_cs  # utilisation law: busy cores = X * core-seconds per batch
    main = t.main_cpu * (0.15 + 0.85 * min(1.0, x * c.d[TRAINER])) if c.mode != "checkpoint" else 1.0
    object_cpu = 0.5 * x * r.read_bytes / GB if plan.storage.kind == "object" else 0.0  # HTTP and TLS
    cpu = g * (dec_cores + main + object_cpu + 0.3 * x * r.swap_s)
    quota = plan.pod_quota
    q["cpu_cores"] = min(cpu, 0.995 * quota)
    use = q["cpu_cores"] / quota
    q["cpu_throttled_frac"] = float(np.clip((use - 0.5) / 0.45, 0.0, 1.0) ** 1.5 * 0.97) if use > 0 else math.nan
    # A worker waits for a core when more workers are busy than the quota and the neighbours leave
    # cores; batches queued behind a busy pool (too few workers) wait for no CPU at all.
    marg = sol.marginal[i, 0]
    busy_workers = np.minimum(np.arange(marg.size), r.workers)
    psi_cpu = float(marg[busy_workers > max(0.25, min(r.cpu_quota, r.cpu_avail))].sum()) if x > 0 else 0.0
    if math.isfinite(quota):
        psi_cpu = _combine(psi_cpu, 0.8 * q["cpu_throttled_frac"])
    blocking = plan.storage.blocking
    q_lat = float(sol.queue[i, STORAGE_LAT])
    io_some = _combine(min(1.0, x * c.d[STORAGE_BW]), 1.0 - math.exp(-q_lat)) if blocking and x > 0 else 0.0
    u_swap = min(1.0, x * c.d[SWAP])
    dec_share = min(1.0, dec_cores / max(r.workers, 1))
    q |= {"sc_psi_cpu_some": psi_cpu, "sc_psi_io_some": io_some, "sc_psi_io_full": io_some * (1.0 - dec_share) * 0.8}
    q |= {"sc_psi_mem_some": min(1.0, 1.1 * u_swap), "sc_psi_mem_full": 0.55 * u_swap, "_u_swap": u_swap}
    read_bps = g * x * r.read_bytes
    pages = g * x * r.swap_s / t.page_s
    q["sc_swapin_ps"] = pages
    q["sc_majfault_ps"] = pages + (read_bps / 4096.0 / 8.0 if t.mmap else 0.0)  # readahead: 8 pages a fault
    q["fs_read_bps"] = read_bps if plan.storage.local else 0.0
    q["sc_io_read_bps"] = q["fs_read_bps"] + pages * 4096.0
    q["sc_cpu_cores"] = q["cpu_cores"] + 0.02  # the collector itself
    # without a limit nr_throttled stays zero
    q["sc_throttled_frac"] = q["cpu_throttled_frac"] if math.isfinite(quota) else 0.0
    q["sc_procs_running"] = g * (min(dec_cores, r.workers) + main)
    q_io = float(sol.queue[i, STORAGE_BW]) + q_lat if blocking and x > 0 else 0.0
    q["sc_procs_iowait"] = g * (q_io + float(sol.queue[i, SWAP]))
    q["sc_procs_busy"] = g * ((r.workers if dec_share >= 0.9 else 0) + (1 if main >= 0.9 else 0))
    need, limit = plan.mem_need, plan.mem_limit
    q["mem_working_set_bytes"] = min(need, 0.98 * limit) if math.isfinite(limit) else 0.7 * need
    q["mem_limit_bytes"] = limit if math.isfinite(limit) else math.nan
    q["_read_bps"], q["_pages"], q["_q_io"] = read_bps, pages, q_io
    return q


def _node(c: _Ctx, q: dict[str, float]) -> dict[str, float]:
    """node-exporter's view: this pod plus whatever its neighbour does."""
    t, x, plan, r, nb = c.t, c.x, c.plan, c.r, c.nb
    g, n = plan.gpus, plan.n_pods
    out: dict[str, float] = {}
    cores = float(plan.cores)
    busy = min(1.0, (q["cpu_cores"] + nb["cpu"] + 0.3) / cores)
    out |= {"node_cpus": cores, "node_cpu_busy_frac": busy}
    out["node_cpu_iowait_frac"] = min(1.0 - busy, (g * q["_q_io"] + nb["iowait_tasks"]) / cores)
    out["node_cpu_system_frac"] = min(busy, (0.08 * q["cpu_cores"] + g * 0.3 * x * r.swap_s + nb["sys"]) / cores)
    local, swap_bytes = q["fs_read_bps"], q["_pages"] * 4096.0
    out["node_disk_read_bps"] = local + swap_bytes + nb["disk"]
    out["node_disk_reads_ps"] = (local + swap_bytes) / min(r.req_bytes, 128e3) + nb["disk"] / 64e3
    # the device's busy share follows what it serves, not the job's throttled share of it (io.max)
    dev = min(1.0, 1.2 * (local + nb["disk"]) / plan.storage.bandwidth) if plan.storage.local else 0.02
    out["node_disk_busy_frac"] = max(dev, q["_u_swap"])
    used = q["mem_working_set_bytes"] * 1.1 + nb["mem"] * t.node_mem
    out["node_mem_avail_frac"] = float(np.clip(1.0 - used / t.node_mem - 0.05, 0.01, 1.0))
    swap = (0.2 + 0.5 * q["_u_swap"] if plan.swap_s > 0 else 0.0) + (0.4 * nb["psi_mem"] if nb["mem"] > 0.3 else 0.0)
    out["node_swap_used_frac"] = min(1.0, swap) if t.swap_on else 0.0
    out["node_majfault_ps"] = q["sc_majfault_ps"] + nb["majfault"]
    remote = q["_read_bps"] if not plan.storage.local else 0.0
    per_node = 2.0 * (n - 1) / n * plan.grad_bytes * x if n > 1 and c.mode == "train" else 0.0
    tcp, rdma = (0.0, per_node) if plan.nic.rdma else (per_node, 0.0)  # RDMA bypasses netdev counters
    ckpt = 12.0 * plan.grad_bytes / 4.0 / 60.0 if c.mode == "checkpoint" and not plan.storage.local else 0.0
    out["node_net_rx_bps"] = remote * 1.03 + tcp + nb["net"] + 2e5  # headers on the payload; a base of chatter
    out["node_net_tx_bps"] = 0.02 * remote + tcp + nb["net"] + 2e5 + ckpt
    out["ib_rx_bps"] = out["ib_tx_bps"] = rdma + nb["ib"]
    # throttled tasks stall in their own cgroup; waits for cores the neighbour holds stall the node
    node_share = 0.3 if r.cpu_quota < r.cpu_avail else 1.0
    out["node_psi_cpu_some"] = _combine(node_share * q["sc_psi_cpu_some"], nb["psi_cpu"])
    out["node_psi_io_some"] = _combine(q["sc_psi_io_some"], nb["psi_io"])
    out["node_psi_io_full"] = _combine(q["sc_psi_io_full"], 0.4 * nb["psi_io"])
    out["node_psi_mem_some"] = _combine(q["sc_psi_mem_some"], nb["psi_mem"])
    out["node_psi_mem_full"] = _combine(q["sc_psi_mem_full"], 0.5 * nb["psi_mem"])
    return out
