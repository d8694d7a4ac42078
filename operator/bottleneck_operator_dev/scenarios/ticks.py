"""Physical state of a job's pods every few seconds: what the GPUs, the loader and the node are doing.

The step's stage times wander (log-normal, auto-correlated) around the plan's; each tick belongs to a
phase (start-up, training, evaluation, checkpoint), so one window can mix them as real ones do.
Pod quantities are per pod (GPU ones the mean over its GPUs); node loads are summed by the caller over
every pod on the node, profiled or not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.scenarios.plans import Plan

F = npt.NDArray[np.float64]
TICK = 5.0  # seconds between states
TRAIN, STARTUP, EVAL, CHECKPOINT = 0, 1, 2, 3
BLOCKING = ("nvme", "sata", "nfs", "fuse", "mmap")  # readers wait in D state (iowait)
NETWORK_STORAGE = ("nfs", "fuse", "http")
LOCAL_STORAGE = ("nvme", "sata", "mmap")
# the link share at which a DMA engine streams without pausing: 58 GB/s of PCIe Gen5's 64 on an H200
COPY_RATE = 0.9
READAHEAD_BYTES = 128 * 1024.0  # one major fault of a memory-mapped file brings in the readahead window


@dataclass
class Ticks:
    """Per-pod arrays (pods, ticks) and the tick times."""

    t: F
    gpu: dict[str, F]
    pod: dict[str, F]
    node: dict[str, F]  # the pod's contribution to its node's load


def _wander(rng: np.random.Generator, n: int, sd: float) -> F:
    """An AR(1) log-normal multiplier around 1."""
    e = rng.normal(0.0, sd, n)
    out = np.empty(n)
    acc = 0.0
    for i in range(n):
        acc = 0.8 * acc + e[i]
        out[i] = acc
    return np.exp(out * 0.6)


def phases(rng: np.random.Generator, t: F, job_start: float) -> npt.NDArray[np.int64]:
    """A phase per tick: start-up after the job starts, periodic evaluations and checkpoints."""
    ph = np.full(t.size, TRAIN, dtype=np.int64)
    ph[t < job_start + float(rng.uniform(60.0, 240.0))] = STARTUP
    if rng.random() < 0.5:
        period, length = float(rng.uniform(300.0, 900.0)), float(rng.uniform(30.0, 120.0))
        ph[(ph == TRAIN) & (((t - job_start) % period) > period - length)] = EVAL
    if rng.random() < 0.4:
        at = float(rng.uniform(t[0], t[-1]))
        ph[(ph == TRAIN) & (t >= at) & (t < at + float(rng.uniform(20.0, 60.0)))] = CHECKPOINT
    return ph


def pod_ticks(
    plan: Plan, rng: np.random.Generator, t: F, ph: npt.NDArray[np.int64], *, side: np.random.Generator
) -> Ticks:
    """The per-tick state of every pod of the job; ``side`` draws what came after the first signals
    (board clocks, swap-ins, OOM kills), so every draw from ``rng`` stays as it was."""
    n = t.size
    gpu: dict[str, list[F]] = {}
    pod: dict[str, list[F]] = {}
    node: dict[str, list[F]] = {}
    for p in range(plan.n_pods):
        g, h, nd = _one_pod(plan, (rng, side), n, ph, p)
        for dst, src in ((gpu, g), (pod, h), (node, nd)):
            for k, v in src.items():
                dst.setdefault(k, []).append(v)
    return Ticks(
        t,
        {k: np.stack(v) for k, v in gpu.items()},
        {k: np.stack(v) for k, v in pod.items()},
        {k: np.stack(v) for k, v in node.items()},
    )


def _step_shares(plan: Plan, rng: np.random.Generator, n: int, ph: npt.NDArray[np.int64]) -> dict[str, F]:
    st = plan.stages
    tg = st.t_gpu * _wander(rng, n, 0.04)
    tc = st.t_comm * _wander(rng, n, 0.12)
    tcpu = st.t_cpu * _wander(rng, n, 0.08)
    sd_io = 0.25 if plan.storage.kind in NETWORK_STORAGE else 0.1
    tio = st.t_io * _wander(rng, n, sd_io)
    tm = st.t_mem * _wander(rng, n, 0.2)
    th2d = st.t_h2d * _wander(rng, n, 0.06)
    ev = ph == EVAL
    tg = np.where(ev, tg * 0.35, tg)  # forward only
    tc = np.where(ev, 0.0, tc)
    tcpu, tio = np.where(ev, tcpu * 0.3, tcpu), np.where(ev, tio * 0.3, tio)
    exposed = np.maximum(tc * (1.0 - st.overlap), tc - tg)
    device = np.maximum(tg + exposed, th2d) if st.pinned else tg + exposed + th2d
    inp = tcpu + tio if st.serial_input else np.maximum(tcpu, tio)
    step = (device + inp if st.serial_input else np.maximum(device, inp)) + tm
    return {"tg": tg, "tc": tc, "tcpu": tcpu, "tio": tio, "tm": tm, "th2d": th2d, "exposed": exposed, "device": device,
            "step": step}  # fmt: skip


def _one_pod(
    plan: Plan, rngs: tuple[np.random.Generator, np.random.Generator], n: int, ph: npt.NDArray[np.int64], p: int
) -> tuple[dict[str, F], dict[str, F], dict[str, F]]:
    rng, side = rngs
    s = _step_shares(plan, rng, n, ph)
    step = s["step"]
    k = plan.kernels
    gpus = plan.gpus_per_pod
    u = s["tg"] / step
    if plan.bubble:
        stage = p / max(1, plan.n_pods - 1)
        u = u * (1.0 - plan.bubble * (0.6 + 0.8 * stage))
    slow_share = 0.0
    if plan.straggler < 1.0 and (p == 0):
        # one GPU of this pod runs slow and busy; its peers finish early and wait in collectives
        slow_share = 1.0 / gpus
    fast_u = u * (plan.straggler if plan.straggler < 1.0 else 1.0)
    u_mean = slow_share * u + (1.0 - slow_share) * fast_u
    wait = np.clip((u - fast_u) + s["exposed"] / step, 0.0, 1.0)  # NCCL kernels in flight, SMs idle
    startup, ckpt = ph == STARTUP, ph == CHECKPOINT
    idle = startup | ckpt
    u_mean = np.where(idle, rng.uniform(0.0, 0.06, n), u_mean)
    wait = np.where(idle, 0.0, wait)
    # GPU_UTIL is the time share in which a kernel or a copy ran: a launch-bound step's kernels run
    # only part of it, and the copy engines count for the time they move bytes at their rate (an
    # H200 streaming pinned copies read 0.99 with its SMs idle, pageable ones 0.18; tests/data)
    util = np.clip(u_mean * (k.gr if plan.launch_core else 1.0) + wait, 0.0, 1.0)
    part = plan.part
    h2d = np.where(idle, 0.0, plan.h2d_bytes / step)
    util = util + (1.0 - util) * np.clip(h2d / (COPY_RATE * part.pcie_bps), 0.0, 1.0)
    comm_share = np.where(idle, 0.0, s["tc"] / step)
    sm = np.clip(u_mean * k.sm + comm_share * 0.08, 0.0, 1.0)
    # NCCL's waiting kernels are graphics-engine time like any other kernel (GPU_UTIL and the engine
    # agree within 0.005 on four real loops, tests/data/gpu-compute, gpu-hbm, gpu-launch*)
    gr = np.minimum(util, u_mean * k.gr + wait)
    tensor = u_mean * k.tensor
    dram = np.clip(u_mean * k.dram + comm_share * 0.03, 0.0, 1.0)
    fp32 = u_mean * k.fp32
    power, clock_f, limit, slowdown = _power_and_clock(plan, rngs, idle, u_mean, (tensor, sm, dram, fp32), slow_share)
    comm_bps = np.where(idle, 0.0, plan.comm_bytes / step)
    nvl = comm_bps if plan.comm_path == "nvlink" else 0.3 * comm_bps * (part.nvlink_bps > 0) * (gpus > 1)
    over_pcie = comm_bps if plan.comm_path in ("rdma", "pcie") else 0.0
    g = {
        "util": util, "sm": sm, "gr": gr, "tensor": tensor, "dram": dram, "occupancy": u_mean * k.occupancy,
        "copy": np.clip(dram * 0.9 + rng.normal(0, 0.02, n), 0.0, 1.0),
        "fb": np.clip(plan.fb_frac + rng.normal(0, 0.004, n), 0.05, 0.995),
        "power": power, "clock": part.max_clock_mhz * clock_f,
        "pcie_rx": h2d + over_pcie + 2e6, "pcie_tx": 0.05 * h2d + over_pcie + 1e6, "nvlink": nvl,
        "fp32": fp32, "fp16": u_mean * k.fp16, "power_limit": np.full(n, limit), "slowdown": slowdown,
    }  # fmt: skip
    h, nd = _host(plan, rng, n, ph, s, u_mean)
    # the pod's own interfaces carry its part of the node's bytes: neither a neighbour's nor RDMA's
    h["net_rx"], h["net_tx"] = nd["net_rx"], nd["net_tx"]
    _host_extras(plan, side, ph, s, h, nd)
    return g, h, nd


def _power_and_clock(
    plan: Plan,
    rngs: tuple[np.random.Generator, np.random.Generator],
    idle: npt.NDArray[np.bool_],
    u_mean: F,
    pipes: tuple[F, F, F, F],
    slow_share: float,
) -> tuple[F, F, float, F]:
    """Board power, the clock's factor, the enforced limit and the share of GPUs with a slowdown bit.

    The draws come in the order the pod's other signals expect (ask, clock, board, power).
    """
    rng, side = rngs
    n = u_mean.size
    tensor, sm, dram, fp32 = pipes
    part = plan.part
    gpus = plan.gpus_per_pod
    # Board power the pipes would draw, over the part's limit. Fitted to the real H200 loops
    # (recordings/README.md): bf16 matmuls ask ~1.3x the limit and hold it at 0.99 with the SM clock at
    # 0.75; HBM streaming 0.72; tiny kernels 0.19-0.30; idle with a context 0.18 at the full clock.
    # FP32 math draws about as much from the FP32 pipes: 0.99 of the limit at the full clock for fp32
    # products (gpu-compute-fp32); the few FP32 ops of mixed-precision loops are in the fit above.
    fp32_draw = 0.65 * fp32 if plan.fp32_math else 0.0
    ask = (part.idle_w + part.tdp_w * (0.8 * tensor + 0.4 * sm + 0.13 * dram + fp32_draw)) * rng.uniform(0.93, 1.03, n)
    # The limit the boards enforce: their default (the TDP), or lower where the cluster caps them. The
    # clock falls until the draw fits the limit, which the board then holds just under (687-694 W);
    # power management moves it a little from sample to sample and board to board anyway.
    limit = part.tdp_w * plan.power_cap
    held = np.minimum(1.0, limit / ask) ** 1.15
    clock_f = held * rng.uniform(0.97, 1.0, n) * side.uniform(0.985, 1.0)
    if slow_share:
        clock_f = clock_f * (1.0 - slow_share * (1.0 - plan.straggler))
    power = np.minimum(ask, limit * rng.uniform(0.98, 1.0, n))
    # The share of the pod's GPUs whose clock-event reasons carry a slowdown bit: the software power cap
    # on the boards held at their limit, a hardware or thermal slowdown on the straggler.
    capped = np.round(np.clip((1.0 - held) / 0.02, 0.0, 1.0) * gpus) / gpus
    slowdown = np.where(idle, 0.0, capped + slow_share * (1.0 - capped))
    return power, clock_f, limit, slowdown


def _host_extras(
    plan: Plan,
    side: np.random.Generator,
    ph: npt.NDArray[np.int64],
    s: dict[str, F],
    pod: dict[str, F],
    node: dict[str, F],
) -> None:
    """What the pod and its node show beside the first signals: swap-ins, OOM kills, RDMA bytes."""
    n = ph.size
    idle = (ph == STARTUP) | (ph == CHECKPOINT)
    mem_stall = np.where(idle, 0.0, s["tm"] / s["step"])
    # pages back from swap: the stall's faults (2-8 x 10^4 a second when the whole step stalls), each
    # bringing its page and, with swap readahead, up to seven neighbours; none without swap
    pod["swapin"] = mem_stall * plan.swap * side.uniform(2e4, 8e4, n) * side.uniform(1.0, 3.0)
    kills = np.zeros(n)
    running = np.flatnonzero(ph == TRAIN)
    for _ in range(plan.oom_kills if running.size else 0):
        kills[int(side.choice(running))] += 1.0 / TICK  # one kill within the tick, per second
    pod["oom"] = kills
    comm = plan.comm_bytes / s["step"] * plan.gpus_per_pod if plan.comm_path == "rdma" else np.zeros(n)
    node["ib"] = np.where(idle, 0.0, comm)


def _host(
    plan: Plan, rng: np.random.Generator, n: int, ph: npt.NDArray[np.int64], s: dict[str, F], u: F
) -> tuple[dict[str, F], dict[str, F]]:
    step, gpus = s["step"], plan.gpus_per_pod
    startup, ckpt = ph == STARTUP, ph == CHECKPOINT
    io_share = np.where(startup | ckpt, 0.0, s["tio"] / step)
    cpu_share = np.where(startup | ckpt, 0.0, s["tcpu"] / step)
    loader = cpu_share * plan.loader_cores * rng.uniform(0.95, 1.02, n)
    main = gpus * np.where(plan.launch_core, rng.uniform(0.95, 1.0, n), _trainer_cores(plan, s, startup | ckpt))
    if plan.workers == 0:
        loader = np.zeros(n)
    storage = plan.storage
    read = io_share * storage.bps + np.where(startup, storage.bps * rng.uniform(0.2, 0.6, n), 0.0)
    reader_cpu = read / 1.5e9 * (2.0 if storage.kind == "http" else 0.4)  # TLS and HTTP parsing cost cycles
    mem_stall = np.where(startup | ckpt, 0.0, s["tm"] / step)
    kernel_cpu = mem_stall * rng.uniform(1.0, 3.0) * gpus
    cpu = main + loader + reader_cpu + kernel_cpu + 0.1
    demand_cores = cpu
    throttled = np.zeros(n)
    if plan.cpu_limit is not None:
        demand = cpu / plan.cpu_limit
        throttled = np.clip((demand - 0.9) * 6.0, 0.0, 0.99) + rng.uniform(0.0, 0.03, n)
        cpu = np.minimum(cpu, plan.cpu_limit * rng.uniform(0.97, 1.0, n))
    # The pod's threads wait for a core when throttled, or when its loader fills the cores the node
    # leaves it (threads queue behind each other); one worker per core on an idle node never waits.
    fill = (plan.loader_cores + gpus) / (plan.node_cpus / plan.pods_per_node)
    contention = cpu_share * float(np.clip((fill - 0.85) / 0.15, 0.0, 1.0))
    waiting_readers = io_share * max(1, plan.workers) if storage.kind in BLOCKING else np.zeros(n)
    majfault = read / READAHEAD_BYTES if storage.kind == "mmap" else np.zeros(n)
    majfault = majfault + mem_stall * rng.uniform(2e4, 8e4, n) * plan.swap + rng.uniform(0, 5, n)
    ws = plan.working_set_bytes * (1.0 + 0.02 * rng.standard_normal(n))
    if plan.mem_limit_bytes is not None:
        ws = np.minimum(ws, plan.mem_limit_bytes * 0.999)
    net_comm = plan.comm_bytes / step * gpus if plan.comm_path == "ethernet" else np.zeros(n)
    net_comm = np.where(startup | ckpt, 0.0, net_comm)
    net_read = read if storage.kind in NETWORK_STORAGE else np.zeros(n)
    disk_read = read if storage.kind in LOCAL_STORAGE else np.zeros(n)
    ckpt_tx = np.where(ckpt, rng.uniform(0.3, 1.0, n) * 1e9, 0.0)
    pod = {
        "cpu": cpu, "throttled": throttled, "ws": ws, "fs_read": disk_read, "majfault": majfault,
        "psi_cpu_some": np.clip(throttled * 0.8 + contention, 0, 1),
        "psi_io_some": np.clip(waiting_readers / max(1, plan.workers) * 1.1, 0, 1),
        "psi_io_full": np.clip(waiting_readers / max(1, plan.workers) * 0.7 * (u < 0.6), 0, 1),
        "psi_mem_some": np.clip(mem_stall * 1.1, 0, 1), "psi_mem_full": np.clip(mem_stall * 0.75, 0, 1),
        "running": np.round(main / gpus * gpus + loader + rng.uniform(0, 0.5, n)),
        "dstate": np.round(waiting_readers + mem_stall * 2 * plan.swap),
        "pinned": _pinned(plan, s, startup | ckpt, main, cpu / np.maximum(demand_cores, 1e-9), fill),
    }  # fmt: skip
    node = {
        "cpu": cpu, "system": 0.08 * cpu + kernel_cpu + reader_cpu * 0.5, "iowait": waiting_readers,
        "disk_read": disk_read, "majfault": majfault, "net_rx": net_comm + net_read + 1e5,
        "net_tx": net_comm + 0.02 * net_read + ckpt_tx + 1e5, "mem": ws,
        "swap": mem_stall * plan.swap, "mem_stall": mem_stall,
        "runnable": cpu + plan.loader_cores * contention,
    }  # fmt: skip
    return pod, node


def _trainer_cores(plan: Plan, s: dict[str, F], idle: npt.NDArray[np.bool_]) -> F:
    """Cores of one training process that is not launch-bound.

    It is on a core whenever it is not asleep: it launches, copies pageable batches into the driver's
    staging buffer and spins in the CUDA synchronisation while the device works, and with
    num_workers=0 decodes its own batches (all the while). It sleeps on the loader's queue, on its own
    reads and on faults. The H200 recordings: 1.0 core for a compute- or HBM-bound loop and for one
    that decodes in-process (gpu-compute, gpu-hbm, gpu-workers0), 0.03-0.06 for loops fed by slow
    input (gpu-io, gpu-objectstore).
    """
    awake = 0.9 * s["device"] + (s["tcpu"] if plan.workers == 0 else 0.0)
    return np.where(idle, 0.2, np.clip(0.05 + awake / s["step"], 0.0, 1.0))


def _pinned(plan: Plan, s: dict[str, F], idle: npt.NDArray[np.bool_], main: F, granted: F, crowding: float) -> F:
    """Processes the collector sees at a full core: workers busy all the time and per-GPU trainer
    processes, each given a whole core. Under a quota (``granted`` < 1) or on cores the loader
    over-fills (``crowding`` > 1), each gets a slice of one.

    A loader as slow as the slowest overlapped stage never waits for a free prefetch slot: it runs
    all the time even when the step also spends time elsewhere (``idle``: start-up and checkpoints).
    """
    busy_fill = np.where(idle, 0.0, np.clip(s["tcpu"] / np.maximum(s["step"] - s["tm"], 1e-9), 0.0, 1.0))
    per_core = granted / max(1.0, crowding)
    if plan.workers == 0:
        workers = np.zeros_like(busy_fill)
    else:  # more workers than the cores the loader may use share them
        workers = plan.workers * _full(busy_fill * per_core * min(1.0, plan.loader_cores / plan.workers))
    return np.round(workers + plan.gpus_per_pod * _full(main / plan.gpus_per_pod * per_core))


def _full(cores: F) -> F:
    """The share of processes that read 0.9 of a core or more when each uses ``cores`` on average."""
    return np.clip((cores - 0.87) / 0.06, 0.0, 1.0)
