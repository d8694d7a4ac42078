"""What surrounds a job on a real cluster: exporter configuration, neighbours, memory, phases, noise.

None of this changes which stage bounds the job (the neighbours' contention is already in the drawn
storage and CPU rates); it changes what the telemetry shows and how cleanly.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from bottleneck_operator_dev.simulation import catalog as cat

FIELDSETS = ("dev", "shipped", "full")
SCRAPE_INTERVALS = (15.0, 30.0, 60.0)
# PROF fields a part may lack: T4 emits GR_ENGINE_ACTIVE but multiplexes or lacks the rest; L4/A10
# lack some groups depending on the driver.
PARTIAL_PROF = ("sm_active", "sm_occupancy", "tensor_active", "dram_active")


@dataclass(frozen=True)
class Environment:
    """Conditions around the job.

    Attributes:
        dcgm_fieldset: "dev" (DEV fields only), "shipped" (+ GR_ENGINE/tensor/DRAM/PCIe), "full"
            (+ SM activity/occupancy and NVLink PROF bytes).
        prof_missing: PROF signals this GPU part does not deliver despite the field set.
        scrape_interval: seconds between scrapes of every exporter.
        dcgm_collect_s: seconds between dcgm-exporter's own collections (``-c``, 30 s by default): a
            faster scrape repeats the last collected values.
        sidecar: the collector sidecar runs in the job's pods.
        node_psi: node-exporter has pressure metrics (kernel >= 4.20).
        ksm: kube-state-metrics is installed.
        neighbour_pods: pods of other, non-profiled jobs on each of the job's nodes.
        neighbour_cpu / neighbour_disk_bps / neighbour_net_bps / neighbour_io_wait: their load per node
            (cores, bytes/s, bytes/s, share of time their tasks wait on I/O).
        mem_limit_bytes: the trainer container's memory limit, None when unlimited.
        mem_ws_frac: working set as a share of the limit (or of node memory when unlimited).
        node_mem_used_frac: node memory in use by everything else.
        swap_bytes: node swap size (0: none; Kubernetes supports swap from 1.28 as beta).
        swap_used_frac: share of swap in use at the start.
        startup_s: seconds of start-up (loading, compiling, warming caches) with little GPU work.
        eval_every_s / eval_len_s: periodic evaluation passes (0: none).
        ckpt_every_s / ckpt_len_s: periodic checkpoint writes that pause training (0: none).
        noise: per-sample log-normal spread of stage times (burstiness).
        drift: amplitude of slow log-scale drifts of stage times.
        gap_prob: chance that an exporter misses a stretch of scrapes during the job.
        fb_frac: framebuffer share the job holds, drawn alike for every class: allocators reserve memory
            whatever bounds the step, so a full framebuffer says nothing about the bottleneck.
        counter_reset: one exporter restarts mid-job (its counters start again from zero).
        rdma: collectives between nodes run over RDMA (InfiniBand, RoCE, EFA) with GPUDirect: they
            bypass the kernel's network stack (no node_network_* bytes) and cross each GPU's PCIe
            link in both directions.
        mmap_dataset: the loader reads a memory-mapped dataset (Arrow, LMDB, NumPy memmap): its reads
            are major page faults, with no memory pressure behind them.
        dataset_cached: the dataset fits in the node's page cache and was read once before the window:
            the loader copies samples from memory, so neither the disk nor the network moves a byte (as
            in the gpu-loader recording, tests/data/gpu-loader). Never drawn for an IO-bound job.
        active_cache_frac: page cache of the files the job reads, on the active list, as a share of
            its memory cap: cAdvisor's working set counts it, so a Job with no memory pressure can show
            a working set near its limit.
        dcgm_pipes: the counters file turns on the FP32/FP16 pipe activities (a custom one only).
        dcgm_power_clocks: dcgm-exporter exports the enforced power limit and the clock-event reasons.
        legacy_dcgm: dcgm-exporter is built on a DCGM before 3.3, which names the reasons
            ``DCGM_FI_DEV_CLOCK_THROTTLE_REASONS``.
        power_cap: the power limit the boards enforce, as a share of their default limit (the TDP):
            below 1 on clusters that cap their GPUs, whether or not the limit is exported.
        ib_ports: InfiniBand/RoCE ports node-exporter's infiniband collector reports per node (0: no
            adapter, or the collector off); idle unless the job's collectives run over RDMA.
        fp32_math: the job's kernels compute in FP32 on the SMs' FP32 pipes (TF32 off, no mixed
            precision), not on the tensor pipes.
        swapins_counted: the collector's kernel counts swap-ins per cgroup (``pswpin`` in memory.stat).
        oom_kills: processes of the pod the OOM killer ends during the job (the trainer survives them).
    """

    dcgm_fieldset: str
    prof_missing: tuple[str, ...]
    scrape_interval: float
    dcgm_collect_s: float
    sidecar: bool
    node_psi: bool
    ksm: bool
    neighbour_pods: int
    neighbour_cpu: float
    neighbour_disk_bps: float
    neighbour_net_bps: float
    neighbour_io_wait: float
    mem_limit_bytes: float | None
    mem_ws_frac: float
    node_mem_used_frac: float
    swap_bytes: float
    swap_used_frac: float
    startup_s: float
    eval_every_s: float
    eval_len_s: float
    ckpt_every_s: float
    ckpt_len_s: float
    noise: float
    drift: float
    gap_prob: float
    fb_frac: float
    counter_reset: bool
    rdma: bool = False
    mmap_dataset: bool = False
    active_cache_frac: float = 0.0
    dataset_cached: bool = False
    dcgm_pipes: bool = False
    dcgm_power_clocks: bool = False
    legacy_dcgm: bool = False
    power_cap: float = 1.0
    ib_ports: int = 0
    fp32_math: bool = False
    swapins_counted: bool = False
    oom_kills: int = 0


def sample_environment(
    rng: np.random.Generator,
    *,
    gpu: str,
    mechanism: str,
    label: object,
    storage_network: bool,
    n_nodes: int,
    node_cpus: int,
    node_mem: float,
    scrape_interval: float | None,
    dcgm_fieldset: str | None,
    comm_share: float,
    kernel_share: float,
) -> tuple[Environment, tuple[str, ...]]:
    """Draw the environment of one job and the tags that mark its hard cases.

    Args:
        rng: the generator.
        gpu: GPU kind key.
        mechanism: the mechanism that makes the target class the bound ("mem-host", "ic-comm", ...).
        label: the realised label (unused beyond tagging).
        storage_network: the data is read over the network.
        n_nodes: nodes the job spans.
        node_cpus / node_mem: node size.
        scrape_interval / dcgm_fieldset: forced values, or None to draw.
        comm_share: all-reduce time as a share of the step's bound.
        kernel_share: GPU kernel (math or DRAM) time as a share of the step's bound.

    Returns:
        (environment, tags).
    """
    tags: list[str] = []
    fieldset, missing, si, sidecar = _draw_exporters(rng, cat.GPU_KINDS[gpu], dcgm_fieldset, scrape_interval, tags)
    paths = _draw_data_paths(rng, si, n_nodes, tags, io_bound=mechanism.startswith("io"))
    tags.extend(_placement_tags(storage_network, n_nodes, comm_share, kernel_share))
    n_pods, nb_cpu, nb_disk, nb_net, nb_iow = _draw_neighbours(rng, node_cpus, tags)
    mem_limit, ws, node_used, swap, swap_used, fb = _draw_memory(rng, mechanism, node_mem, tags)
    env = Environment(
        dcgm_fieldset=fieldset,
        prof_missing=missing,
        scrape_interval=si,
        sidecar=sidecar,
        neighbour_pods=n_pods,
        neighbour_cpu=nb_cpu,
        neighbour_disk_bps=nb_disk,
        neighbour_net_bps=nb_net,
        neighbour_io_wait=nb_iow,
        mem_limit_bytes=mem_limit,
        mem_ws_frac=ws,
        node_mem_used_frac=node_used,
        swap_bytes=swap,
        swap_used_frac=swap_used,
        fb_frac=fb,
        **paths,
        **_draw_rest(rng),
    )
    return env, tuple(tags)


def _placement_tags(storage_network: bool, n_nodes: int, comm_share: float, kernel_share: float) -> list[str]:
    """Tags for where the job reads and runs (no draw)."""
    tags = ["network_storage"] if storage_network else []
    if n_nodes > 1:
        tags.append("multi_node")
    # Multi-node all-reduce that dominates: NCCL kernels keep GPU_UTIL high while the SMs mostly wait.
    if n_nodes > 1 and comm_share > 0.99 and kernel_share < 0.4:
        tags.append("nccl_busy")
    return tags


def _draw_data_paths(
    rng: np.random.Generator, si: float, n_nodes: int, tags: list[str], *, io_bound: bool
) -> dict[str, Any]:
    """How data reaches the job and how dcgm-exporter samples it; tags appended."""
    # Most installations keep dcgm-exporter's default collection interval; some lower it.
    collect = float(rng.choice([30.0, 10.0, 5.0], p=[0.75, 0.15, 0.1]))
    rdma = n_nodes > 1 and bool(rng.random() < 0.5)
    mmap_dataset = bool(rng.random() < 0.3)
    active_cache = float(rng.uniform(0.05, 0.6)) if rng.random() < 0.5 else 0.0
    cached = not io_bound and bool(rng.random() < 0.2)
    flags = (("dcgm_repeats", collect > si), ("rdma", rdma), ("mmap_dataset", mmap_dataset), ("dataset_cached", cached))
    tags.extend(t for t, on in flags if on)
    return {"dcgm_collect_s": collect, "rdma": rdma, "mmap_dataset": mmap_dataset, "active_cache_frac": active_cache,
            "dataset_cached": cached}  # fmt: skip


def _draw_exporters(
    rng: np.random.Generator,
    kind: cat.GpuKind,
    dcgm_fieldset: str | None,
    scrape_interval: float | None,
    tags: list[str],
) -> tuple[str, tuple[str, ...], float, bool]:
    """(dcgm field set, PROF fields the part lacks, scrape interval, collector injected); tags appended."""
    fieldset = dcgm_fieldset or str(rng.choice(FIELDSETS, p=[0.25, 0.45, 0.30]))
    missing: tuple[str, ...] = ()
    if kind.prof_partial and rng.random() < 0.5:
        drop = rng.random(len(PARTIAL_PROF)) < 0.6
        missing = tuple(n for n, d in zip(PARTIAL_PROF, drop, strict=True) if d)
    if fieldset == "dev":
        tags.append("no_prof")
    si = scrape_interval or float(rng.choice(SCRAPE_INTERVALS, p=[0.5, 0.35, 0.15]))
    sidecar = bool(rng.random() < 0.5)
    if sidecar:
        tags.append("sidecar")
    return fieldset, missing, si, sidecar


def _draw_neighbours(
    rng: np.random.Generator, node_cpus: int, tags: list[str]
) -> tuple[int, float, float, float, float]:
    """A third of jobs share nodes with busy pods of other jobs: (pods, cores, disk B/s, net B/s, iowait)."""
    noisy = bool(rng.random() < 0.33)
    n_pods = int(rng.integers(1, 5)) if noisy or rng.random() < 0.4 else 0
    load = float(rng.uniform(0.2, 0.7)) if noisy else float(rng.uniform(0.0, 0.08))
    if noisy:
        tags.append("noisy_neighbour")
    nb_cpu = load * node_cpus if n_pods else 0.0
    nb_disk = float(rng.uniform(0.2e9, 2.5e9)) * (noisy and rng.random() < 0.6) if n_pods else 0.0
    nb_net = float(rng.uniform(0.1e9, 3e9)) * (noisy and rng.random() < 0.6) if n_pods else 0.0
    nb_iow = float(rng.uniform(0.1, 0.6)) if nb_disk > 0 else 0.0
    return n_pods, nb_cpu, nb_disk, nb_net, nb_iow


def _draw_memory(
    rng: np.random.Generator, mechanism: str, node_mem: float, tags: list[str]
) -> tuple[float | None, float, float, float, float, float]:
    """(memory limit, working set share, node used share, swap bytes, swap used share, framebuffer share).

    Host pressure only where the mechanism is host memory (with swap often), else headroom.
    """
    mem_limit: float | None = None
    swap = 0.0
    swap_used = 0.0
    if mechanism == "mem-host":
        mem_limit = float(rng.uniform(0.05, 0.4)) * node_mem if rng.random() < 0.6 else None
        ws = float(rng.uniform(0.96, 0.995))
        node_used = float(rng.uniform(0.9, 0.98)) if mem_limit is None else float(rng.uniform(0.3, 0.8))
        if rng.random() < 0.6:
            swap = float(rng.choice([8, 16, 32, 64])) * cat.GIB
            swap_used = float(rng.uniform(0.2, 0.8))
            tags.append("swap")
    else:
        if rng.random() < 0.5:
            mem_limit = float(rng.uniform(0.05, 0.4)) * node_mem
        ws = float(rng.uniform(0.2, 0.85))
        node_used = float(rng.uniform(0.1, 0.7))
        if rng.random() < 0.15:
            swap = float(rng.choice([8, 16, 32])) * cat.GIB
            swap_used = float(rng.uniform(0.0, 0.1))
    fb = _draw_fb(rng)
    if fb >= 0.95:
        tags.append("fb_full")
    if mechanism == "mem-dram":
        tags.append("dram_bound")
    return mem_limit, ws, node_used, swap, swap_used, fb


def _draw_fb(rng: np.random.Generator) -> float:
    """Framebuffer share held, independent of the bottleneck (docs/telemetry.md "Framebuffer use").

    TensorFlow maps nearly all of it by default, JAX preallocates 75 % (plus what it adds on top), and
    PyTorch's caching allocator keeps freed blocks reserved, so it sits anywhere up to full.
    """
    u = rng.random()
    if u < 0.25:  # TensorFlow without allow_growth, or a batch tuned to fill the GPU
        return float(rng.uniform(0.93, 0.99))
    if u < 0.4:  # JAX's default preallocation
        return float(rng.uniform(0.75, 0.82))
    return float(rng.uniform(0.2, 0.99))  # PyTorch: whatever the caching allocator has reserved so far


def _draw_rest(rng: np.random.Generator) -> dict[str, Any]:
    """Exporter presence, the job's phases (start-up, evaluations, checkpoints) and its noise, in draw order."""
    evals = rng.random() < 0.5
    ckpts = rng.random() < 0.6
    return {
        "node_psi": bool(rng.random() < 0.85),
        "ksm": bool(rng.random() < 0.9),
        "startup_s": float(rng.uniform(30, 240)),
        "eval_every_s": float(rng.uniform(300, 1200)) if evals else 0.0,
        "eval_len_s": float(rng.uniform(20, 90)) if evals else 0.0,
        "ckpt_every_s": float(rng.uniform(300, 1800)) if ckpts else 0.0,
        "ckpt_len_s": float(rng.uniform(5, 45)) if ckpts else 0.0,
        "noise": float(rng.uniform(0.04, 0.15)),
        "drift": float(rng.uniform(0.02, 0.12)),
        "gap_prob": float(rng.uniform(0.0, 0.3)),
        "counter_reset": bool(rng.random() < 0.03),
    }


# Shares of clusters: the FP32/FP16 pipes where a custom counters file is on (the chart's turns them on),
# the power limit and clock-event reasons with a custom file and, rarely, an operator's own; boards
# capped below their default limit (power or cooling budgets); dcgm-exporter releases older than DCGM
# 3.3; nodes with InfiniBand/RoCE adapters where the job's own traffic is Ethernet; node-exporter's
# infiniband collector on (a default collector); kernels from 6.15 on (memory.stat's ``pswpin``).
PIPES_SHARE = 0.6
POWER_CLOCKS_SHARE = {"full": 0.7, "shipped": 0.15, "dev": 0.1}
POWER_CAPPED_SHARE = 0.1
LEGACY_DCGM_SHARE = 0.25
IDLE_ADAPTERS_SHARE = 0.25
IB_COLLECTOR_SHARE = 0.85
SWAPINS_SHARE = 0.4
FP32_MATH_SHARE = 0.1
OOM_KILL_SHARE = 0.4  # of the Jobs under host memory pressure with a memory limit


def draw_extras(
    seed: int, env: Environment, *, mechanism: str, gpus_per_node: int
) -> tuple[Environment, tuple[str, ...]]:
    """The optional telemetry families and board settings around a drawn job, and their tags.

    Drawn from a generator of their own (seeded by the job's seed), after everything else: every
    earlier draw of a seeded set, and so every signal that existed before these, stays as it was.

    Args:
        seed: the job's seed.
        env: its environment (field set, RDMA, memory limit already drawn).
        mechanism: the mechanism that makes the target class the bound.
        gpus_per_node: GPUs of each of its nodes (rail-optimised fabrics put one port beside each).

    Returns:
        (the environment with the extras, tags for the hard cases they make).
    """
    rng = np.random.default_rng([seed, 0xE7])
    pipes = env.dcgm_fieldset == "full" and bool(rng.random() < PIPES_SHARE)
    power_clocks = bool(rng.random() < POWER_CLOCKS_SHARE[env.dcgm_fieldset])
    legacy = bool(rng.random() < LEGACY_DCGM_SHARE)
    cap = float(rng.uniform(0.6, 0.9)) if rng.random() < POWER_CAPPED_SHARE else 1.0
    adapters = env.rdma or bool(rng.random() < IDLE_ADAPTERS_SHARE)
    collector = bool(rng.random() < IB_COLLECTOR_SHARE)
    ports = int(rng.choice([1, 2, max(1, gpus_per_node // 2), gpus_per_node]))
    # Small kernels and HBM streams keep the tensor pipes idle anyway: FP32 math is the compute-bound kind.
    fp32 = mechanism not in ("mem-dram", "gpu-launch") and bool(rng.random() < FP32_MATH_SHARE)
    swapins = bool(rng.random() < SWAPINS_SHARE)
    kills = int(rng.integers(1, 4)) if rng.random() < OOM_KILL_SHARE else 0
    if mechanism != "mem-host" or env.mem_limit_bytes is None:
        kills = 0
    extras = replace(
        env, dcgm_pipes=pipes, dcgm_power_clocks=power_clocks, legacy_dcgm=legacy, power_cap=cap,
        ib_ports=ports if adapters and collector else 0, fp32_math=fp32, swapins_counted=swapins, oom_kills=kills,
    )  # fmt: skip
    flags = (("power_capped", cap < 1.0), ("fp32_math", fp32), ("oom_kill", kills > 0))
    return extras, tuple(t for t, on in flags if on)
