"""Drawing one job: hardware, workload and cluster, leaning towards a target stage, then labelled by the model.

The draw leans each knob (storage speed, cores, memory limit, fabric, batch, precision) towards the
stage the job should be bound by, computes the stage times from the analytic models, and keeps the
job only when the composition's binding stage has the target's class; the label is always the
composition's, never the lean. Half the jobs also lean a second stage of another class so it
nearly binds (hard cases).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyt.hardware import GB, GPUS, STORAGE_RANGES, Fabric, Gpu, Storage, fabric
from bottleneck_operator_dev.familyt.perf import (
    STAGE_CLASS,
    Collective,
    Composed,
    Overlap,
    Roofline,
    StageTimes,
    allreduce,
    binding_stage,
    compose,
    host_memory_stall,
    input_times,
    roofline,
)
from bottleneck_operator_dev.familyt.workload import ARCHETYPES, BATCH, Workload

# The stages a class's jobs lean on, and the archetypes that reach them naturally.
LEANS: dict[Bottleneck, tuple[str, ...]] = {
    Bottleneck.IO: ("storage",),
    Bottleneck.CPU: ("decode",),
    Bottleneck.INTERCONNECT: ("collective", "collective", "h2d"),
    Bottleneck.GPU: ("compute", "compute", "launch"),
    Bottleneck.MEMORY: ("host_memory", "hbm"),
}
ARCH_FOR: dict[str, tuple[str, ...]] = {
    "storage": ("cnn", "unet", "transformer", "cnn"),
    "decode": ("cnn", "unet", "gnn", "transformer"),
    "host_memory": ("gnn", "recommender", "cnn", "transformer"),
    "h2d": ("gnn", "cnn", "unet"),
    "collective": ("transformer", "unet", "recommender", "cnn"),
    "compute": ("transformer", "cnn", "unet"),
    "launch": ("transformer", "cnn", "gnn"),
    "hbm": ("recommender", "gnn", "transformer"),
}


@dataclass(frozen=True)
class JobSpec:
    """Everything the exporters need to know about one drawn job."""

    gpu: Gpu
    work: Workload
    gpus_per_node: int
    nodes: int
    nvlink: bool
    fabric: Fabric | None
    storage: Storage
    cache_hit: float  # share of sample reads served from the page cache
    workers: int
    node_cpus: int
    cpu_limit: float | None  # pod CPU limit, cores
    worker_cores: float
    working_set_gb: float  # per pod
    mem_limit_gb: float | None
    swap: str  # "none", "zram" or "ssd"
    fault_pages: float  # pages faulted back per step per rank
    pinned: bool
    h2d_step_bytes: float  # host-to-device bytes per rank per step
    power_limit_w: float
    clock_factor: np.ndarray  # per GPU (nodes x g): SM clock / maximum boost under load
    capped: np.ndarray  # per GPU: held back by the power limit
    roof: Roofline
    coll: Collective
    stages: StageTimes
    overlap: Overlap
    composed: Composed
    stage: str  # the binding stage
    runner_up: float  # the next class's reduction over the binding stage's (0..1)
    mechanism: Mechanism

    @property
    def label(self) -> Bottleneck:
        return STAGE_CLASS[self.stage]


def _loguniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _pick(rng: np.random.Generator, options: tuple[str, ...]) -> str:
    return options[int(rng.integers(len(options)))]


def draw_job(rng: np.random.Generator, target: Bottleneck, *, tries: int = 2000) -> JobSpec:
    """A job whose binding stage has class ``target``.

    Raises:
        RuntimeError: no draw of ``tries`` bound on the target (the leans make this practically impossible).
    """
    lean = _pick(rng, LEANS[target])
    for _ in range(tries):
        others = [s for s in STAGE_CLASS if STAGE_CLASS[s] is not target]
        second = _pick(rng, tuple(others)) if rng.random() < 0.5 else None
        spec = _draw_once(rng, lean, second)
        if spec.label is target and spec.stage == lean:
            return spec
    raise RuntimeError(f"no draw bound on {target} in {tries} tries")


@dataclass(frozen=True)
class _Machine:
    arch: str
    gpu: Gpu
    work: Workload
    g: int
    nodes: int
    nvlink: bool
    fab: Fabric | None


@dataclass(frozen=True)
class _Host:
    storage: Storage
    cache_hit: float
    node_cpus: int
    workers: int
    cpu_limit: float | None
    avail: float  # cores the loader workers can get, all ranks together
    worker_cores: float  # per rank
    ws: float
    mem_limit: float | None
    swap: str
    host_mem: float
    pages: float


def _draw_machine(rng: np.random.Generator, lean: str, leans: frozenset[str]) -> _Machine:
    arch = _pick(rng, ARCH_FOR[lean])
    gpu = GPUS[int(rng.integers(len(GPUS)))]
    if "collective" in leans and rng.random() < 0.5:
        gpu = GPUS[int(rng.choice([0, 1, 2]))]  # NVLink parts over a fabric
    precisions = (*gpu.tensor_precisions, "fp32")
    weights = np.array([3.0 if p in ("bf16", "fp16") else 1.0 for p in precisions])
    precision = str(rng.choice(precisions, p=weights / weights.sum()))
    if "compute" in leans and rng.random() < 0.3:
        precision = "fp32"  # FP32 on the vector pipes: compute-bound without tensor cores
    lo, hi = BATCH[arch]
    if "launch" in leans or ("hbm" in leans and arch == "transformer"):
        hi = max(lo + 1, lo * (2 if "launch" in leans else 4))
    batch = max(1, round(_loguniform(rng, lo, hi)))
    work = ARCHETYPES[arch](rng, batch, precision)
    nvlink = gpu.nvlink_bps > 0
    # NVLink parts come in 4- and 8-GPU boards; PCIe boxes from one card up
    sizes = [4, 8] if nvlink or "collective" in leans else [1, 2, 4, 8]
    g = int(rng.choice(sizes))
    nodes = int(rng.choice([2, 2, 4, 4, 8] if "collective" in leans else [1, 1, 1, 2, 4, 8]))
    if "collective" in leans and not nvlink and rng.random() < 0.3:
        nodes = 1  # a PCIe-only box: the ring runs over PCIe
    return _Machine(arch, gpu, work, g, nodes, nvlink, _draw_fabric(rng, leans) if nodes > 1 else None)


def _draw_fabric(rng: np.random.Generator, leans: frozenset[str]) -> Fabric:
    kind = _pick(rng, ("ethernet", "roce", "infiniband"))
    if "collective" in leans:
        gbit = float(rng.choice([10, 25, 50])) if kind == "ethernet" else float(rng.choice([100, 200]))
        return fabric(kind, gbit, int(rng.choice([1, 1, 2])))
    gbit = float(rng.choice([100, 200])) if kind == "ethernet" else float(rng.choice([200, 400]))
    return fabric(kind, gbit, int(rng.choice([2, 4, 8])))


def _draw_host(rng: np.random.Generator, m: _Machine, leans: frozenset[str]) -> tuple[Workload, _Host]:
    g, work = m.g, m.work
    # storage: slow and cold when leaning on it, fast or cached otherwise
    skind = _pick(rng, ("sata", "nvme", "nfs", "object"))
    slo, shi = STORAGE_RANGES[skind]
    slow_storage = rng.uniform(0.1, 0.5) if "storage" in leans else 1.0
    storage = Storage(skind, _loguniform(rng, slo, shi) * slow_storage, skind in ("sata", "nvme"))
    cache_hit = rng.uniform(0.0, 0.2) if "storage" in leans else rng.uniform(0.0, 0.95)
    # a job leaning on a device stage mostly has a loader that keeps up (a well-tuned input pipeline)
    comfortable = not leans & {"storage", "decode", "host_memory"} and rng.random() < 0.7
    # CPU: cores per GPU, workers, a limit
    node_cpus = max(int(rng.choice([32, 48, 64, 96, 128, 192, 256])), 4 * g)
    workers = int(rng.choice([0, 1, 2, 2, 4, 6, 8] if "decode" in leans else [0, 1, 2, 4, 6, 8, 12, 16]))
    if comfortable:
        workers, cache_hit = max(workers, 8), max(cache_hit, 0.8)
    cpu_limit: float | None = None
    if rng.random() < 0.5:
        cpu_limit = float(max(2, round(g * rng.uniform(2, 16) * (0.5 if "decode" in leans else 1.0))))
    neighbours_cpu = rng.uniform(0, 0.4) * node_cpus
    avail = min(cpu_limit if cpu_limit is not None else 1e9, node_cpus - neighbours_cpu) - g  # trainer threads
    worker_cores = max(0.5, min(max(workers, 1), avail / g))
    decode_scale = rng.uniform(1.5, 4.0) if "decode" in leans else 1.0  # heavy augmentation
    work = replace(work, decode_s=work.decode_s * decode_scale)
    # host memory: the pod's working set against its limit
    ws = g * (work.host_gb + workers * rng.uniform(0.3, 2.0)) + work.shared_gb
    swap = _pick(rng, ("none", "zram", "ssd", "ssd"))
    mem_limit: float | None = None
    if "host_memory" in leans:
        mem_limit = ws / rng.uniform(1.03, 1.4)
        swap = _pick(rng, ("zram", "ssd", "ssd", "none"))
    elif rng.random() < 0.65:
        mem_limit = ws * rng.uniform(1.1, 3.0)
    fault_s = {"none": 150e-6, "zram": 12e-6, "ssd": 90e-6}[swap] * rng.uniform(0.6, 1.6)
    touched, parallel = rng.uniform(0.02, 0.3), rng.uniform(1, 4)
    host_mem, pages = 0.0, 0.0
    if mem_limit is not None:
        host_mem, pages = host_memory_stall(
            working_set=ws * GB, limit=mem_limit * GB, touched=touched / g, fault_s=fault_s, parallel=parallel
        )
    host = _Host(
        storage, cache_hit, node_cpus, workers, cpu_limit, avail, worker_cores, ws, mem_limit, swap, host_mem, pages
    )
    return work, host


def _device(
    rng: np.random.Generator, m: _Machine, work: Workload, leans: frozenset[str]
) -> tuple[Roofline, Collective, float, np.ndarray]:
    """The step's kernels on the roofline and its all-reduce, with the boards' clock spread."""
    gpu, g = m.gpu, m.g
    # kernels on the roofline, at the boards' clocks
    board = rng.uniform(0.93, 1.0, size=(m.nodes, g))
    launch_s = _loguniform(rng, 15e-6, 60e-6) if "launch" in leans else _loguniform(rng, 4e-6, 15e-6)
    if "launch" not in leans and rng.random() < 0.25:
        launch_s = 1.5e-6  # CUDA graphs
    roof = roofline(
        work.groups,
        peak_tensor=gpu.peak[work.precision],
        peak_vector=gpu.peak["fp32"],
        hbm_bps=gpu.hbm_bps,
        compute_eff=rng.uniform(0.45, 0.8),
        bw_eff=rng.uniform(0.78, 0.88),
        launch_s=launch_s,
    )
    intra_bps = gpu.nvlink_bps / 2 if m.nvlink else gpu.pcie_bps * rng.uniform(0.4, 0.8)
    coll = allreduce(
        work.grad_bytes,
        gpus_per_node=g,
        nodes=m.nodes,
        intra_bps=intra_bps,
        intra_alpha=rng.uniform(3e-6, 8e-6),
        inter_bps=(m.fab.node_bps * rng.uniform(0.7, 0.9)) if m.fab else 1.0,
        inter_alpha=m.fab.alpha_s if m.fab else 0.0,
        bucket_bytes=25e6,
    )
    return roof, coll, intra_bps, board


def _draw_once(rng: np.random.Generator, lean: str, second: str | None) -> JobSpec:
    leans = frozenset({lean} | ({second} if second else set()))
    m = _draw_machine(rng, lean, leans)
    work, h = _draw_host(rng, m, leans)
    gpu, g, batch = m.gpu, m.g, work.batch
    # host to device copies
    pinned = bool(rng.random() < (0.3 if "h2d" in leans else 0.75))
    h2d_bps = gpu.pcie_bps * (rng.uniform(0.75, 0.9) if pinned else rng.uniform(0.25, 0.5))
    h2d_per_sample = work.h2d_bytes * (rng.uniform(2.0, 6.0) if "h2d" in leans else 1.0)  # float32 volumes, offload
    h2d = batch * h2d_per_sample / (h2d_bps / (0.5 * g if g > 2 else 1.0))  # GPUs share the root complex
    roof, coll, intra_bps, board = _device(rng, m, work, leans)
    io_t, dec_t = input_times(
        batch=batch,
        sample_bytes=work.sample_bytes * (1.0 - h.cache_hit),
        decode_s=work.decode_s,
        gpus_per_node=g,
        storage_bps=h.storage.read_bps,
        worker_cores=h.worker_cores,
    )
    ov = Overlap(
        workers=h.workers,
        pipelined=bool(rng.random() < 0.7),
        cv2=rng.uniform(0.1, 1.0),
        h2d_overlap=rng.uniform(0.3, 0.95) if pinned else rng.uniform(0.0, 0.2),
        comm_overlap=rng.uniform(0.0, 0.9),
        buckets=max(1, math.ceil(work.grad_bytes / 25e6)),
        mem_on_workers=rng.uniform(0.0, 1.0),
    )
    st = StageTimes(
        io_t,
        dec_t,
        h.host_mem,
        h2d,
        coll.seconds,
        roof.compute / float(board.min()),
        roof.launch,
        roof.hbm,
        roof.backward,
    )
    power_limit = gpu.tdp_w * (rng.uniform(0.55, 0.9) if rng.random() < 0.3 else 1.0)
    st, clock, capped = _power_capped(gpu, st, ov, roof, board, power_limit)
    comp = compose(st, ov)
    stage, runner = binding_stage(st, ov)
    mechanism = _mechanism(stage, m, coll, intra_bps, h)
    return JobSpec(
        gpu, work, g, m.nodes, m.nvlink, m.fab, h.storage, h.cache_hit, h.workers, h.node_cpus, h.cpu_limit,
        h.worker_cores, h.ws, h.mem_limit, h.swap, h.pages, pinned, batch * h2d_per_sample, power_limit,
        clock, capped, roof, coll, st, ov, comp, stage, runner, mechanism,
    )  # fmt: skip


def _power_capped(
    gpu: Gpu, st: StageTimes, ov: Overlap, roof: Roofline, board: np.ndarray, power_limit: float
) -> tuple[StageTimes, np.ndarray, np.ndarray]:
    """A power limit below what the busy boards would draw holds their clocks back (power ~ clock^2.5).

    Synchronous data parallelism runs at the slowest board, so its clock sets the compute time.
    """
    comp = compose(st, ov)
    idle = idle_power(gpu)
    demand = idle + (gpu.tdp_w - idle) * min(1.0, 1.1 * (st.compute + 0.6 * st.hbm) / comp.step)
    cap_factor = min(1.0, ((power_limit - idle) / max(demand - idle, 1e-9)) ** (1 / 2.5))
    capped = np.full(board.shape, cap_factor < 0.995)
    clock = board * cap_factor
    if cap_factor < 1.0:
        st = replace(st, compute=roof.compute / float(clock.min()))
    return st, clock, capped


def idle_power(gpu: Gpu) -> float:
    """Board power with no kernel running at full clocks: a seventh of TDP (a model assumption)."""
    return gpu.tdp_w / 7.0


def _mechanism(stage: str, m: _Machine, coll: Collective, intra_bps: float, h: _Host) -> Mechanism:
    if stage == "storage":
        return Mechanism.LOCAL_DISK if h.storage.local else Mechanism.NETWORK_STORAGE
    if stage == "decode":
        if h.cpu_limit is not None and h.cpu_limit - m.g <= h.workers * m.g:
            return Mechanism.THROTTLED
        if h.workers == 0 or h.workers < 0.6 * h.avail / m.g:
            return Mechanism.TOO_FEW_WORKERS
        return Mechanism.SATURATED
    if stage == "collective":
        inter_t = coll.inter_bytes / m.fab.node_bps if m.fab else 0.0
        intra_t = coll.intra_bytes / intra_bps if coll.intra_bytes else 0.0
        if m.nodes > 1 and inter_t >= intra_t:
            return Mechanism.NETWORK
        return Mechanism.NVLINK if m.nvlink else Mechanism.PCIE
    return {
        "host_memory": Mechanism.HOST_MEMORY_PRESSURE,
        "hbm": Mechanism.HBM_BANDWIDTH,
        "h2d": Mechanism.PCIE,
        "compute": Mechanism.COMPUTE,
        "launch": Mechanism.LAUNCH_BOUND,
    }[stage]
