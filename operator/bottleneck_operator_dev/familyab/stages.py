"""Per-step stage times from a Job's configuration, and the step time they add up to.

One step of one pod: its loader workers read and decode the batch while the GPUs compute the
previous one (prefetching), the batch is copied to the GPUs, forward and backward run (math-bound
and HBM-bound kernels, unless the host cannot launch kernels as fast as they finish), gradients
are all-reduced in buckets that overlap the backward pass, and now and then the Job stops for a
checkpoint, an evaluation, or a restart after an OOM kill. :func:`step_time` combines the stages
with any of them scaled, which is how :mod:`.label` asks "what if this stage were twice as fast".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bottleneck_operator_dev.familyab.config import Config
from bottleneck_operator_dev.familyab.hardware import OBJECT_STREAM_BPS, PCIE_GBS, Storage

STAGES = ("read", "ckpt", "cpu", "h2d", "intra", "inter", "math", "launch", "eval", "hbm", "host_mem", "restart")
BUCKET_BYTES = 25e6  # PyTorch DDP's default gradient bucket
ADAM_BYTES = 28.0  # HBM bytes an Adam step reads and writes per parameter (fp32 master, m, v, grad)
KERNEL_FLOOR_S = 2e-6  # GPU time of the smallest kernel: start-up and drain (assumed)
# NVLink reaches about two thirds of its nominal rate (195 of 300 GB/s per direction measured with
# nccl-tests' sendrecv on 8 A100s); all-reduce on it a little more.
NVLINK_EFF = 0.7
MAIN_CORES = 0.8  # cores one training process keeps busy outside kernel launches (assumed)


@dataclass(frozen=True)
class Flows:
    """What one step moves and uses, for the exporters (per pod unless named per GPU or node)."""

    samples: float
    read_bytes: float  # from storage (page-cache misses)
    files: float  # files or objects opened
    cpu_work: float  # core-seconds of loader work
    cores: float  # cores the loader can use
    h2d_bytes_gpu: float
    intra_bytes_gpu: float  # per direction over NVLink or PCIe peer links
    inter_bytes_node: float  # per direction over the node network
    flops_gpu: float
    hbm_bytes_gpu: float
    ws_gib: float  # working set
    room_gib: float  # the limit it is held to (the pod's limit, else its share of the node)
    oom_every_s: float  # 0: no OOM kills
    restart_s: float
    ckpt_bytes: float
    ckpt_s: float
    clock: float  # sustained SM clock as a share of boost


@dataclass(frozen=True)
class Stages:
    """Stage times of one step (seconds) and the shares of wall time lost to pauses.

    ``host_mem`` is the share of time the pod's tasks stall on memory (reclaim, swap-in);
    ``ckpt``, ``eval`` and ``restart`` are shares of wall time; everything else is seconds per step.
    """

    read: float
    cpu: float
    h2d: float
    intra: float
    inter: float
    math: float
    hbm: float
    launch: float
    host_mem: float
    ckpt: float
    eval: float
    restart: float
    overlap_comm: float
    overlap_h2d: float
    coupling: float
    tail: float
    cpu_bind: str
    flows: Flows

    def times(self) -> dict[str, float]:
        """The scalable stages by name (see :data:`STAGES`)."""
        return {name: float(getattr(self, name)) for name in STAGES}


def step_time(st: Stages, scale: Mapping[str, float] | None = None) -> float:
    """Mean wall seconds per step with each named stage multiplied by ``scale[name]`` (default 1)."""
    k = {name: (scale or {}).get(name, 1.0) for name in STAGES}
    read, cpu = st.read * k["read"], st.cpu * k["cpu"]
    # Workers read and decode in turn, many workers in parallel: the slower side bounds the
    # loader, plus the part of the faster one a worker cannot hide behind it.
    loader = max(read, cpu) + st.coupling * min(read, cpu)
    busy = st.math * k["math"] + st.hbm * k["hbm"]
    gpu = max(busy, st.launch * k["launch"])  # the GPU cannot run kernels faster than they are launched
    h2d = st.h2d * k["h2d"]
    h2d_exposed = h2d * (1 - st.overlap_h2d) + max(0.0, h2d * st.overlap_h2d - gpu)
    comm = st.intra * k["intra"] + st.inter * k["inter"]
    comm_exposed = max(comm * st.tail, comm - st.overlap_comm * (2.0 / 3.0) * gpu)
    core = max(loader, gpu + h2d_exposed + comm_exposed)
    core /= 1.0 - min(0.9, st.host_mem * k["host_mem"])
    pauses = st.ckpt * k["ckpt"] + st.eval * k["eval"] + st.restart * k["restart"]
    return core / (1.0 - min(0.9, pauses))


def object_stream_bps(store: Storage) -> float:
    """One HTTP connection's rate: higher for endpoints that answer faster (within the guide's range)."""
    lo, hi = OBJECT_STREAM_BPS
    return float(min(hi, max(lo, 100e6 * (0.04 / store.latency_s) ** 0.5)))


def storage_bps(cfg: Config, store: Storage, connections: float) -> float:
    """Bytes/s one node of the Job can read from ``store`` (what neighbours leave of it)."""
    nic = cfg.nic.node_bytes_per_s * 0.9 if cfg.nic else 1.25e9
    if store.local:
        return max(0.2 * store.node_gbs * 1e9, store.node_gbs * 1e9 - cfg.nb_disk_bps)
    if store.kind == "object":
        return min(store.node_gbs * 1e9, connections * object_stream_bps(store), nic - cfg.nb_net_bps * 0.5)
    return min(store.node_gbs * 1e9 * cfg.storage_share, max(0.1 * nic, nic - cfg.nb_net_bps))


def read_stage(cfg: Config) -> tuple[float, float, float]:
    """(seconds, bytes, files) one pod's loaders spend reading one step's batch from storage."""
    samples = cfg.batch * cfg.gpus_per_pod
    miss = 1.0 - cfg.cached
    sample_bytes = cfg.model.sample_kb * 1024
    read_bytes = samples * sample_bytes * miss
    per_file = 1.0 if cfg.fmt in ("files", "memmap") else max(1.0, 100e6 / sample_bytes)
    files = samples * miss / per_file
    pods_here = min(cfg.pods, cfg.pods_per_node)
    parallel = cfg.workers * cfg.gpus_per_pod * cfg.streams
    node_bps = storage_bps(cfg, cfg.storage, parallel * pods_here)
    t_bw = read_bytes * pods_here / node_bps
    t_lat = files * cfg.storage.latency_s / parallel
    return max(t_bw, t_lat), read_bytes, files


def cpu_stage(cfg: Config, read_bytes: float) -> tuple[float, float, float, str]:
    """(seconds, core-seconds, usable cores, what bounds the cores) of one step's preprocessing."""
    samples = cfg.batch * cfg.gpus_per_pod
    work = samples * cfg.cpu_ms / 1000.0 * (0.15 if cfg.dali else 1.0)
    if cfg.storage.kind == "object":  # HTTP and TLS in the reader processes: about a core per 1.5 GB/s
        work += read_bytes / 1.5e9
    main = MAIN_CORES * cfg.gpus_per_pod  # the training processes' own share of the limit
    pods_here = min(cfg.pods, cfg.pods_per_node)
    bounds = {
        "too-few-workers": float(cfg.workers * cfg.gpus_per_pod),
        "throttled": max(0.25 * cfg.cpu_limit, cfg.cpu_limit - main) if cfg.cpu_limit else float("inf"),
        "saturated": max(0.5, (cfg.node.cpus - cfg.nb_cpu) / pods_here - main),
    }
    bind = min(bounds, key=lambda name: bounds[name])
    cores = bounds[bind]
    return work / cores, work, cores, bind


def pcie_bps(cfg: Config) -> float:
    """Host-to-device bytes/s of one GPU: pinned buffers reach about 80 % of the link, pageable ones
    about 45 %; eight PCIe cards in one server share switches two to a link (assumed)."""
    share = 2.0 if cfg.node.gpus >= 8 and cfg.gpu.nvlink_gbs <= 0 else 1.0
    return PCIE_GBS[cfg.gpu.pcie_gen] * 1e9 * (0.8 if cfg.pinned else 0.45) / share


def h2d_stage(cfg: Config) -> tuple[float, float]:
    """(seconds, bytes) of one GPU's host-to-device copies per step."""
    per_sample = cfg.model.sample_kb if cfg.dali else cfg.model.h2d_kb  # DALI ships encoded bytes
    nbytes = cfg.batch * per_sample * 1024
    if cfg.arch == "host":  # embedding rows gathered in host memory, gradients sent back
        nbytes += cfg.batch * cfg.model.hbm_mb * 1e6 * 0.5
    return nbytes / pcie_bps(cfg), nbytes


def comm_stage(cfg: Config) -> tuple[float, float, float, float, float]:
    """(intra seconds, inter seconds, intra bytes per GPU, inter bytes per node, unhideable share).

    Ring all-reduce moves 2(n-1)/n of the gradients over each link (nccl-tests' bus bandwidth);
    hierarchically, once over the node's GPU links and once over the node network.
    """
    grads = cfg.model.params * cfg.grad_bytes
    g, m = cfg.gpus_per_node, cfg.nodes
    intra_bw = cfg.gpu.nvlink_gbs * 1e9 * NVLINK_EFF if cfg.intra == "nvlink" else pcie_bps(cfg) * 0.7
    nic = cfg.nic
    busy = cfg.nb_rdma_bps if nic and nic.rdma else cfg.nb_net_bps
    net = max(0.2 * nic.node_bytes_per_s, nic.node_bytes_per_s * cfg.net_eff - busy) if nic else 1e9
    hop_s = 10e-6 if cfg.intra == "nvlink" else 25e-6
    net_hop_s = 30e-6 if nic and nic.rdma else 150e-6
    buckets = max(1.0, grads / BUCKET_BYTES)
    intra_bytes = 2 * (g - 1) / g * grads if g > 1 else 0.0
    inter_bytes = 2 * (m - 1) / m * grads if m > 1 else 0.0
    if cfg.arch == "ps":  # every GPU worker pushes gradients and pulls weights through the NIC
        inter_bytes = cfg.model.params * 4.0 * g * 1.5  # 1.5: parameter-server hot spots (assumed)
    if cfg.arch == "a2a" and cfg.gpus > 1:  # sharded embeddings: each GPU exchanges with every other
        a2a = cfg.batch * cfg.model.a2a_kb * 1024
        intra_bytes += a2a * (g - 1) / (cfg.gpus - 1)
        inter_bytes += a2a * (cfg.gpus - g) / (cfg.gpus - 1) * g
    t_intra = intra_bytes / intra_bw + (buckets * 2 * (g - 1) * hop_s if g > 1 else 0.0)
    t_inter = inter_bytes / net + (buckets * 2 * (m - 1) * net_hop_s if inter_bytes else 0.0)
    tail = 1.0 if cfg.arch == "a2a" else min(1.0, max(0.05, 1.0 / buckets))
    return t_intra, t_inter, intra_bytes, inter_bytes, tail


def gpu_stage(cfg: Config) -> tuple[float, float, float, float, float, float]:
    """(math s, HBM s, launch s, FLOPs, HBM bytes, clock share) of one GPU's step."""
    gpu, model = cfg.gpu, cfg.model
    flops = cfg.batch * model.fwd_gflops * 1e9 * 3.0  # backward costs about twice the forward
    peak = {"amp": gpu.half_tflops, "tf32": gpu.tf32_tflops, "fp32": gpu.fp32_tflops}[cfg.precision] * 1e12
    t_math = flops / (peak * model.math_eff)
    if cfg.dali:  # nvJPEG decode on the GPU, about 5,000 images/s on an A100-class part (assumed)
        t_math += cfg.batch / 5000.0 * (312.0 / gpu.half_tflops) ** 0.5
    act = cfg.batch * model.hbm_mb * 1e6 * cfg.hbm_scale * (1.0 if cfg.precision == "amp" else 2.0)
    hbm_bytes = act + model.params * ADAM_BYTES
    # Embedding gathers are random: about half the streaming efficiency (assumed).
    eff = 0.45 if model.kind in ("rec", "gnn") else 0.75
    t_hbm = hbm_bytes / (gpu.hbm_gbs * 1e9 * eff)
    clock = power_clock(cfg, t_math, t_hbm)
    t_math /= clock
    t_hbm /= clock**0.15  # memory-bound kernels barely follow the SM clock
    if cfg.gpus > 1:  # synchronous steps wait for the slowest GPU: about two sigmas of clock spread
        t_math *= 1.0 + 2.0 * cfg.clock_sigma
    t_math += model.kernels * KERNEL_FLOOR_S  # no kernel, however small, takes less on the GPU
    t_launch = model.kernels * cfg.launch_us * 1e-6
    return t_math, t_hbm, t_launch, flops, hbm_bytes, clock


def power_clock(cfg: Config, t_math: float, t_hbm: float) -> float:
    """Sustained SM clock as a share of boost under the enforced power limit.

    While kernels run, board power is idle power plus a dynamic part that math kernels drive harder
    than memory-bound ones; above the limit the clock drops until dynamic power (about f^2.5 with
    voltage scaling, assumed) fits.
    """
    gpu = cfg.gpu
    activity = (0.95 * t_math + 0.6 * t_hbm) / max(t_math + t_hbm, 1e-12)
    dynamic = (gpu.tdp_w - gpu.idle_w) * activity
    allowed = gpu.tdp_w * cfg.power_cap - gpu.idle_w
    if dynamic <= allowed:
        return 1.0
    return float(max(0.5, (allowed / dynamic) ** (1 / 2.5)))


def working_set_gib(cfg: Config) -> float:
    """The pod's resident memory: training processes, each worker's copy-on-write growth, prefetched
    batches (two per worker) and host-resident data."""
    prefetch = 2 * cfg.workers * cfg.gpus_per_pod * cfg.batch * cfg.model.h2d_kb * 1024 / 2**30
    return cfg.base_gib + cfg.workers * cfg.gpus_per_pod * cfg.worker_gib + prefetch + cfg.host_gib


def memory_stage(cfg: Config) -> tuple[float, float, float, float, float]:
    """(stall share, restart share, working set GiB, room GiB, seconds between OOM kills).

    Near its limit a cgroup reclaims page cache and stalls in direct reclaim; past it, with swap,
    it swaps (the stalls grow with the overshoot); without swap the OOM killer ends the trainer
    and the container restarts, reloads and warms up again (assumed shapes and costs).
    """
    ws = working_set_gib(cfg)
    pods_here = min(cfg.pods, cfg.pods_per_node)
    node_room = (cfg.node.mem_gib * 0.95 - cfg.nb_mem_gib) / pods_here
    room = min(cfg.mem_limit_gib, node_room) if cfg.mem_limit_gib else node_room
    r = ws / max(room, 1.0)
    if r <= 0.9:
        return 0.0, 0.0, ws, room, 0.0
    if r <= 1.0:
        return min(0.3, (r - 0.9) * 2.5), 0.0, ws, room, 0.0
    if cfg.swap:
        return min(0.8, 0.25 + (r - 1.0) * 2.0), 0.0, ws, room, 0.0
    oom_every = min(3600.0, max(240.0, 180.0 / (r - 1.0 + 0.05)))
    restart = 60.0 + 20.0 * cfg.gpus_per_pod**0.5
    return 0.3, restart / oom_every, ws, room, oom_every


def ckpt_stage(cfg: Config) -> tuple[float, float]:
    """(seconds, bytes) of one checkpoint: fp32 weights and Adam moments (12 bytes a parameter)."""
    nbytes = cfg.model.params * 12.0
    store = cfg.ckpt_storage
    if store.local:
        bps = 0.6 * store.node_gbs * 1e9
    elif store.kind == "object":  # multipart upload, eight parts in flight
        bps = min(store.node_gbs * 1e9, 8 * object_stream_bps(store))
    else:
        bps = 0.7 * storage_bps(cfg, store, 1.0)
    return nbytes / bps + 5.0, nbytes  # 5 s to gather state and sync (assumed)


def compute_stages(cfg: Config) -> Stages:
    """All stage times of one step of one pod of ``cfg``."""
    t_read, read_bytes, files = read_stage(cfg)
    t_cpu, work, cores, bind = cpu_stage(cfg, read_bytes)
    t_h2d, h2d_bytes = h2d_stage(cfg)
    t_intra, t_inter, intra_bytes, inter_bytes, tail = comm_stage(cfg)
    t_math, t_hbm, t_launch, flops, hbm_bytes, clock = gpu_stage(cfg)
    stall, restart, ws, room, oom_every = memory_stage(cfg)
    t_ckpt, ckpt_bytes = ckpt_stage(cfg)
    flows = Flows(
        samples=float(cfg.batch * cfg.gpus_per_pod),
        read_bytes=read_bytes,
        files=files,
        cpu_work=work,
        cores=cores,
        h2d_bytes_gpu=h2d_bytes,
        intra_bytes_gpu=intra_bytes,
        inter_bytes_node=inter_bytes,
        flops_gpu=flops,
        hbm_bytes_gpu=hbm_bytes,
        ws_gib=ws,
        room_gib=room,
        oom_every_s=oom_every,
        restart_s=restart * oom_every,
        ckpt_bytes=ckpt_bytes,
        ckpt_s=t_ckpt,
        clock=clock,
    )
    return Stages(
        read=t_read,
        cpu=t_cpu,
        h2d=t_h2d,
        intra=t_intra,
        inter=t_inter,
        math=t_math,
        hbm=t_hbm,
        launch=t_launch,
        host_mem=stall,
        ckpt=t_ckpt / cfg.ckpt_every_s,
        eval=cfg.eval_s / cfg.eval_every_s if cfg.eval_every_s else 0.0,
        restart=restart,
        overlap_comm=cfg.overlap_comm,
        overlap_h2d=cfg.overlap_h2d if cfg.pinned and cfg.arch != "host" else 0.1,
        coupling=cfg.coupling,
        tail=tail,
        cpu_bind=bind,
        flows=flows,
    )
