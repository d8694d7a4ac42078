"""What each exporter would read, per pod and regime, before noise and sampling.

Each reading follows from the stage times and the hardware: a DCGM time share is the share of the
step its activity fills, a byte rate is the bytes a step moves over the step, a PSI share is the
share of wall time some task of the cgroup waited, and node-level readings add the neighbours'.
Counter-backed signals hold their rate (bytes/s, faults/s, a PSI share, a CFS throttled share).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyaa.causal import (
    BURST,
    CHECKPOINT,
    COMM,
    COMPUTE,
    DECODE,
    EVAL,
    H2D,
    HBM,
    HOST_MEM,
    LAUNCH,
    READ,
    REGIMES,
    Environment,
    Stages,
    job_steps,
    pod_steps,
)
from bottleneck_operator_dev.familyaa.hardware import GB, Cluster
from bottleneck_operator_dev.familyaa.workload import Workload

FloatArray = npt.NDArray[np.float64]
Table = dict[str, FloatArray]


def _clip(x: FloatArray | float) -> FloatArray:
    return np.clip(np.asarray(x, dtype=np.float64), 0.0, 1.0)


@dataclass(frozen=True)
class Scene:
    """The Job-wide facts every reading draws on (the draws are the exporters' and neighbours')."""

    cluster: Cluster
    workload: Workload
    env: Environment
    stages: Stages
    step: FloatArray  # (R,) the Job's step
    own: FloatArray  # (R, P) each pod's own step
    run: FloatArray  # (R,) 1 where steps run, 0 while a checkpoint is written
    draws: dict[str, float]

    @property
    def idle(self) -> FloatArray:
        out: FloatArray = 1.0 - self.run
        return out


def scene(rng: np.random.Generator, cluster: Cluster, workload: Workload, env: Environment, stages: Stages) -> Scene:
    """The Job's steps and the draws of what no stage time fixes (assumed ranges, docs/familyaa.md)."""
    step = job_steps(stages.times, stages.overlap, stages.sync_loader)
    run = np.ones(len(REGIMES))
    run[CHECKPOINT] = 0.0
    half = workload.precision in ("bf16", "fp16")
    tensor = float(rng.uniform(0.45, 0.75)) if half else float(rng.uniform(0.3, 0.5))
    if workload.precision == "fp32" or (workload.precision == "tf32" and not cluster.gpu.tf32_tflops):
        tensor = 0.0
    shared = cluster.shared
    draws = {
        "tensor": tensor,
        "dram_in_compute": float(rng.uniform(0.1, 0.3)),
        "occ_c": float(rng.uniform(0.25, 0.5)),
        "occ_m": float(rng.uniform(0.5, 0.8)),
        "fp32_c": float(rng.uniform(0.5, 0.7)) if tensor == 0.0 else 0.03,
        "copy_vs_dram": float(rng.uniform(0.9, 1.3)),
        "fb": float(rng.uniform(0.85, 0.98) if rng.random() < 0.8 else rng.uniform(0.3, 0.8)),
        "quiet_mem": cluster.node_mem_gb * float(rng.uniform(0.05, 0.3)) if shared else 4.0,
        "quiet_disk": float(rng.uniform(1e6, 5e7)) if shared else float(rng.uniform(0, 2e6)),
        "burst_disk": float(rng.uniform(2e8, 1.5e9)) if shared else 0.0,
        "burst_io": float(rng.uniform(0.1, 0.5)) if shared else 0.0,
        "quiet_net": float(rng.uniform(1e6, 5e7)) if shared else float(rng.uniform(1e5, 2e6)),
        "net_tx_share": float(rng.uniform(0.3, 1.0)),
        "req_size": float(rng.choice([64e3, 128e3, 256e3, 512e3])),
        "readahead": float(rng.choice([16e3, 32e3, 128e3])),
        "ckpt_bps": float(rng.uniform(0.2, 2.0)) * GB,
        "object_cpu": 1.0 / float(rng.uniform(0.4, 1.2)) / GB,  # cores per B/s of HTTP reads
        "io_full": float(rng.uniform(0.3, 0.6)),
        "tight_faults": float(rng.uniform(1e3, 3e4)),
        "grad": workload.params * (2.0 if half else 4.0),
    }
    return Scene(
        cluster,
        workload,
        env,
        stages,
        np.where(step > 0, step, 1.0),
        pod_steps(stages.times, stages.overlap, stages.sync_loader),
        run,
        draws,
    )


def _collective_bytes(sc: Scene) -> tuple[float, float, FloatArray]:
    """Ring all-reduce bytes per GPU inside the node and per node between nodes, and when they flow."""
    per, pods, grad = sc.cluster.gpus_per_pod, sc.cluster.pods, sc.draws["grad"]
    intra = 2.0 * (per - 1) / per * grad if per > 1 else 0.0
    inter = 2.0 * (pods - 1) / pods * grad if pods > 1 else 0.0
    on: FloatArray = (sc.stages.times[:, 0, COMM] > 0).astype(np.float64) * sc.run  # none during evaluation
    return intra, inter, on


def gpu_readings(sc: Scene, p: int) -> Table:
    """dcgm-exporter's fields: shares of the step each kind of GPU activity fills."""
    t, d, w, gpu = sc.stages.times[:, p, :], sc.draws, sc.workload, sc.cluster.gpu
    kern = t[:, COMPUTE] + t[:, HBM]
    exposed = np.maximum(t[:, COMM] - sc.stages.overlap * (2.0 / 3.0) * kern, 0.0)
    wait = sc.step - sc.own[:, p] if sc.cluster.pods > 1 else np.zeros(len(REGIMES))
    comm = exposed + wait  # NCCL kernels spin while the slowest peer catches up
    s: Table = {}
    s["gpu_util"] = _clip(1.05 * (np.maximum(t[:, LAUNCH], kern) + comm) / sc.step) * sc.run + 0.02 * sc.idle
    s["gr_engine_active"] = _clip((kern + 0.9 * comm) / sc.step) * sc.run + 0.01 * sc.idle
    s["sm_active"] = _clip((w.fill * (t[:, COMPUTE] + 0.9 * t[:, HBM]) + 0.1 * comm) / sc.step) * sc.run
    s["sm_occupancy"] = _clip(w.fill * (d["occ_c"] * t[:, COMPUTE] + d["occ_m"] * t[:, HBM]) / sc.step) * sc.run
    s["tensor_active"] = _clip(d["tensor"] * t[:, COMPUTE] / sc.step) * sc.run
    s["fp32_active"] = _clip((d["fp32_c"] * t[:, COMPUTE] + 0.12 * t[:, HBM]) / sc.step) * sc.run
    half = float(w.precision in ("bf16", "fp16"))
    s["fp16_active"] = _clip((0.05 * t[:, COMPUTE] + 0.1 * t[:, HBM]) / sc.step) * sc.run * half
    dram = _clip((0.78 * t[:, HBM] + d["dram_in_compute"] * t[:, COMPUTE] + 0.05 * comm) / sc.step) * sc.run
    s["dram_active"] = dram
    s["mem_copy_util"] = _clip(dram * d["copy_vs_dram"])
    intra, inter, on = _collective_bytes(sc)
    per = sc.cluster.gpus_per_pod
    rdma = inter / per if sc.cluster.fabric == "rdma" else 0.0  # GPUDirect RDMA crosses each board's PCIe
    p2p = intra if not gpu.nvlink_gbs else 0.0
    coll = (rdma + p2p) * on / sc.step
    copy = w.batch * w.device_bytes / sc.step * sc.run
    s["pcie_rx_bps"] = copy + coll
    s["pcie_tx_bps"] = 0.02 * copy + coll
    nv = intra * on / sc.step if gpu.nvlink_gbs else np.zeros(len(REGIMES))
    s["nvlink_tx_bps"], s["nvlink_rx_bps"], s["nvlink_total_bps"] = nv, nv, 2.0 * nv
    clock = np.minimum(sc.stages.clock[:, p], 1.0)
    act = 0.15 * s["gr_engine_active"] + 0.6 * s["sm_active"] + 0.25 * dram / 0.8
    draw = gpu.idle_w + (gpu.tdp_w - gpu.idle_w) * act * clock**2.5 * 1.05
    s["power_w"] = np.minimum(draw, sc.cluster.power_cap_w * 0.995)
    s["sm_clock_mhz"] = gpu.max_clock_mhz * clock
    s["power_limit_w"] = np.full(len(REGIMES), sc.cluster.power_cap_w)
    s["clock_slowdown_frac"] = (sc.stages.clock[:, p] < sc.cluster.board_spread[p] - 1e-6).astype(np.float64)
    s["fb_used_frac"] = np.full(len(REGIMES), d["fb"])
    s["xid_code"] = np.zeros(len(REGIMES))
    return s


def cpu_readings(sc: Scene, p: int) -> Table:
    """cAdvisor's and the collector's CPU, CFS throttling and CPU pressure, and the node's CPU modes."""
    t, c, w, n_r = sc.stages.times[:, p, :], sc.cluster, sc.workload, len(REGIMES)
    per = c.gpus_per_pod
    aug = np.where(np.arange(n_r) == EVAL, 0.5, 1.0)  # evaluation skips augmentation
    decode = np.minimum(per * w.batch * w.cpu_s * aug / sc.step, t[:, DECODE] / sc.step * sc.stages.decode_cores)
    main = per * _clip((t[:, LAUNCH] + 0.05 * sc.step + (0 if c.pinned else 1) * t[:, H2D]) / sc.step)
    read_bps = per * w.batch * w.read_bytes / sc.step * sc.run
    http = read_bps * sc.draws["object_cpu"] if c.storage == "object" else np.zeros(n_r)
    stall_sys = 1.5 * t[:, HOST_MEM] / sc.step
    pod = (decode + main + http + stall_sys) * sc.run + 1.0 * sc.idle  # one core serialises a checkpoint
    if c.cpu_limit > 0:
        pod = np.minimum(pod, c.cpu_limit)
    neigh = np.full(n_r, sc.env.quiet_cpu)
    neigh[BURST] = min(sc.env.quiet_cpu + sc.env.burst_cpu, 0.95)
    avail = c.cpu_limit if c.cpu_limit > 0 else c.node_cpus * (1.0 - neigh)
    use = pod / np.maximum(avail, 0.25)
    throttled = _clip(0.95 * _clip((use - 0.6) / 0.4) ** 1.5 + 0.01) if c.cpu_limit > 0 else np.zeros(n_r)
    runnable = per * max(w.workers, 1) * _clip(t[:, DECODE] / sc.step) + main
    psi = _clip(0.03 + 1.2 * np.maximum(runnable / np.maximum(avail, 0.25) - 0.8, 0.0) + 0.6 * throttled)
    busy = _clip((pod + neigh * c.node_cpus) / c.node_cpus + 0.01)
    return {
        "cpu_cores": pod,
        "sc_cpu_cores": pod + 0.02,  # the collector itself, in the pod's cgroup
        "cpu_throttled_frac": throttled,
        "sc_throttled_frac": throttled,
        "sc_psi_cpu_some": psi,
        "node_cpus": np.full(n_r, float(c.node_cpus)),
        "cpu_limit_cores": np.full(n_r, c.cpu_limit),  # emitted only where a limit is set (KSM family)
        "node_cpu_busy_frac": busy,
        "node_cpu_system_frac": _clip(0.12 * pod / c.node_cpus + 0.1 * neigh + 0.5 * stall_sys / c.node_cpus),
        "node_psi_cpu_some": _clip(0.02 + 2.0 * np.maximum(busy - 0.85, 0.0) + 0.3 * psi * pod / c.node_cpus),
        "sc_procs_running": runnable * sc.run,
        "sc_procs_busy": (
            per * max(w.workers, 1) * (t[:, DECODE] / sc.step > 0.9) + per * (t[:, LAUNCH] / sc.step > 0.9)
        ).astype(np.float64)
        * sc.run,
    }


def io_readings(sc: Scene, p: int, busy: FloatArray) -> Table:
    """Block reads (pod and node), IO pressure, D-state readers and iowait; object readers wait in S."""
    t, c, w, d, n_r = sc.stages.times[:, p, :], sc.cluster, sc.workload, sc.draws, len(REGIMES)
    local = c.storage in ("nvme", "sata")
    waited = float(c.storage in ("nvme", "sata", "nfs"))
    read_bps = c.gpus_per_pod * w.batch * w.read_bytes / sc.step * sc.run
    share = _clip(t[:, READ] / sc.step) * sc.run
    block = read_bps if local else np.zeros(n_r)
    node = np.full(n_r, d["quiet_disk"])
    node[BURST] += d["burst_disk"]
    some = _clip(0.95 * share) * waited + 0.02 * sc.idle
    burst = np.where(np.arange(n_r) == BURST, d["burst_io"], 0.0)
    procs = c.gpus_per_pod * max(w.workers, 1) * share * waited
    return {
        "fs_read_bps": block,
        "sc_io_read_bps": block,
        "node_disk_read_bps": block + node,
        "node_disk_reads_ps": (block + node) / d["req_size"],
        "node_disk_busy_frac": _clip((block + node) / ((c.storage_gbs if local else 3.5) * GB) * 1.1),
        "sc_psi_io_some": some,
        "sc_psi_io_full": some * d["io_full"],
        "node_psi_io_some": _clip(some * 0.9 + burst),
        "node_psi_io_full": _clip(some * d["io_full"] * 0.8 + 0.4 * burst),
        "sc_procs_iowait": procs,
        "node_cpu_iowait_frac": _clip(np.minimum(1.0 - busy, procs / c.node_cpus)),
    }


def memory_readings(sc: Scene, p: int) -> Table:
    """Swap-in and refaults of the pod, its working set and limit; the neighbours' memory on the node."""
    t, c, w, d, n_r = sc.stages.times[:, p, :], sc.cluster, sc.workload, sc.draws, len(REGIMES)
    stall = t[:, HOST_MEM] * sc.run
    faults = stall * 4.0 / (30e-6 if c.swap else 50e-6) / sc.step  # inverse of causal.host_mem_stall
    read_bps = c.gpus_per_pod * w.batch * w.read_bytes / sc.step * sc.run
    mmap = read_bps / d["readahead"] if w.mmap else np.zeros(n_r)  # a mapped dataset reads by faulting
    some = _clip(1.3 * stall / sc.step)
    room = c.mem_limit_gb if c.mem_limit_gb > 0 else c.node_mem_gb
    ws = min(w.ws_gb, room * 0.985) * GB
    nmem = np.full(n_r, d["quiet_mem"])
    nmem[BURST] += sc.env.burst_mem_gb
    used = (ws / GB + nmem) / c.node_mem_gb
    tight = _clip((used - 0.85) / 0.15)
    return {
        "sc_swapin_ps": faults if c.swap else np.zeros(n_r),
        "sc_majfault_ps": faults + mmap,
        "sc_psi_mem_some": some,
        "sc_psi_mem_full": some * 0.6,
        "sc_oom_kills": np.zeros(n_r),
        "mem_working_set_bytes": np.full(n_r, ws),
        "mem_limit_bytes": np.full(n_r, c.mem_limit_gb * GB if c.mem_limit_gb > 0 else np.nan),
        "node_mem_avail_frac": _clip(1.0 - used - 0.03),
        "node_swap_used_frac": _clip(0.02 + 0.8 * tight + 0.3 * some) if c.swap else np.zeros(n_r),
        "node_majfault_ps": faults + mmap + tight * d["tight_faults"],
        "node_psi_mem_some": _clip(some * 0.9 + 0.6 * tight),
        "node_psi_mem_full": _clip(some * 0.5 + 0.3 * tight),
    }


def network_readings(sc: Scene) -> Table:
    """The pod's own TCP bytes; the node adds NFS reads, neighbours and checkpoint writes; RDMA on IB only."""
    c, w, d, n_r = sc.cluster, sc.workload, sc.draws, len(REGIMES)
    _, inter, on = _collective_bytes(sc)
    read_bps = c.gpus_per_pod * w.batch * w.read_bytes / sc.step * sc.run
    tcp = inter * on / sc.step if c.fabric == "ethernet" else np.zeros(n_r)
    rdma = inter * on / sc.step if c.fabric == "rdma" else np.zeros(n_r)
    obj = read_bps if c.storage == "object" else np.zeros(n_r)
    nfs = read_bps if c.storage == "nfs" else np.zeros(n_r)  # mounted by the host: not in the pod's netns
    ckpt = d["ckpt_bps"] * sc.idle
    nn = np.full(n_r, d["quiet_net"])
    nn[BURST] += sc.env.burst_net_gbs * GB
    rx = tcp + obj + 2e5
    tx = tcp + 2e5 + (ckpt if c.storage == "object" else 0.0)
    return {
        "sc_net_rx_bps": rx,
        "sc_net_tx_bps": tx,
        "node_net_rx_bps": rx + nfs + nn,
        "node_net_tx_bps": tx + (ckpt if c.storage == "nfs" else 0.0) + nn * d["net_tx_share"],
        "ib_rx_bps": rdma + 1e3,
        "ib_tx_bps": rdma + 1e3,
    }


def truth_tables(
    rng: np.random.Generator, cluster: Cluster, workload: Workload, env: Environment, stages: Stages
) -> list[Table]:
    """One table per pod: signal name -> its noiseless value in each regime, shape (regimes,)."""
    sc = scene(rng, cluster, workload, env, stages)
    tables: list[Table] = []
    for p in range(cluster.pods):
        cpu = cpu_readings(sc, p)
        table = gpu_readings(sc, p) | cpu | io_readings(sc, p, cpu["node_cpu_busy_frac"])
        tables.append(table | memory_readings(sc, p) | network_readings(sc))
    return tables
