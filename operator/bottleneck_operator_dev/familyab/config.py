"""One Job's drawn configuration: what it runs, on what, fed how, and under which cluster practices.

Plain data: :mod:`.fleet` draws it, :mod:`.steer` nudges it toward a block's intended class,
:mod:`.stages` turns it into stage times and :mod:`.exporters` into telemetry.
"""

from __future__ import annotations

from dataclasses import dataclass

from bottleneck_operator_dev.familyab.hardware import Gpu, Nic, NodeType, Storage
from bottleneck_operator_dev.familyab.models import Model


@dataclass(frozen=True)
class Config:
    """What one Job is. Sizes are per pod unless a name says otherwise.

    Attributes:
        model: per-sample costs; ``batch`` the per-GPU batch, ``cpu_ms`` the drawn core-ms per
            sample, ``hbm_scale`` how fused its memory-bound kernels are (1: not at all).
        gpu, node: the GPU model and the server shape.
        gpus_per_pod, pods, pods_per_node: placement; the Job spans ``nodes`` nodes.
        nic: the node network for collectives (None: single node); ``net_eff`` the share of its
            line rate a collective reaches; ``gdr`` GPUDirect RDMA (inter-node bytes cross each
            GPU's PCIe link).
        arch: "ddp" (all-reduce, bucketed), "ps" (parameter servers over the network),
            "a2a" (sharded embeddings: all-to-all plus dense all-reduce), "host" (embeddings in
            host memory, rows copied over PCIe each step).
        grad_bytes: bytes per gradient element all-reduced.
        storage: where the data is read from; ``storage_share`` the share of its per-node rate
            this Job's node gets (a filer shared with the cluster); ``streams`` connections or
            outstanding reads per loader worker.
        fmt: "files" (one sample per file), "shards" (tar/record shards read sequentially),
            "memmap" (memory-mapped arrays: reads are major faults), "parquet" (columnar shards).
        cached: share of reads served from the page cache.
        workers: loader workers per GPU; ``cpu_limit``/``mem_limit_gib`` the pod's limits (None: none).
        precision: "amp", "tf32" or "fp32"; ``dali`` GPU-side decode; ``pinned`` pinned host buffers.
        launch_us: host time per kernel launch (CUDA graphs make it small).
        neighbours: other pods on each node; ``nb_*`` what they use there (cores, disk read B/s,
            network B/s, RDMA B/s, GiB of memory).
        power_cap: enforced power limit as a share of TDP (1.0: none); ``clock_sigma`` the
            per-GPU spread of sustained clocks.
        base_gib, worker_gib, host_gib: host memory of the training processes, of each loader
            worker, and of host-resident data; ``swap`` whether the node has swap.
        ckpt_every_s, ckpt_storage: checkpoint period and target; ``eval_every_s``/``eval_s``
            the evaluation period and its length (0: none).
        overlap_comm, overlap_h2d: share of the backward pass (of compute) that hides gradient
            communication (host-to-device copies); ``coupling`` how much of the shorter of read
            and decode a worker cannot overlap with the longer.
    """

    model: Model
    batch: int
    cpu_ms: float
    hbm_scale: float
    gpu: Gpu
    node: NodeType
    gpus_per_pod: int
    pods: int
    pods_per_node: int
    nic: Nic | None
    net_eff: float
    gdr: bool
    arch: str
    grad_bytes: float
    storage: Storage
    storage_share: float
    streams: int
    fmt: str
    cached: float
    workers: int
    cpu_limit: float | None
    mem_limit_gib: float | None
    precision: str
    dali: bool
    pinned: bool
    launch_us: float
    neighbours: int
    nb_cpu: float
    nb_disk_bps: float
    nb_net_bps: float
    nb_rdma_bps: float
    nb_mem_gib: float
    power_cap: float
    clock_sigma: float
    base_gib: float
    worker_gib: float
    host_gib: float
    swap: bool
    ckpt_every_s: float
    ckpt_storage: Storage
    eval_every_s: float
    eval_s: float
    overlap_comm: float
    overlap_h2d: float
    coupling: float

    @property
    def gpus(self) -> int:
        """All the Job's GPUs."""
        return self.gpus_per_pod * self.pods

    @property
    def nodes(self) -> int:
        """Nodes the Job spans (pods packed ``pods_per_node`` to a node)."""
        return -(-self.pods // self.pods_per_node)

    @property
    def gpus_per_node(self) -> int:
        """The Job's GPUs on one of its nodes."""
        return self.gpus_per_pod * min(self.pods, self.pods_per_node)

    @property
    def intra(self) -> str:
        """How GPUs of one node exchange gradients: "nvlink", "pcie", or "none" (one GPU a node)."""
        if self.gpus_per_node < 2:
            return "none"
        return "nvlink" if self.gpu.nvlink_gbs > 0 else "pcie"


@dataclass(frozen=True)
class Practices:
    """How the cluster watches the Job: exporters, their configuration and their faults.

    Attributes:
        scrape_s: Prometheus scrape interval for every exporter.
        dcgm_collect_s: dcgm-exporter's own collection interval (values repeat between collections).
        fieldset: "dev" (DEV fields only), "default" (the shipped counters file) or "full" (a
            custom file with SM, pipe, NVLink and power/clock fields).
        exporters: exporters present: "cadvisor", "ksm", "node", "psi", "ib", "sidecar", "sidecar_net".
        drop: probability that one scrape of one exporter is missing.
        sidecar_reset: whether the collector restarts inside the window (its counters reset).
        xid: last XID error code on the pod's GPUs (0: none).
        layout: label layouts as drawn, for tags only.
    """

    scrape_s: float
    dcgm_collect_s: float
    fieldset: str
    exporters: frozenset[str]
    drop: float
    sidecar_reset: bool
    xid: int
    layout: tuple[str, ...]
