"""A job's configuration: workload, hardware, cluster conditions, and the per-step costs they imply.

A job is drawn for a target class. Every stage gets a *level* (the step period it would impose on
its own, relative to the binding stage's 1.0); each level is then turned into the physical knob that
produces it (storage throughput, CPU cores, link bandwidth, HBM-bound share, swap stalls) and
clamped to what real hardware offers, so a level that no real cluster could produce is not
produced. The label is not taken from the target: :mod:`.label` reads it off the timeline.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familys.catalog import (
    GB,
    GPUS,
    REFERENCE_GPU,
    STORAGE_RANGES,
    WORKLOADS,
    Gpu,
    Storage,
    Workload,
)
from bottleneck_operator_dev.familys.timeline import Costs, FloatArray, PodCosts

TRAINER = ("h2d", "host_stall", "compute", "hbm", "collective")  # stages on the trainer's path
LOADER = ("read", "decode")  # stages on the loader's path (host_stall can sit on either)
FP32_SLOWDOWN = 2470 / 938  # ResNet-50 on A100: AMP vs TF32 throughput (DeepLearningExamples)
PREFETCH_FACTOR = 2  # PyTorch DataLoader's default

# Which workloads make each target stage plausible.
WORKLOADS_FOR: dict[str, tuple[str, ...]] = {
    "read": ("resnet50", "retinanet", "unet3d", "stable_diffusion", "rgat"),
    "decode": ("resnet50", "retinanet", "unet3d", "stable_diffusion", "rgat"),
    "host_stall": ("rgat", "dlrm_dcnv2", "resnet50", "unet3d", "bert"),
    "hbm": ("dlrm_dcnv2", "rgat", "bert", "gpt3"),
    "h2d": ("unet3d", "rgat", "retinanet", "stable_diffusion", "dlrm_dcnv2"),
    "collective": ("bert", "gpt3", "llama2_70b_lora", "stable_diffusion", "resnet50", "dlrm_dcnv2"),
    "compute": tuple(WORKLOADS),
}


@dataclass(frozen=True)
class Hardware:
    """The workload and the boards it runs on."""

    workload: Workload
    gpu: Gpu
    gpus_per_pod: int
    pods: int
    batch: int
    amp: bool
    power_limit_w: float
    clock: tuple[tuple[float, ...], ...]  # per pod, per board: share of the maximum clock it runs at


@dataclass(frozen=True)
class Cpu:
    """The loader's CPU: workers per rank, their cores, the pod's limit, the node and its neighbours."""

    workers: int
    avail: float
    limit: float | None
    node_cpus: int
    neighbour_cores: float
    shared: bool
    mechanism: Mechanism


@dataclass(frozen=True)
class Link:
    """The gradient collective's fabric, per-GPU bus bandwidth and per-step duration."""

    fabric: str
    busbw: float
    comm: float
    overlap: bool
    first_bucket: float


@dataclass(frozen=True)
class HostMemory:
    """Swap stalls per step (trainer or workers), swap-in pages/s while stalled, working set and limit."""

    trainer_stall: float
    worker_stall: float
    swap_pages_ps: float
    working_set_bytes: float
    limit_bytes: float | None
    pressure: bool


@dataclass(frozen=True)
class Scenario:
    """Everything the exporters need to know about a job besides its timeline."""

    hw: Hardware
    cpu: Cpu
    link: Link
    memory: HostMemory
    storage: Storage
    comm_bytes: float
    h2d_bps: float
    hbm_share: float
    neighbours: tuple[int, ...]
    costs: Costs

    # the names the exporters read
    workload = property(lambda self: self.hw.workload)
    gpu = property(lambda self: self.hw.gpu)
    gpus_per_pod = property(lambda self: self.hw.gpus_per_pod)
    pods = property(lambda self: self.hw.pods)
    amp = property(lambda self: self.hw.amp)
    power_limit_w = property(lambda self: self.hw.power_limit_w)
    clock = property(lambda self: self.hw.clock)
    workers = property(lambda self: self.cpu.workers)
    worker_cores = property(lambda self: self.cpu.avail)
    cpu_limit = property(lambda self: self.cpu.limit)
    node_cpus = property(lambda self: self.cpu.node_cpus)
    neighbour_cores = property(lambda self: self.cpu.neighbour_cores)
    decode_mechanism = property(lambda self: self.cpu.mechanism)
    fabric = property(lambda self: self.link.fabric)
    host_pressure = property(lambda self: self.memory.pressure)
    swap_pages_ps = property(lambda self: self.memory.swap_pages_ps)
    mem_limit_bytes = property(lambda self: self.memory.limit_bytes)
    working_set_bytes = property(lambda self: self.memory.working_set_bytes)


def _levels(rng: np.random.Generator, target: str, stages: list[str], hard: bool) -> tuple[dict[str, float], str]:
    """The stages' levels: the target at 1, one runner-up near it (hard) or well below, the rest small."""
    others = [s for s in stages if s != target and not (target in ("hbm", "host_stall") and s in ("hbm", "host_stall"))]
    others = [s for s in others if not ({s, target} <= {"h2d", "collective"})]
    runner = str(rng.choice(others))
    levels = {s: 0.0 for s in stages}
    levels[target] = 1.0
    levels[runner] = float(rng.uniform(0.78, 0.95) if hard else rng.uniform(0.15, 0.6))
    for s in stages:
        if s not in (target, runner):
            levels[s] = float(rng.uniform(0.02, 0.5)) * levels[runner]
    if "host_stall" in stages and "host_stall" not in (target, runner):
        levels["host_stall"] = 0.0  # a host without memory pressure does not stall
    # the other path (loader or trainer) must leave the target's path binding
    own = LOADER if target in LOADER else TRAINER
    own_sum = sum(levels[s] for s in own if s in levels)
    own_max_other = max((levels[s] for s in own if s in levels and s != target), default=0.0)
    other = [s for s in stages if s not in own]
    other_sum = sum(levels[s] for s in other)
    room = own_sum - own_max_other
    cap = room * (float(rng.uniform(0.85, 0.97)) if hard and runner in other else float(rng.uniform(0.3, 0.85)))
    if other_sum > 0:
        for s in other:
            levels[s] *= cap / other_sum
    return levels, runner


def _shape(rng: np.random.Generator, gpu: Gpu, target: str) -> tuple[int, int]:
    """GPUs per pod and pods (one pod per node); a collective needs two GPUs or more."""
    g = int(rng.choice((1, 2, 4, 8) if gpu.nvlink_bps > 0 else (1, 2, 4)))
    pods = int(rng.choice((1, 1, 1, 2, 2, 3, 4)))
    if target == "collective" and g * pods < 2:
        pods = int(rng.choice((2, 3, 4))) if rng.random() < 0.6 else 1
        g = max(g, 2) if pods == 1 else g
    return g, pods


def _clocks(rng: np.random.Generator, gpu: Gpu, g: int, pods: int) -> tuple[float, tuple[tuple[float, ...], ...]]:
    """The enforced power limit and each board's clock factor: a capped board slows its compute kernels."""
    capped = rng.random() < 0.25
    power_limit = gpu.tdp_w * (float(rng.uniform(0.6, 0.9)) if capped else 1.0)
    cap_clock = min(1.0, ((power_limit - gpu.idle_w) / (gpu.tdp_w - gpu.idle_w)) ** 0.6)
    # boards differ by a few percent at the same settings
    clock = tuple(tuple(float(cap_clock * rng.uniform(0.96, 1.0)) for _ in range(g)) for _ in range(pods))
    return power_limit, clock


def _collective(
    rng: np.random.Generator, gpu: Gpu, g: int, pods: int, comm_bytes: float, exposed: float, bwd: float, dlrm: bool
) -> Link:
    """The collective: the per-GPU bus bandwidth of a fabric that would expose ``exposed`` seconds a step."""
    overlap = bool(rng.random() < 0.7) and not dlrm  # DLRM's all-to-all sits on the path
    first_bucket = float(rng.uniform(0.15, 0.35))
    n = g * pods
    if n < 2:
        return Link("none", 0.0, 0.0, overlap, first_bucket)
    hidden = (1 - first_bucket) * bwd
    wanted = exposed + hidden if overlap else exposed
    if overlap and exposed / 0.15 <= hidden / 0.85:
        wanted = exposed / 0.15
    need = 2 * (n - 1) / n * comm_bytes / max(wanted, 1e-9)
    nvlinked = gpu.nvlink_bps > 0
    intra = gpu.nvlink_bps * float(rng.uniform(0.7, 0.85)) if nvlinked else gpu.pcie_bps * float(rng.uniform(0.3, 0.6))
    if pods > 1:
        # per-node NIC bandwidth, shared by the node's GPUs: TCP Ethernet or RDMA (IB/RoCE)
        per_node = need * g
        if per_node < 12.5 * GB * 0.6:
            fabric, lo, hi, eff = "tcp", 10e9 / 8, 100e9 / 8, 0.6
        else:
            fabric = "ib" if rng.random() < 0.6 else "roce"
            lo, hi, eff = 100e9 / 8, 8 * 400e9 / 8, 0.85
        busbw = min(intra, float(np.clip(per_node / eff, lo, hi)) * eff / g)
    else:
        fabric, busbw = ("nvlink" if nvlinked else "pcie"), intra
    return Link(fabric, busbw, 2 * (n - 1) / n * comm_bytes / busbw, overlap, first_bucket)


def _storage(rng: np.random.Generator, pod_bps: float, readers: int) -> Storage:
    """The storage kind whose range holds the wanted throughput, clamped to that range."""
    kinds = [k for k, (lo, hi) in STORAGE_RANGES.items() if lo <= pod_bps <= hi]
    kind = str(rng.choice(kinds)) if kinds else ("nvme" if pod_bps > 7 * GB else "pvc-throttled")
    lo, hi = STORAGE_RANGES[kind]
    cap = float(np.clip(pod_bps, lo, hi))
    stream = cap / readers if kind == "object-store" else math.inf  # one HTTP stream per reader
    block, network = kind in ("nvme", "sata", "pvc-throttled"), kind in ("nfs", "object-store")
    return Storage(kind, cap, stream, block, network, kind != "object-store")


def _cpu(rng: np.random.Generator, target: str, g: int, cores_needed: float) -> Cpu:
    """Workers, cores and the CPU limit that give each rank ``cores_needed`` cores of decoding."""
    workers = int(rng.choice((2, 4, 6, 8, 10, 12, 16)))
    node_cpus = int(rng.choice((32, 48, 64, 96, 128)))
    limit: float | None = None
    mech = Mechanism.SATURATED
    if target == "decode":
        mech = Mechanism(str(rng.choice([Mechanism.THROTTLED, Mechanism.SATURATED, Mechanism.TOO_FEW_WORKERS])))
        if mech is Mechanism.TOO_FEW_WORKERS and cores_needed > 6:
            mech = Mechanism.THROTTLED
    if mech is Mechanism.TOO_FEW_WORKERS:
        workers = max(1, round(cores_needed))
        avail = float(workers + 2)
        limit = float(g * (workers + 3)) if rng.random() < 0.5 else None
    elif mech is Mechanism.THROTTLED or (target != "decode" and rng.random() < 0.5):
        mech = Mechanism.THROTTLED
        avail = max(0.5, cores_needed)
        workers = min(32, max(workers, math.ceil(avail) + 1))
        limit = round(g * (avail + 1.0) * 2) / 2  # the pod's limit: workers' cores plus one per trainer
        avail = limit / g - 1.0
    else:
        avail = max(0.5, cores_needed)
        workers = min(32, max(workers, math.ceil(avail) + 1))
    avail = min(avail, (node_cpus - 2.0 * g) / g)
    if limit is not None:
        limit = min(limit, float(node_cpus))
    alone = mech is Mechanism.SATURATED and limit is None
    shared = alone or rng.random() < 0.35
    if alone:
        neighbours = max(0.0, node_cpus - g * (1.0 + avail))  # neighbours hold the rest of the node
    else:
        neighbours = node_cpus * float(rng.uniform(0.05, 0.4)) if shared else 0.0
    return Cpu(workers, avail, limit, node_cpus, neighbours, shared, mech)


def _jittered(rng: np.random.Generator, k_steps: int, mean: float, sigma: float) -> FloatArray:
    out: FloatArray = mean * rng.lognormal(-sigma * sigma / 2, sigma, k_steps)
    return out


def _costs(
    rng: np.random.Generator, means: dict[str, float], clock: tuple[tuple[float, ...], ...], workers: int, link: Link
) -> Costs:
    """Per-step draws: every stage jitters a little; the same draws serve every removal experiment."""
    step_est = max(
        means["compute"] + means["hbm"] + means["h2d"] + means["trainer_stall"],
        (means["read"] + means["decode"] + means["worker_stall"]) / workers,
    )
    k_steps = int(np.clip(round(15.0 / max(step_est, 1e-3)), 24, 60))
    depth = workers * PREFETCH_FACTOR
    warmup = min(k_steps // 2, depth + 6)
    k_steps += warmup
    clk = float(np.mean(clock))
    sigmas = {"read": 0.12, "worker_stall": 0.3, "decode": 0.08, "h2d": 0.04, "trainer_stall": 0.3}
    pods = []
    for pod_clock in clock:
        straggle = float(np.mean(pod_clock)) / clk  # a pod of slower boards computes longer
        d = {k: _jittered(rng, k_steps, means[k], sg) for k, sg in sigmas.items()}
        pods.append(
            PodCosts(
                **d,
                compute=_jittered(rng, k_steps, means["compute"] / straggle, 0.02),
                hbm=_jittered(rng, k_steps, means["hbm"] * 0.85, 0.02),
                optimizer=_jittered(rng, k_steps, means["hbm"] * 0.15, 0.02),
                workers=workers,
                depth=depth,
            )
        )
    return Costs(tuple(pods), _jittered(rng, k_steps, link.comm, 0.08), link.overlap, link.first_bucket, warmup)


def _hardware(rng: np.random.Generator, target: str) -> Hardware:
    wl = WORKLOADS[str(rng.choice(WORKLOADS_FOR[target]))]
    gpu = GPUS[str(rng.choice([k for k, b in GPUS.items() if b.memory_gb >= wl.min_memory_gb]))]
    g, pods = _shape(rng, gpu, target)
    batch = int(rng.integers(wl.batch[0], wl.batch[1] + 1))
    amp = bool(rng.random() < 0.85)
    power_limit, clock = _clocks(rng, gpu, g, pods)
    return Hardware(wl, gpu, g, pods, batch, amp, power_limit, clock)


def _gpu_times(hw: Hardware, levels: dict[str, float]) -> tuple[float, float, float]:
    """The HBM-bound share that gives the levels' ratio, and the compute and HBM-bound seconds per step."""
    wl, gpu = hw.workload, hw.gpu
    g_c = hw.batch * wl.gpu_s * (REFERENCE_GPU.tflops / gpu.tflops) * (1.0 if hw.amp else FP32_SLOWDOWN)
    g_c /= float(np.mean(hw.clock))
    g_m = hw.batch * wl.gpu_s * (REFERENCE_GPU.hbm_bps / gpu.hbm_bps)
    q = levels["hbm"] / levels["compute"]
    share = float(np.clip(q * g_c / (g_m + q * g_c), 0.05, 0.9))
    return share, (1 - share) * g_c, share * g_m


def _host_memory(rng: np.random.Generator, hw: Hardware, stall: float, workers: int, pressure: bool) -> HostMemory:
    """Swap-in stalls in the trainer or in the loader workers, and a memory limit close to the working set."""
    trainer_stall = worker_stall = swap_pages = 0.0
    if pressure:
        if hw.workload.name in ("rgat", "unet3d") or rng.random() < 0.4:
            worker_stall = stall * workers  # workers touch swapped-out features
        else:
            trainer_stall = stall
        swap_pages = float(rng.uniform(15e3, 60e3))  # tens of thousands of major faults per second
    working = (hw.workload.host_gb * hw.gpus_per_pod + 2.0 * workers + 6.0) * GB
    roomy = working * float(rng.uniform(1.5, 3.0)) if rng.random() < 0.7 else None
    limit = working * float(rng.uniform(1.02, 1.1)) if pressure else roomy
    return HostMemory(trainer_stall, worker_stall, swap_pages, working, limit, pressure)


def draw(rng: np.random.Generator, target: str, hard: bool) -> Scenario:
    """A job whose target stage should bind (the timeline decides whether it does).

    Args:
        rng: the job's generator.
        target: a stage of :data:`~.timeline.STAGES`.
        hard: give one stage of another class a level close to the target's.
    """
    hw = _hardware(rng, target)
    wl, g = hw.workload, hw.gpus_per_pod
    stages = ["read", "decode", "h2d", "compute", "hbm"] + (["collective"] if g * hw.pods > 1 else [])
    pressure = target == "host_stall" or (rng.random() < 0.25)
    levels, _runner = _levels(rng, target, stages + (["host_stall"] if pressure else []), hard)
    hbm_share, compute, hbm_total = _gpu_times(hw, levels)
    tau = compute / levels["compute"]  # the unit of the levels: seconds per step
    # host-to-device copies: the effective copy rate (pageable copies run far below the link)
    h2d_bytes = hw.batch * wl.h2d_bytes
    h2d_bps = float(np.clip(h2d_bytes / max(levels["h2d"] * tau, 1e-9), 1.0 * GB, 0.85 * hw.gpu.pcie_bps))
    comm_bytes = wl.comm_bytes * (hw.batch if wl.comm_per_sample else 1.0)
    bwd = (compute + hbm_total * 0.85) * (1 - 1 / 3)
    exposed = levels.get("collective", 0.0) * tau
    link = _collective(rng, hw.gpu, g, hw.pods, comm_bytes, exposed, bwd, wl.comm_per_sample)
    # the loader: each GPU's rank has its own DataLoader; the pod's ranks share storage and cores
    cpu = _cpu(rng, target, g, hw.batch * wl.cpu_s / max(levels["decode"] * tau, 1e-9))
    per_batch = hw.batch * wl.sample_bytes
    storage = _storage(rng, g * per_batch / max(levels["read"] * tau, 1e-9), g * cpu.workers)
    mem = _host_memory(rng, hw, levels.get("host_stall", 0.0) * tau, cpu.workers, pressure)
    means = {
        "read": per_batch / min(storage.stream_bps, storage.bps / (g * cpu.workers)),
        "worker_stall": mem.worker_stall,
        "decode": hw.batch * wl.cpu_s * max(1.0, cpu.workers / cpu.avail),
        "h2d": h2d_bytes / h2d_bps,
        "trainer_stall": mem.trainer_stall,
        "compute": compute,
        "hbm": hbm_total,
    }
    costs = _costs(rng, means, hw.clock, cpu.workers, link)
    neighbours = tuple(int(rng.integers(1, 6)) if cpu.shared else 0 for _ in range(hw.pods))
    return Scenario(hw, cpu, link, mem, storage, comm_bytes, h2d_bps, hbm_share, neighbours, costs)


def mechanism_of(stage: str, sc: Scenario) -> Mechanism:
    """How the binding stage limits the job, from the configuration that made it bind."""
    if stage == "read":
        return Mechanism.NETWORK_STORAGE if sc.storage.network else Mechanism.LOCAL_DISK
    if stage == "decode":
        if sc.cpu_limit is not None and sc.decode_mechanism is not Mechanism.TOO_FEW_WORKERS:
            return Mechanism.THROTTLED
        return sc.decode_mechanism if sc.decode_mechanism is Mechanism.TOO_FEW_WORKERS else Mechanism.SATURATED
    if stage == "host_stall":
        return Mechanism.HOST_MEMORY_PRESSURE
    if stage == "hbm":
        return Mechanism.HBM_BANDWIDTH
    if stage == "h2d":
        return Mechanism.PCIE
    if stage == "collective":
        return {"nvlink": Mechanism.NVLINK, "pcie": Mechanism.PCIE}.get(sc.fabric, Mechanism.NETWORK)
    return Mechanism.COMPUTE


STAGE_OF_CLASS: dict[Bottleneck, tuple[str, ...]] = {
    Bottleneck.IO: ("read",),
    Bottleneck.CPU: ("decode",),
    Bottleneck.INTERCONNECT: ("collective", "h2d"),
    Bottleneck.GPU: ("compute",),
    Bottleneck.MEMORY: ("host_stall", "hbm"),
}
