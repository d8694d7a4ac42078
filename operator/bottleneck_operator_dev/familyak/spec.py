"""What one Job is made of: the drawn training setup and the drawn telemetry stack.

Plain frozen data: :mod:`.draws` fills it, :mod:`.loop` runs it, :mod:`.exporters` renders it.
"""

from __future__ import annotations

from dataclasses import dataclass

from bottleneck_operator_dev.familyak.hardware import Board, Fabric, Storage


@dataclass(frozen=True)
class Loader:
    """The input pipeline of one rank (one training process, one GPU).

    Attributes:
        batch: samples per step per rank.
        sample_bytes: bytes read from storage per sample.
        decode_s: core-seconds to decode and augment one sample at full core speed.
        workers: DataLoader worker processes per rank (0: the main process loads).
        prefetch: batches each worker may hold ready (PyTorch's ``prefetch_factor``).
        storage: where samples come from.
        storage_gbs: throughput the pod gets from the storage, GB/s (shared by its ranks).
        latency_s: per-request latency.
        per_request: samples one request fetches (1 for a file per sample; more for shards).
        concurrency: requests a worker keeps in flight (threaded readers > 1).
        cache_hit: share of reads the node's page cache serves (they never reach the storage).
        client_cpu_per_gb: core-seconds per GB of the reader's own work (TLS, HTTP, NFS client).
        collate_s: core-seconds the main process spends per step collating and pinning.
        h2d_bytes: bytes per sample copied host to device (the decoded tensors).
        pinned: pinned memory and non_blocking copies (asynchronous, full PCIe rate).
        jitter: coefficient of variation of per-batch read and decode times.
    """

    batch: int
    sample_bytes: float
    decode_s: float
    workers: int
    prefetch: int
    storage: Storage
    storage_gbs: float
    latency_s: float
    per_request: float
    concurrency: float
    cache_hit: float
    client_cpu_per_gb: float
    collate_s: float
    h2d_bytes: float
    pinned: bool
    jitter: float


@dataclass(frozen=True)
class Model:
    """The GPU work of one step on one rank.

    Attributes:
        matmul_flops: tensor-core FLOPs per step (forward + backward).
        matmul_ai: their arithmetic intensity, FLOP per HBM byte.
        elem_bytes: HBM bytes per step of the memory-bound kernels (norms, activations, embeddings).
        elem_ai: their arithmetic intensity, FLOP per byte (non-tensor pipes).
        amp: mixed precision (BF16/FP16) rather than FP32/TF32 matmuls.
        kernels: kernel launches per step.
        launch_s: host seconds per kernel launch (framework and driver).
        sm_fill: share of SMs a kernel keeps busy (small batches fill fewer).
        occupancy: resident warps over the maximum, while busy.
        grad_bytes: gradient bytes all-reduced per step (amortised over gradient accumulation).
        overlap: share of the backward pass the all-reduce can hide behind.
        backward_share: backward pass share of the kernel time.
        fb_frac: framebuffer share the caching allocator keeps reserved.
    """

    matmul_flops: float
    matmul_ai: float
    elem_bytes: float
    elem_ai: float
    amp: bool
    kernels: int
    launch_s: float
    sm_fill: float
    occupancy: float
    grad_bytes: float
    overlap: float
    backward_share: float
    fb_frac: float


@dataclass(frozen=True)
class Host:
    """The pod's host side.

    Attributes:
        node_cpus: CPUs of each node.
        cpu_limit: the pod's CPU limit in cores (CFS quota), None when unlimited.
        neighbour_cpus: cores neighbours on the node keep busy.
        mem_limit: the pod's memory limit, bytes, None when unlimited.
        node_mem: node memory, bytes.
        anon_base: the trainer's resident memory without workers, bytes.
        worker_rss: resident bytes each worker adds (copy-on-access dataset lists, prefetched batches).
        growth_bps: bytes per second the workers' resident memory grows by (refcount touches).
        swap: whether the node has swap the pod may use.
        touch_s: seconds per step the main process spends on its own host memory (what faults when swapped).
        neighbours: other pods on the node.
    """

    node_cpus: int
    cpu_limit: float | None
    neighbour_cpus: float
    mem_limit: float | None
    node_mem: float
    anon_base: float
    worker_rss: float
    growth_bps: float
    swap: bool
    touch_s: float
    neighbours: int


@dataclass(frozen=True)
class JobSpec:
    """One drawn training Job.

    Attributes:
        workload: what it trains (cnn, transformer, recsys, audio).
        board: its GPU type.
        gpus: GPUs per pod (one rank each).
        pods: pods (nodes) of the Job.
        fabric, fabric_gbps: how nodes exchange gradients, and the port rate in Gb/s.
        power_cap: the enforced power limit over the board's power.
        clock_spread: per pod, the slowest GPU's clock relative to the board's nominal.
        loader, model, host: the stages.
    """

    workload: str
    board: Board
    gpus: int
    pods: int
    fabric: Fabric
    fabric_gbps: float
    power_cap: float
    clock_spread: tuple[float, ...]
    loader: Loader
    model: Model
    host: Host


@dataclass(frozen=True)
class Telemetry:
    """The drawn monitoring stack and window.

    Attributes:
        dcgm_fields: "dev", "default" or "full" (the DCGM field set the counters file turns on).
        dcgm_power_clocks: whether the power limit and clock-event reasons are exported.
        dcgm_interval: dcgm-exporter's scrape interval, seconds.
        dcgm_collect: dcgm-exporter's collect interval, seconds (a scrape repeats the cached value).
        host_interval: the other exporters' scrape interval, seconds.
        sidecar: whether the collector runs in the pods; sidecar_net whether it exports network bytes.
        node_psi, node_ib, ksm, cadvisor: whether those families are scraped.
        layouts: exporter -> label layout name, for the window's quality.
        duration: seconds of window.
        lead: seconds the Job ran before the window starts.
        missed: share of scrapes lost.
        restarts: container restarts (counter resets) not caused by an OOM kill.
        prometheus_major: 2 or 3.
    """

    dcgm_fields: str
    dcgm_power_clocks: bool
    dcgm_interval: float
    dcgm_collect: float
    host_interval: float
    sidecar: bool
    sidecar_net: bool
    node_psi: bool
    node_ib: bool
    ksm: bool
    cadvisor: bool
    layouts: tuple[tuple[str, str], ...]
    duration: float
    lead: float
    missed: float
    restarts: int
    prometheus_major: int
