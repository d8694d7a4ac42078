"""One drawn job: its cluster, workload and phases, and the ranks they make in each phase.

A :class:`Plan` turns into :class:`~bottleneck_operator_dev.familyv.model.Rank` objects (one per pod
and phase) through physical knobs: ``knobs[resource]`` multiplies what drives that resource's
demand, which is how :mod:`.draw` steers a job until its target resource binds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Mechanism
from bottleneck_operator_dev.familyv.hardware import GB, PCIE_X16, Gpu, Nic, Storage
from bottleneck_operator_dev.familyv.model import Rank, Resource, label, mechanism_of
from bottleneck_operator_dev.familyv.workloads import Workload

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Pod:
    """One pod (one node) of the job.

    Attributes:
        neighbour: what the co-located tenant does ("none": a dedicated node).
        level: how hard it does it, 0..1.
        active: whether it runs in each of the window's two phases.
        clock: each board's SM clock when busy, as a share of the part's maximum.
        limit: each board's enforced power limit, W.
        capped: whether the limit holds the board's clock down.
        busy_power: each board's draw while its kernels run (at most ``limit``), W.
    """

    neighbour: str
    level: float
    active: tuple[bool, bool]
    clock: FloatArray
    limit: FloatArray
    capped: FloatArray
    busy_power: FloatArray

    @property
    def clock_factor(self) -> float:
        """The slowest board's clock share: data-parallel ranks wait for it."""
        return float(self.clock.min())


@dataclass(frozen=True)
class Plan:
    """Everything drawn for one job, and the model's answer."""

    target: Mechanism
    gpu: Gpu
    storage: Storage
    nic: Nic
    workload: Workload
    precision: str
    n_pods: int
    gpus: int  # per pod
    cores: int  # per node
    workers: int
    prefetch: int
    batch: int
    pinned: bool
    cuda_graphs: bool
    per_sample: dict[str, float]  # drawn from the workload's ranges
    grad_bytes: float
    pod_quota: float  # cores, inf without a limit
    mem_limit: float  # bytes per pod, inf without a limit
    mem_need: float  # bytes the pod would like resident
    swap_s: float  # per batch, before the knob
    cache_hit: tuple[float, float]  # page-cache hit share of reads in each phase
    mfu: float
    hbm_eff: float
    overlap: float
    exposed_floor: float
    storage_share: float
    gdr: bool  # GPUDirect RDMA: inter-node bytes cross each GPU's PCIe
    pods: tuple[Pod, ...]
    window: float  # seconds of the window
    change: str  # "none", "neighbour-arrives", "cache-warms"
    change_at: float  # seconds into the window
    pauses: tuple[tuple[float, float, str], ...]  # (start, end, "checkpoint" | "eval"), seconds into the window
    knobs: FloatArray
    hard: bool
    rival: Resource | None
    answer: tuple[Resource, FloatArray] | None = None  # the model's label and gains, once steered

    def _storage(self, pod: Pod, nb: str, phase: int, k: FloatArray) -> tuple[float, float, float]:
        """Bytes per batch, the rank's bandwidth and the request latency.

        The storage knob: local samples grow (higher resolution, uncompressed formats) and are read
        at the device's rate; a shared store gives this client less and answers more slowly.
        """
        local, knob = self.storage.local, k[Resource.STORAGE]
        read = self.per_sample["read"] * self.batch * (1.0 - self.cache_hit[phase]) * (knob if local else 1.0)
        bw = self.storage.bandwidth * self.storage_share / self.gpus
        if nb == "disk" and local:
            bw *= 1.0 - 0.8 * pod.level  # a neighbour reading the same NVMe takes its share
        if nb == "net" and not local:
            bw *= 1.0 - 0.6 * pod.level
        if not local:
            bw /= knob
        return max(read, 1.0), bw, self.storage.latency * (1.0 if local else knob)

    def _exchange(self, pod: Pod, nb: str, k: FloatArray) -> tuple[float, float]:
        """Seconds per step of the intra-node and inter-node all-reduce (ring: 2 (p - 1) / p of the bytes)."""
        g, grad = self.gpus, self.grad_bytes
        intra_pcie = self.gpu.nvlink == 0.0
        intra = inter = 0.0
        if g > 1:
            link = 0.5 * PCIE_X16[self.gpu.pcie_gen] if intra_pcie else 0.8 * self.gpu.nvlink / 2.0
            intra = 2.0 * (g - 1) / g * grad / link * k[Resource.PCIE if intra_pcie else Resource.NVLINK]
        if self.n_pods > 1:
            nic_bw = self.nic.gbits / 8.0 * GB * (0.8 if self.nic.rdma else 0.55)
            if nb == "net":
                nic_bw *= 1.0 - 0.5 * pod.level
            inter = 2.0 * (self.n_pods - 1) / self.n_pods * grad / nic_bw * k[Resource.NETWORK]
        return intra, inter

    def _cores(self, nb: str, level: float) -> tuple[float, float]:
        """Cores the rank's workers may use: under the quota, and what the neighbour leaves."""
        nb_cores = 0.9 * level * self.cores if nb == "cpu" else 0.05 * self.cores if nb == "quiet" else 0.0
        avail = max(0.3, (self.cores - nb_cores) / self.gpus - 1.0)  # minus the rank's own main process
        quota = self.pod_quota / self.gpus - 1.0 if math.isfinite(self.pod_quota) else math.inf
        return quota, avail

    def rank(self, pod: int, phase: int, mode: str = "train", knobs: FloatArray | None = None) -> Rank:
        """One rank of a pod in a phase: "train" or "eval" (forward only, no exchange)."""
        k = self.knobs if knobs is None else knobs
        s, p, b = self.per_sample, self.pods[pod], float(self.batch)
        nb = p.neighbour if p.active[phase] else "none"
        fwd = 3.0 if mode == "eval" else 1.0  # forward only: a third of the work
        read, bw, lat = self._storage(p, nb, phase, k)
        intra, inter = self._exchange(p, nb, k) if mode != "eval" else (0.0, 0.0)
        quota, avail = self._cores(nb, p.level)
        flops = s["flops"] * b / fwd
        el_bytes = flops / s["ai_el"] * k[Resource.HBM]
        tflops = self.gpu.tflops16 if self.precision in ("amp", "bf16") else self.gpu.tflops32
        obj = self.storage.kind == "object"
        return Rank(
            read_bytes=read,
            req_bytes=max(s["read"] * 8, 1e6) if obj else max(64e3, min(s["read"], 4e6)),
            storage_bw=bw,
            storage_lat=lat,
            storage_conc=4.0 if obj else 2.0,
            decode_cs=s["decode"] * b * k[Resource.CPU] * (0.5 if mode == "eval" else 1.0),
            workers=self.workers,
            prefetch=self.prefetch,
            cpu_quota=quota,
            cpu_avail=avail,
            swap_s=self.swap_s * k[Resource.HOST_MEMORY],
            h2d_bytes=s["h2d"] * b * k[Resource.PCIE],
            pcie_bw=PCIE_X16[self.gpu.pcie_gen] * (0.8 if self.pinned else 0.42),
            pinned=self.pinned,
            flops_mm=flops * k[Resource.COMPUTE],
            bytes_mm=flops * k[Resource.COMPUTE] / s["ai_mm"],
            flops_el=0.25 * el_bytes,
            bytes_el=el_bytes,
            peak=tflops * 1e12 * self.mfu * p.clock_factor,
            hbm_bw=self.gpu.hbm * self.hbm_eff,
            launch_s=s["kernels"] * s["launch"] * k[Resource.LAUNCH] / (8.0 if self.cuda_graphs else 1.0) / fwd,
            intra_s=intra,
            intra_over_pcie=self.gpu.nvlink == 0.0,
            inter_s=inter,
            overlap=self.overlap,
            exposed_floor=self.exposed_floor,
        )

    def training_phases(self, knobs: FloatArray | None = None) -> list[tuple[float, list[Rank]]]:
        """(training seconds, ranks) of each phase, pauses left out: what the label integrates."""
        bounds = (0.0, self.change_at if self.change != "none" else self.window, self.window)
        out = []
        for phase in (0, 1):
            lo, hi = bounds[phase], bounds[phase + 1]
            paused = sum(max(0.0, min(hi, e) - max(lo, s)) for s, e, _ in self.pauses)
            seconds = hi - lo - paused
            if seconds > 0:
                out.append((seconds, [self.rank(i, phase, knobs=knobs) for i in range(self.n_pods)]))
        return out

    def verdict(self) -> tuple[Resource, FloatArray]:
        """The model's label for this plan, and every resource's gain."""
        return self.answer if self.answer is not None else label(self.training_phases())

    def mechanism(self, resource: Resource) -> Mechanism:
        """How the binding resource limits this job."""
        return mechanism_of(resource, self.rank(0, 0), self.storage.local)
