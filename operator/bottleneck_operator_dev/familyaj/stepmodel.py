"""The training step as a pipeline of stages, and what each stage costs one pod in one segment.

Data-loader workers read and decode ahead of the GPU (in parallel with it, unless loading runs in
the training process); the GPU side copies the batch in, runs the kernels the host dispatches, and
synchronises gradients, partly hidden behind the backward pass; refaults stall everything. A pod's
step is the slower of its input side and its GPU side; a synchronous Job steps at its slowest pod.

"Made ample" removes a stage's cost: the stage whose removal shortens the Job's step most is what
limits it.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from bottleneck_operator_dev.familyaj.fleet import Neighbours, Placement, storage_bps
from bottleneck_operator_dev.familyaj.workload import Workload

PARTS = ("read", "cpu", "h2d", "intra", "inter", "compute", "hbm", "launch", "memstall")


@dataclass(frozen=True)
class Stages:
    """Seconds one pod spends per step in each stage (before overlap), and what bounds its CPU.

    Attributes:
        read, cpu, h2d, intra, inter, compute, hbm, launch, memstall: stage costs (see ``PARTS``).
        fixed: optimizer and framework time that no stage owns.
        overlap: share of the kernel time communication hides behind.
        serial_input: loading runs in the training process (no workers): input adds to the step.
        cpu_bound_by: "workers", "limit" or "node": which cap sets the CPU stage's cores.
        cpu_cores: cores the input pipeline can use.
        read_bps, intra_bps, inter_bps, pcie_bps: capacities the stages ran against.
        intra_link: "nvlink" or "pcie".
        clock: SM clock factor (power limit), slowest GPU.
    """

    read: float
    cpu: float
    h2d: float
    intra: float
    inter: float
    compute: float
    hbm: float
    launch: float
    memstall: float
    fixed: float
    overlap: float
    serial_input: bool
    cpu_bound_by: str
    cpu_cores: float
    read_bps: float
    intra_bps: float
    inter_bps: float
    pcie_bps: float
    intra_link: str
    clock: float

    def part(self, name: str) -> float:
        value: float = getattr(self, name)
        return value


def pod_step(st: Stages, ample: Collection[str] = ()) -> float:
    """Seconds per step of one pod with the ``ample`` stages made free."""
    p = {name: (0.0 if name in ample else st.part(name)) for name in PARTS}
    kernels = p["compute"] + p["hbm"]
    core = max(kernels, p["launch"])
    comm = p["intra"] + p["inter"]
    exposed = max(comm - st.overlap * kernels, 0.0)
    gpu_side = core + exposed + p["h2d"] + st.fixed
    pipelined = max(p["read"], p["cpu"]) + 0.1 * min(p["read"], p["cpu"])
    if st.serial_input:
        return p["read"] + p["cpu"] + gpu_side + p["memstall"]
    return max(pipelined, gpu_side) + p["memstall"]


def clock_factor(w: Workload, pl: Placement, busy_compute: float, busy_memory: float) -> float:
    """The SM clock share a power limit leaves, from the power the kernels would draw at full clock.

    Power grows roughly with the cube of the clock near the top of the curve (voltage with it), so
    a limit below the demand lowers the clock by the cube root of the ratio.
    """
    gpu = pl.gpu
    activity = 0.15 + 0.85 * min(1.0, 0.95 * busy_compute * (0.6 + 0.4 * w.tensor_share) + 0.55 * busy_memory)
    demand = gpu.idle_w + (gpu.tdp_w - gpu.idle_w) * activity
    if demand <= pl.power_limit_w:
        return 1.0
    ratio = (pl.power_limit_w - gpu.idle_w) / (demand - gpu.idle_w)
    return float(max(0.55, ratio ** (1.0 / 3.0)))


def _cpu(w: Workload, pl: Placement, nb: Neighbours, load: float) -> tuple[float, float, str]:
    """Cores the input pipeline gets, what caps them, and its seconds per step."""
    g = pl.gpus_per_pod
    work = w.batch * g * w.cpu_s
    if not pl.storage.local and pl.storage.reader == "http":
        work += w.batch * g * w.read_bytes * (1 - w.cache_hit) * 1.5e-9  # TLS and socket copies
    parallel = float(max(w.workers, 1) * g) * (0.92 if w.workers else 0.6)
    caps = {"workers": parallel}
    if w.cpu_limit is not None:
        main = g * 0.6
        caps["limit"] = max(w.cpu_limit - main, 0.15 * w.cpu_limit)
    others = nb.cpu_cores * load
    free = 0.95 * pl.kind.cpus - others
    fair = 0.95 * pl.kind.cpus * parallel / (parallel + others) if others > 0 else free
    caps["node"] = max(free, fair, 0.5)
    bound = min(caps, key=lambda k: caps[k])
    cores = caps[bound]
    return cores, work / cores, bound


def stages(w: Workload, pl: Placement, pod: int, seg: int, clock: float = 1.0) -> Stages:
    """What one pod's step costs in one segment, at an SM clock factor."""
    nb, load, server = pl.neighbours[pod], float(pl.seg_load[seg]), float(pl.seg_server[seg])
    g, gpu, kind = pl.gpus_per_pod, pl.gpu, pl.kind
    samples = w.batch * g * (1.0 - w.cache_hit)
    read_bps = storage_bps(pl, nb, load, server)
    concurrency = max(w.workers, 1) * g * 2.0
    read = samples * w.read_bytes / read_bps + samples / w.samples_per_request * pl.storage.latency_s / concurrency
    launch = w.kernels * w.dispatch_s
    cores, cpu, bound = _cpu(w, pl, nb, load)
    share = min(g, kind.gpus_per_pcie_switch)
    pcie = gpu.pcie_bps * 0.85 / share
    h2d_bw = pcie * (1.0 if w.pinned else 0.45)
    h2d = w.batch * w.dev_bytes / h2d_bw * (0.3 if w.pinned else 1.0) + 0.85 * w.offload_bytes / (pcie * share)
    if gpu.nvlink_bps > 0:
        intra_bps, link = 0.8 * gpu.nvlink_bps, "nvlink"
    else:
        intra_bps, link = 0.5 * gpu.pcie_bps / share, "pcie"
    intra = (2.0 * (g - 1) / g * w.grad_bytes * w.comm_factor + w.tp_bytes) / intra_bps if g > 1 else 0.0
    eff = {"ib": 0.92, "roce": 0.85, "tcp": 0.6}[kind.fabric]
    nic_used = (nb.rdma_bps if kind.fabric != "tcp" else nb.eth_bps) * load
    inter_bps = max(eff * kind.nic_bps - nic_used, 0.1 * kind.nic_bps)
    n = pl.pods
    inter = 2.0 * (n - 1) / n * w.grad_bytes * w.comm_factor / inter_bps if n > 1 else 0.0
    hbm = w.batch * w.hbm_bytes / (0.8 * gpu.hbm_bps)
    # a stream of tiny kernels still costs each kernel its shortest run
    compute = max(w.batch * w.flops / (gpu.tflops * 1e12 * w.mfu * clock), w.kernels * w.kernel_floor_s - hbm)
    memstall = w.thrash_bytes / 4096.0 * w.fault_s
    return Stages(
        read=read,
        cpu=cpu,
        h2d=h2d,
        intra=intra,
        inter=inter,
        compute=compute,
        hbm=hbm,
        launch=launch,
        memstall=memstall,
        fixed=0.02 * (compute + hbm) + 0.002,
        overlap=w.overlap,
        serial_input=w.workers == 0,
        cpu_bound_by=bound,
        cpu_cores=cores,
        read_bps=read_bps,
        intra_bps=intra_bps,
        inter_bps=inter_bps,
        pcie_bps=pcie,
        intra_link=link,
        clock=clock,
    )


def settled_stages(w: Workload, pl: Placement, pod: int, seg: int) -> Stages:
    """Stages at the clock the power limit settles on (two passes of the fixed point)."""
    st = stages(w, pl, pod, seg)
    for _ in range(2):
        t = pod_step(st)
        clock = clock_factor(w, pl, st.compute / t, st.hbm / t)
        slowest = clock * float(pl.clock_spread[pod].min())
        st = stages(w, pl, pod, seg, slowest)
    return st
