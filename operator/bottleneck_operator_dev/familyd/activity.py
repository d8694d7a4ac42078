"""What a job does over time, per pod, on the simulation grid: the truth the exporters sample.

The step account (:func:`.stages.account`) is evaluated at every grid point with each stage's time
wandering around its plan (storage and networks wander most, kernels least), and checkpoint pauses
stop the step. From the account come time shares (kernels, waits), byte rates (storage, PCIe,
NVLink, the fabric) and host figures (cores, stalls, faults), all per pod, shape (pods, grid).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from bottleneck_operator_dev.familyd.hardware import GB
from bottleneck_operator_dev.familyd.stages import FloatArray, Plan, account
from bottleneck_operator_dev.familyd.workload import Workload, inter_node_bytes, intra_node_bytes
from bottleneck_operator_dev.familyd.world import Rng, Setup

# CPU spent per GB/s read, by storage: local block reads ~0.1 core, NFS's RPC layer more, an HTTPS
# object-store client (TLS, HTTP parsing, copying) about a core (estimates).
IO_CORES_PER_GBPS = {
    "nvme": 0.1,
    "sata": 0.1,
    "cloud-volume": 0.12,
    "iomax": 0.1,
    "mmap": 0.15,
    "nfs": 0.35,
    "object-store": 1.1,
}
# The kernel's TCP stack costs roughly a core per GB/s each way; RDMA bypasses it.
TCP_CORES_PER_GBPS = 0.8
# Storage whose readers sleep in D state (iowait, io pressure).
DSTATE = {"nvme", "sata", "cloud-volume", "iomax", "mmap", "nfs"}
BLOCK = {"nvme", "sata", "cloud-volume", "iomax", "mmap"}
# A stall share of exactly 1 would need a stalled task at every instant of every scrape interval;
# real PSI totals stop short of that, and rate() over jittered scrapes would read it above 1.
STALL_CEILING = 0.97


def wander(rng: Rng, shape: tuple[int, ...], sigma: float, width: int) -> FloatArray:
    """A slowly wandering multiplicative factor around 1 (log-normal, box-smoothed white noise)."""
    z = rng.standard_normal((*shape[:-1], shape[-1] + width))
    c = np.cumsum(z, axis=-1)
    smooth = (c[..., width:] - c[..., :-width]) / np.sqrt(width)
    return np.asarray(np.exp(sigma * smooth - sigma * sigma / 2.0), dtype=np.float64)


def pauses(setup: Setup, grid: FloatArray, rng: Rng) -> FloatArray:
    """1.0 where the job is paused for a checkpoint, else 0.0, shape (grid,)."""
    if setup.checkpoint is None:
        return np.zeros(grid.size)
    period, duration = setup.checkpoint
    phase = float(rng.uniform(0, period))
    return np.asarray(((grid - grid[0] + phase) % period) < duration, dtype=np.float64)


@dataclass(frozen=True)
class PodActivity:
    """Per pod, per grid point (shape (pods, grid)); rates per second, shares of time.

    Attributes:
        busy: share of time any kernel runs (what GPU_UTIL samples).
        math, hbm, nccl: shares of time in math-bound, HBM-bound and NCCL kernels (waits included).
        step: the step time, s.
        h2d_bps, d2h_bps: PCIe bytes/s per GPU into / out of the GPU (copies, peer traffic, RDMA).
        nvlink_bps: NVLink bytes/s per GPU, both directions together.
        read_bps: storage bytes/s the pod reads.
        block_bps: the part (plus refaults) that is block-device I/O of the pod's cgroup.
        net_rx, net_tx: the pod's share of TCP bytes/s on the node (storage and collectives).
        ib_rx, ib_tx: its share of RDMA bytes/s.
        cores, system_cores, demand: CPU used, its kernel part, and what was wanted (cores).
        io_wait: share of time some pod task waits on I/O; io_full: all of them.
        mem_wait, mem_full: the same for memory (reclaim, swap-in, refaults).
        majfault, swapin: per second; dstate: processes in D state on average.
        loader_busy: loader cores used over loader processes (how saturated each worker is).
        paused: 1.0 during a checkpoint pause.
    """

    busy: FloatArray
    math: FloatArray
    hbm: FloatArray
    nccl: FloatArray
    step: FloatArray
    h2d_bps: FloatArray
    d2h_bps: FloatArray
    nvlink_bps: FloatArray
    read_bps: FloatArray
    block_bps: FloatArray
    net_rx: FloatArray
    net_tx: FloatArray
    ib_rx: FloatArray
    ib_tx: FloatArray
    cores: FloatArray
    system_cores: FloatArray
    demand: FloatArray
    io_wait: FloatArray
    io_full: FloatArray
    mem_wait: FloatArray
    mem_full: FloatArray
    majfault: FloatArray
    swapin: FloatArray
    dstate: FloatArray
    loader_busy: FloatArray
    paused: FloatArray

    def at(self, pod: int) -> dict[str, FloatArray]:
        return {f.name: getattr(self, f.name)[pod] for f in fields(self)}


def _wandering_plan(rng: Rng, setup: Setup, w: Workload, plan: Plan, n: int) -> Plan:
    pods = setup.pods
    io_sigma = 0.25 if w.io_kind in ("nfs", "object-store", "cloud-volume") else 0.08
    common = wander(rng, (1, n), float(rng.uniform(0.04, 0.15)), 12)
    cols = {f.name: np.asarray(getattr(plan, f.name), dtype=np.float64).reshape(pods, 1) for f in fields(plan)}
    base = Plan(**cols)
    return base.scaled(
        read=wander(rng, (pods, n), io_sigma * float(rng.uniform(0.5, 1.2)), 8),
        decode=wander(rng, (pods, n), float(rng.uniform(0.02, 0.08)), 6),
        network=common * wander(rng, (pods, n), 0.03, 6),
        math=wander(rng, (pods, n), 0.015, 4),
        hbm=wander(rng, (pods, n), 0.015, 4),
        swap_main=wander(rng, (pods, n), 0.2, 10),
    )


def _link_rates(setup: Setup, w: Workload, step: FloatArray, run: FloatArray) -> dict[str, FloatArray]:
    """Bytes/s per GPU on PCIe and NVLink, and per pod on the fabric."""
    intra = intra_node_bytes(setup, w.grad_bytes)
    inter_pod = inter_node_bytes(setup, w.grad_bytes) / setup.pods_per_node
    nvlink = setup.board.nvlink_bps > 0
    fab = setup.fabric
    peer = 0.0 if nvlink else intra
    # collectives leave and enter the GPU through PCIe when they cross nodes (GPUDirect or staged)
    cross = inter_pod / setup.gpus
    h2d = (w.h2d_bytes + peer + cross) / step * run
    d2h = (w.h2d_bytes * 0.01 + peer + cross) / step * run
    nv = (2.0 * intra + 2.0 * w.tp_bytes) / step * run if nvlink else np.zeros_like(step)
    tcp = inter_pod / step * run if fab is not None and not fab.rdma else np.zeros_like(step)
    rdma = inter_pod / step * run if fab is not None and fab.rdma else np.zeros_like(step)
    return {"h2d": h2d, "d2h": d2h, "nvlink": nv, "tcp": tcp, "rdma": rdma}


def _cpu(
    setup: Setup, w: Workload, acc_busy: FloatArray, decode: FloatArray, extra: FloatArray, rng: Rng
) -> tuple[FloatArray, FloatArray]:
    """(cores used, cores wanted) of the trainer container.

    Each loader worker is busy for the decode stage's share of the step; when there are more
    workers than cores to run them (a CPU limit, a full node), they want more than they get.
    """
    mains = setup.gpus * w.main_cores * (0.35 + 0.65 * acc_busy)
    wanted = decode * np.maximum(w.workers / w.loader_cores[:, None], 1.0)
    demand = wanted + mains + extra
    # without a limit, a pod gets what its node's other tenants leave (and the node's daemons)
    left = (
        setup.node_cpus - w.neighbour_cores[np.arange(setup.pods) // setup.pods_per_node] - 0.8
    ) / setup.pods_per_node
    cap = np.full((setup.pods, 1), setup.cpu_limit * 0.995) if setup.cpu_limit is not None else left[:, None] * 0.99
    used = np.minimum(demand, cap) * (1.0 - 0.01 * np.abs(rng.standard_normal(demand.shape)))
    return np.maximum(used, 0.0), demand


def _faults(rng: Rng, setup: Setup, w: Workload, swap_share: FloatArray, read: FloatArray) -> dict[str, FloatArray]:
    """Swap-ins, major faults and refault reads per second, per pod.

    Under pressure with swap, stalled processes fault pages back from swap (a fault every
    60-200 us of stall, an estimate for SSD or zram swap; readahead brings several pages per
    fault); without swap, evicted file pages (code, mapped data) are read back instead. A
    memory-mapped dataset reads through major faults too, which is I/O, not memory pressure.
    """
    procs = setup.gpus + w.workers + 3.0
    none = np.zeros_like(read)
    swapin, majfault, refault = none, none, none
    if w.mem_kind == "swap":
        swapin = swap_share * procs / float(rng.uniform(6e-5, 2e-4))
        majfault = swapin * float(rng.uniform(0.3, 0.8))
    elif w.mem_kind == "thrash":
        majfault = swap_share * procs / float(rng.uniform(1.5e-4, 4e-4))
        refault = majfault * 32768.0
    if w.io_kind == "mmap":
        majfault = majfault + read / (4096.0 * float(rng.uniform(4, 32)))
    return {"swapin": swapin, "majfault": majfault + float(rng.uniform(0.0, 2.0)), "refault": refault}


def _stalls(
    rng: Rng, w: Workload, storage_busy: FloatArray, swap_share: FloatArray, decode: FloatArray
) -> dict[str, FloatArray]:
    """The pod cgroup's I/O and memory pressure, and its processes in D state.

    Readers of block devices and NFS sleep in D state while a read is in flight, so "some" I/O
    pressure follows the storage's busy share; object-store readers wait in socket receive (S
    state) and leave no trace there. "full" needs every non-idle task stalled, which busy
    decoding workers prevent.
    """
    dstate_reader = w.io_kind in DSTATE
    io_wait = storage_busy * (float(rng.uniform(0.85, 1.02)) if dstate_reader else 0.02)
    io_wait = np.minimum(io_wait + 0.3 * swap_share * (w.mem_kind == "thrash"), STALL_CEILING)
    decoding = np.minimum(decode / np.maximum(w.loader_cores[:, None], 1), 1)
    io_full = io_wait * float(rng.uniform(0.3, 0.7)) * (1.0 - 0.5 * decoding)
    # a little reclaim now and then on any busy host (page cache churn), more under pressure
    mem_wait = np.minimum(swap_share * float(rng.uniform(1.0, 1.35)) + float(rng.uniform(0.0, 0.004)), STALL_CEILING)
    # Little's law: readers in D state = reads in flight, which the storage needs a handful of to
    # stay busy (queue depth or RPC slots), bounded by the workers that can issue them
    in_flight = min(float(w.workers), float(rng.uniform(2.0, 12.0)))
    return {
        "io_wait": io_wait,
        "io_full": io_full,
        "mem_wait": mem_wait,
        "mem_full": mem_wait * float(rng.uniform(0.35, 0.75)),
        "dstate": in_flight * io_wait if dstate_reader else np.zeros_like(io_wait),
    }


def simulate(rng: Rng, setup: Setup, w: Workload, plan: Plan, grid: FloatArray) -> PodActivity:
    """The job's activity on the grid."""
    p = _wandering_plan(rng, setup, w, plan, grid.size)
    acc = account(p, setup.total_gpus > 1)
    step = acc.step
    paused = pauses(setup, grid, rng)[None, :] * np.ones((setup.pods, 1))
    run = 1.0 - paused
    busy = np.minimum((acc.compute + acc.comm_exposed + acc.wait) / step, 1.0) * run
    links = _link_rates(setup, w, step, run)
    read = w.read_bytes[:, None] / step * run
    swap_share = np.minimum((p.swap_main + p.swap_workers) / step, 1.0) * run
    faults = _faults(rng, setup, w, swap_share, read)
    io_cores = read / GB * IO_CORES_PER_GBPS[w.io_kind]
    tcp_cores = (links["tcp"] * 2.0) / GB * TCP_CORES_PER_GBPS
    reclaim = swap_share * setup.gpus * float(rng.uniform(0.3, 1.0))
    decode = w.cpu_work[:, None] / step * run
    kernel = io_cores + tcp_cores + reclaim
    cores, demand = _cpu(setup, w, busy, decode, kernel + paused, rng)
    stalls = _stalls(rng, w, np.minimum(p.read / step, 1.0) * run, swap_share, decode)
    remote = w.io_kind in ("nfs", "object-store")
    return PodActivity(
        busy=busy,
        math=p.math / p.clock / step * run,
        hbm=p.hbm / step * run,
        nccl=np.minimum((acc.comm_total + acc.wait) / step, 1.0) * run,
        step=step,
        h2d_bps=links["h2d"],
        d2h_bps=links["d2h"],
        nvlink_bps=links["nvlink"],
        read_bps=read,
        block_bps=(read if w.io_kind in BLOCK else 0.0 * read) + faults["refault"],
        net_rx=read * (1.03 if remote else 0.0) + links["tcp"],
        net_tx=read * (0.02 if remote else 0.0) + links["tcp"],
        ib_rx=links["rdma"],
        ib_tx=links["rdma"],
        cores=cores,
        system_cores=kernel + 0.08 * (cores - kernel).clip(0),
        demand=demand,
        majfault=faults["majfault"],
        swapin=faults["swapin"],
        loader_busy=np.minimum(decode / max(w.workers, 1), 1.0),
        paused=paused,
        **stalls,
    )
