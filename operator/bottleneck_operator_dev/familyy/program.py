"""The steady state of a training Job as a linear program, and its shadow prices.

Per GPU, the Job chooses two rates: ``x``, the samples per second it trains, and ``g``, the samples per
second whose JPEG/video decode runs on the GPU instead of the loader's cores (0 unless the pipeline
can decode on the GPU). It maximises ``x`` subject to one row per shared resource::

    cores    x (dec + read (1-h) + collate/T + launch/L + reclaim s) - g dec      <= cores
    workers  x (dec + read (1-h) + faults)                 - g dec                <= workers
    thread   x (collate/T + launch/L + trainer faults)                            <= 1
    storage  x (1-h) bytes                                                        <= storage_bw
    requests x (1-h) reqs                                                         <= storage_iops
    nic      x ((1-h) bytes [remote] + allreduce_net [socket])                    <= nic
    rdma     x allreduce_net [rdma]                                               <= rdma
    pcie     x (h2d + allreduce_intra [pcie] + allreduce_net [gpudirect]) + g (h2d_gpu - h2d) <= pcie
    nvlink   x allreduce_intra [nvlink]                                           <= nvlink
    swap     x s                                                                  <= swap_bw
    stream   x (F/flops + M/hbm + (1-overlap) comm + msgs/msg_rate) + g Fdec/flops <= 1
    gpu-dec  g - gmax x                                                           <= 0

``s`` is the bytes swapped in per sample: the share of the Job's resident set that the cgroup's memory
limit cannot hold, times the bytes each sample touches. The stream row is the GPU's time: compute-
bound kernels, HBM-bound kernels (a roofline summed over kernels), the part of the all-reduce that
does not hide under the backward pass and its per-message latency. Time rows mix several capacities,
so a capacity's shadow price is the envelope derivative of the Lagrangian, d x / d C = sum over rows of
dual x d(slack)/d C, and the label reads the elasticity (C / x) d x / d C of every capacity.

The program has two variables, so it is solved exactly by enumerating its vertices; the tests check it
against scipy's HiGHS.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism

from .hardware import PAGE

FloatArray = npt.NDArray[np.float64]

ROWS: Final = (
    "cores",
    "workers",
    "thread",
    "storage",
    "requests",
    "nic",
    "rdma",
    "pcie",
    "nvlink",
    "swap",
    "stream",
    "gpu-dec",
)

# Every capacity the program has, with the class its shadow price counts for.
CAPACITIES: Final[dict[str, Bottleneck]] = {
    "cores": Bottleneck.CPU,
    "workers": Bottleneck.CPU,
    "launch": Bottleneck.GPU,  # launch-bound small kernels on a fast GPU are GPU (DESIGN.md)
    "thread": Bottleneck.CPU,  # the trainer's own Python work (collate hand-off, bookkeeping)
    "storage_bw": Bottleneck.IO,
    "storage_iops": Bottleneck.IO,
    "nic": Bottleneck.INTERCONNECT,  # split between IO and Interconnect by use, see elasticities()
    "rdma": Bottleneck.INTERCONNECT,
    "pcie": Bottleneck.INTERCONNECT,
    "nvlink": Bottleneck.INTERCONNECT,
    "msg_rate": Bottleneck.INTERCONNECT,
    "hbm": Bottleneck.MEMORY,
    "host_mem": Bottleneck.MEMORY,
    "swap_bw": Bottleneck.MEMORY,
    "flops": Bottleneck.GPU,
}


# The capacities each row's two sides depend on (see rows()).
ROW_CAPACITIES: Final[dict[str, tuple[str, ...]]] = {
    "cores": ("cores", "thread", "launch", "host_mem"),
    "workers": ("workers", "host_mem"),
    "thread": ("thread", "launch", "host_mem"),
    "storage": ("storage_bw",),
    "requests": ("storage_iops",),
    "nic": ("nic",),
    "rdma": ("rdma",),
    "pcie": ("pcie",),
    "nvlink": ("nvlink",),
    "swap": ("swap_bw", "host_mem"),
    "stream": ("flops", "hbm", "nvlink", "pcie", "nic", "rdma", "msg_rate"),
    "gpu-dec": (),
}


@dataclass(frozen=True)
class Demand:
    """What one sample asks of each resource, per GPU (seconds, bytes, FLOPs, requests).

    Attributes:
        dec_cpu: CPU seconds to decode and augment a sample on the host.
        read_cpu: CPU seconds to read a sample from storage (syscalls, TLS, HTTP).
        collate: trainer-thread seconds per sample (batch hand-off, bookkeeping), at thread speed 1.
        launch: trainer-thread seconds per sample launching kernels, at launch capacity 1.
        flops: FLOPs of the compute-bound kernels per sample (forward, backward, optimizer).
        hbm_bytes: HBM bytes of the bandwidth-bound kernels per sample.
        gpu_dec_flops: GPU work (FLOP equivalents) to decode a sample on the GPU.
        gpu_dec_max: the share of samples the pipeline can decode on the GPU (0: none).
        h2d: host-to-device bytes of a host-decoded sample.
        h2d_gpu: host-to-device bytes of a sample decoded on the GPU (compressed).
        read_bytes: storage bytes per sample.
        read_reqs: storage requests per sample.
        hit: share of reads the page cache serves.
        remote: storage reads cross the NIC.
        ar_intra: all-reduce bytes per sample per GPU inside the node, per direction.
        intra_link: "nvlink", "pcie" or "" (one GPU per node).
        ar_net: all-reduce bytes per sample per GPU between nodes, per direction.
        net_link: "nic" (socket collectives), "rdma" or "" (one node).
        gpudirect: RDMA bytes cross the GPU's PCIe link (GPUDirect RDMA).
        overlap: share of the all-reduce's transfer time hidden under the backward pass.
        msgs: collective messages on the critical path per sample.
        resident: bytes the pod needs resident in host memory.
        touch: bytes a loader worker touches per sample (buffers, decoded images, dataset pages).
        touch_thread: bytes the trainer thread touches per sample.
        fault_s: seconds a major fault blocks the faulting task (swap device latency).
        reclaim_cpu: CPU seconds of reclaim and (de)compression per swapped byte.
    """

    dec_cpu: float
    read_cpu: float
    collate: float
    launch: float
    flops: float
    hbm_bytes: float
    gpu_dec_flops: float
    gpu_dec_max: float
    h2d: float
    h2d_gpu: float
    read_bytes: float
    read_reqs: float
    hit: float
    remote: bool
    ar_intra: float
    intra_link: str
    ar_net: float
    net_link: str
    gpudirect: bool
    overlap: float
    msgs: float
    resident: float
    touch: float
    touch_thread: float
    fault_s: float
    reclaim_cpu: float

    def shortfall(self, host_mem: float) -> float:
        """Share of the resident set the memory limit cannot hold (what is swapped out)."""
        return max(0.0, 1.0 - host_mem / self.resident) if self.resident > 0 else 0.0


def rows(d: Demand, caps: dict[str, float]) -> tuple[FloatArray, FloatArray]:
    """The program's rows ``A @ (x, g) <= b`` in the order of :data:`ROWS`."""
    miss = 1.0 - d.hit
    short = d.shortfall(caps["host_mem"])
    s_w, s_t = short * d.touch, short * d.touch_thread
    comm = 0.0
    if d.ar_intra > 0:
        comm += d.ar_intra / caps["nvlink" if d.intra_link == "nvlink" else "pcie"]
    if d.ar_net > 0:
        comm += d.ar_net / caps["rdma" if d.net_link == "rdma" else "nic"]
    launch = d.launch / caps["launch"]
    collate = d.collate / caps["thread"]
    a = np.array(
        [
            [d.dec_cpu + d.read_cpu * miss + collate + launch + (s_w + s_t) * d.reclaim_cpu, -d.dec_cpu],
            [d.dec_cpu + d.read_cpu * miss + s_w / PAGE * d.fault_s, -d.dec_cpu],
            [collate + launch + s_t / PAGE * d.fault_s, 0.0],
            [miss * d.read_bytes, 0.0],
            [miss * d.read_reqs, 0.0],
            [miss * d.read_bytes * d.remote + d.ar_net * (d.net_link == "nic"), 0.0],
            [d.ar_net * (d.net_link == "rdma"), 0.0],
            [d.h2d + d.ar_intra * (d.intra_link == "pcie") + d.ar_net * d.gpudirect, d.h2d_gpu - d.h2d],
            [d.ar_intra * (d.intra_link == "nvlink"), 0.0],
            [s_w + s_t, 0.0],
            [
                d.flops / caps["flops"]
                + d.hbm_bytes / caps["hbm"]
                + (1.0 - d.overlap) * comm
                + d.msgs / caps["msg_rate"],
                d.gpu_dec_flops / caps["flops"],
            ],
            [-d.gpu_dec_max, 1.0],
        ]
    )
    b = np.array(
        [
            caps["cores"],
            caps["workers"],
            1.0,
            caps["storage_bw"],
            caps["storage_iops"],
            caps["nic"],
            caps["rdma"],
            caps["pcie"],
            caps["nvlink"],
            caps["swap_bw"],
            1.0,
            0.0,
        ]
    )
    return a, b


@dataclass(frozen=True)
class Solution:
    """An optimal vertex and its duals.

    Attributes:
        x: samples per second per GPU.
        g: of which decoded on the GPU.
        duals: one shadow price per row of :data:`ROWS` (samples/s per unit of the row's right side).
        usage: each row's left side at the optimum.
    """

    x: float
    g: float
    duals: FloatArray
    usage: FloatArray


def solve(a: FloatArray, b: FloatArray) -> Solution:
    """Maximise ``x`` subject to ``a @ (x, g) <= b``, ``x, g >= 0``, by enumerating vertices.

    Rows with no coefficient are dropped (they can never bind). Raises ValueError when ``x`` is
    unbounded (no row limits it), which a well-formed program never is: the stream row always holds.
    """
    if not np.any(a[:, 0] > 0):
        raise ValueError("no row limits the sample rate")
    if a[-1, 0] == 0.0:
        return _solve_without_g(a, b)
    keep = np.flatnonzero(np.abs(a).sum(axis=1) > 0)
    full_a = np.vstack([a[keep], [[-1.0, 0.0], [0.0, -1.0]]])
    full_b = np.concatenate([b[keep], [0.0, 0.0]])
    m = full_a.shape[0]
    i, j = np.triu_indices(m, k=1)
    det = full_a[i, 0] * full_a[j, 1] - full_a[i, 1] * full_a[j, 0]
    ok = np.abs(det) > 1e-300
    i, j, det = i[ok], j[ok], det[ok]
    with np.errstate(all="ignore"):
        xs = (full_b[i] * full_a[j, 1] - full_b[j] * full_a[i, 1]) / det
        gs = (full_a[i, 0] * full_b[j] - full_a[j, 0] * full_b[i]) / det
    lhs = full_a @ np.vstack([xs, gs])
    tol = 1e-9 * (1.0 + np.abs(full_b))[:, None] + 1e-9 * np.abs(lhs)
    feasible = np.all(lhs <= full_b[:, None] + tol, axis=0) & np.isfinite(xs) & np.isfinite(gs)
    if not feasible.any():
        raise ValueError("the program has no vertex: is every capacity positive?")
    best = int(np.flatnonzero(feasible)[np.argmax(xs[feasible])])
    v = np.array([xs[best], gs[best]])
    # Duals: a nonnegative y on the active rows with A_B^T y = (1, 0).
    slack = full_b - full_a @ v
    active = np.flatnonzero(np.abs(slack) <= 1e-7 * (1.0 + np.abs(full_b)))
    y_full = _duals(full_a, active)
    duals = np.zeros(len(ROWS))
    duals[keep] = y_full[: len(keep)]
    return Solution(float(v[0]), float(v[1]), duals, a @ v)


def _solve_without_g(a: FloatArray, b: FloatArray) -> Solution:
    """The pipeline cannot decode on the GPU (g = 0): the program has one variable, x = min b / a.

    The binding row's dual is 1 / a (one more unit of its capacity buys 1 / a samples per second);
    every other row's is 0. The rows that hold g at 0 have a zero right side, so their duals never
    enter an elasticity.
    """
    pos = a[:-1, 0] > 0
    ratios = np.where(pos, b[:-1] / np.where(pos, a[:-1, 0], 1.0), np.inf)
    k = int(np.argmin(ratios))
    x = float(ratios[k])
    duals = np.zeros(len(ROWS))
    duals[k] = 1.0 / a[k, 0]
    return Solution(x, 0.0, duals, a[:, 0] * x)


def _duals(full_a: FloatArray, active: npt.NDArray[np.intp]) -> FloatArray:
    y = np.zeros(full_a.shape[0])
    c = np.array([1.0, 0.0])
    for p in active:  # one row alone, when it has no g coefficient and the optimum needs no other
        if full_a[p, 1] == 0.0 and full_a[p, 0] > 0:
            alone = np.zeros_like(y)
            alone[p] = 1.0 / full_a[p, 0]
            if _stationary(full_a, alone, c):
                return alone
    for k, p in enumerate(active):
        for q in active[k + 1 :]:
            basis = full_a[[p, q]].T
            if abs(np.linalg.det(basis)) < 1e-300:
                continue
            yy = np.linalg.solve(basis, c)
            if np.all(yy >= -1e-12):
                y[[p, q]] = np.maximum(yy, 0.0)
                return y
    return y


def _stationary(full_a: FloatArray, y: FloatArray, c: FloatArray) -> bool:
    return bool(np.allclose(full_a.T @ y, c, rtol=1e-9, atol=1e-12))


def elasticities(d: Demand, caps: dict[str, float], sol: Solution, eps: float = 1e-6) -> dict[str, float]:
    """(C / x) dx/dC for every capacity: the dual-weighted change of each row's slack (envelope theorem)."""
    a0, b0 = rows(d, caps)
    v = np.array([sol.x, sol.g])
    slack0 = b0 - a0 @ v
    out = dict.fromkeys(CAPACITIES, 0.0)
    active = {c for k in np.flatnonzero(sol.duals > 0) for c in ROW_CAPACITIES[ROWS[k]]}
    for name in CAPACITIES:
        if name not in active:
            continue  # it moves only rows whose shadow price is zero
        bumped = dict(caps)
        bumped[name] = caps[name] * (1.0 + eps)
        a1, b1 = rows(d, bumped)
        dslack = (b1 - a1 @ v) - slack0
        out[name] = float(sol.duals @ dslack) / eps / sol.x if sol.x > 0 else 0.0
    return out


def class_elasticities(d: Demand, caps: dict[str, float], e: dict[str, float]) -> dict[Bottleneck, float]:
    """Elasticities summed by class; the NIC's is shared between IO and Interconnect by what it carries."""
    out = dict.fromkeys(CAPACITIES.values(), 0.0)
    for name, value in e.items():
        if name == "nic":
            storage = (1.0 - d.hit) * d.read_bytes * d.remote
            coll = d.ar_net * (d.net_link == "nic")
            total = storage + coll
            share = storage / total if total > 0 else 0.0
            out[Bottleneck.IO] += value * share
            out[Bottleneck.INTERCONNECT] += value * (1.0 - share)
        else:
            out[CAPACITIES[name]] += value
    return out


def mechanism_of(name: str, d: Demand, cpu_quota_bound: bool) -> Mechanism:
    """The mechanism a capacity's shadow price names."""
    if name == "cores":
        return Mechanism.THROTTLED if cpu_quota_bound else Mechanism.SATURATED
    if name in ("storage_bw", "storage_iops"):
        return Mechanism.NETWORK_STORAGE if d.remote else Mechanism.LOCAL_DISK
    if name == "nic":
        storage = (1.0 - d.hit) * d.read_bytes * d.remote
        coll = d.ar_net * (d.net_link == "nic")
        return Mechanism.NETWORK_STORAGE if storage >= coll else Mechanism.NETWORK
    if name == "msg_rate":
        if d.ar_net > 0:
            return Mechanism.NETWORK
        return Mechanism.NVLINK if d.intra_link == "nvlink" else Mechanism.PCIE
    return {
        "workers": Mechanism.TOO_FEW_WORKERS,
        "thread": Mechanism.SATURATED,
        "launch": Mechanism.LAUNCH_BOUND,
        "rdma": Mechanism.NETWORK,
        "pcie": Mechanism.PCIE,
        "nvlink": Mechanism.NVLINK,
        "hbm": Mechanism.HBM_BANDWIDTH,
        "host_mem": Mechanism.HOST_MEMORY_PRESSURE,
        "swap_bw": Mechanism.HOST_MEMORY_PRESSURE,
        "flops": Mechanism.COMPUTE,
    }[name]
