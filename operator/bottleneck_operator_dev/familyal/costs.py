"""Per-iteration, per-rank stage costs of a synchronous data-parallel Job: every random draw lives here.

Each array is (iterations, ranks) or (iterations,) and holds one stage's cost in seconds (or its
bytes and core-seconds for the telemetry). The step model in :mod:`.steps` combines them; the
counterfactual reruns that combination with one stage made ample and the same arrays, so the
draws are shared between the factual and every counterfactual run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyal.draws import Setup
from bottleneck_operator_dev.familyal.hardware import GB, LLM_HBM_BYTES_PER_FLOP, LLM_TOKENS, PCIE_GBPS

F = npt.NDArray[np.float64]
# Share of peak a roofline-bound kernel group reaches on HBM, and NCCL's share of NVLink/PCIe
# (modelling choices, see docs/familyal.md).
HBM_EFF = 0.85
LINK_EFF = 0.8


@dataclass(frozen=True)
class Costs:
    """The stage costs of K iterations on R ranks (R = pods x GPUs per pod, rank r on pod r // gpus)."""

    decode: F  # core-seconds of decode/augment for the rank's next batch (K, R)
    io_latency: F  # seconds one worker waits on storage requests for that batch (K, R)
    io_xfer: F  # seconds one worker spends transferring the uncached bytes (K, R)
    storage_bound: F  # seconds the node's (or client's) storage bandwidth needs for the batch (K, R)
    read_bytes: F  # uncached bytes read for the batch (K, R)
    cores: F  # cores the rank's loader may use: CPU limit, node cores, neighbours (K, R)
    cores_nolimit: F  # the same without the pod's CPU limit (K, R)
    workers: int
    queue: int  # batches the prefetch queue holds per rank
    loader_mem: F  # loader stalls on host memory reclaim/swap (K, R)
    h2d: F  # exposed host-to-device copy time (K, R)
    h2d_bytes: F  # (K, R)
    t_compute: F  # tensor-core (compute-roof) kernel time (K, R)
    t_hbm: F  # memory-roof kernel time (K, R)
    launch: F  # host time to launch the iteration's kernels (K, R)
    launch_penalty: F  # extra launch time from CFS throttling and CPU contention (K, R)
    main_mem: F  # trainer stalls on host memory (page faults, swap-in) (K, R)
    oom: F  # restarts after OOM kills (K, R)
    gc: F  # garbage-collector pauses (K, R)
    comm_nvlink: F  # all-reduce time on NVLink (K,)
    comm_pcie: F  # all-reduce time on PCIe peer-to-peer (K,)
    comm_net: F  # inter-node all-reduce time, congestion included (K,)
    intra_bytes: float  # bytes each GPU sends intra-node per all-reduce
    inter_bytes: float  # bytes each node sends inter-node per all-reduce
    comm_overlap: float  # share of backward the all-reduce can hide under
    ckpt: F  # checkpoint pause at the end of the iteration (K,)
    clock: F  # SM clock as a share of max boost (K, R)
    congested: F  # 1 where the fabric is in a congestion episode (K,)
    noisy: F  # 1 where the rank's node has a busy neighbour (K, R)


def episodes(rng: np.random.Generator, k: int, rate: float, mean_len: float) -> F:
    """A 0/1 mask of episodes over k iterations: Poisson starts, exponential lengths."""
    mask = np.zeros(k + 1)
    n = int(rng.poisson(rate * k))
    if n:
        starts = rng.integers(0, k, n)
        ends = np.minimum(k, starts + 1 + rng.exponential(mean_len, n).astype(np.int64))
        np.add.at(mask, starts, 1.0)
        np.add.at(mask, ends, -1.0)
    out: F = (np.cumsum(mask)[:k] > 0).astype(np.float64)
    return out


def _sizes(rng: np.random.Generator, s: Setup, k: int, r: int) -> tuple[F, F]:
    """A batch's size relative to the median (decode, bytes) and its padded compute factor.

    The sum over a batch averages item sizes (sigma / sqrt(b)) but a rare huge item (a long clip, a
    big image) adds a Pareto tail; padded batches cost what their longest item costs.
    """
    wl, b = s.pipeline.workload, s.pipeline.batch
    size = rng.lognormal(0.0, wl.size_sigma / np.sqrt(b), (k, r))
    tail = rng.random((k, r)) < min(0.5, 0.002 * b)
    size = size + tail * (rng.pareto(1.5, (k, r)) * wl.size_sigma * 20.0 / b)
    if not wl.pad:
        return size, np.ones((k, r)) * rng.lognormal(0.0, 0.02, (k, r))
    # the largest of b normal draws: about sqrt(2 ln b) with a Gumbel spread (b = 1 still has a spread)
    spread = np.sqrt(2.0 * np.log(max(b, 2)))
    zmax = spread * (b > 1) + rng.gumbel(0.0, 1.0, (k, r)) / spread
    pad = np.exp(wl.size_sigma * zmax - wl.size_sigma**2 / 2.0)
    return size, pad


def _clock(rng: np.random.Generator, s: Setup, k: int, r: int) -> F:
    """SM clock share: per-board spread, DVFS jitter, the power cap, and a straggler's episodes."""
    d = s.disturbances
    base = 1.0 - rng.uniform(0.0, d.clock_spread, r)
    clock = base[None, :] * (1.0 - np.abs(rng.normal(0.0, 0.015, (k, r))))
    # Clocks follow power roughly as f ~ P^0.4 under load (dynamic power ~ f V^2, V tracking f).
    clock = clock * min(1.0, d.power_cap**0.4)
    if d.straggler is not None:
        if d.straggler_kind == "slow-board":
            clock[:, d.straggler] *= rng.uniform(0.6, 0.8)
        else:
            ep = episodes(rng, k, 0.004, k * 0.08)
            clock[:, d.straggler] *= 1.0 - ep * rng.uniform(0.25, 0.5)
    out: F = np.clip(clock, 0.2, 1.0)
    return out


def _gpu(rng: np.random.Generator, s: Setup, k: int, r: int, pad: F, clock: F) -> tuple[F, F]:
    """Roofline time of the tensor-core part and of the memory-bound part of forward+backward."""
    wl, pipe, board = s.pipeline.workload, s.pipeline, s.cluster.board
    if wl.key.startswith("llm"):
        tokens = LLM_TOKENS * (0.25 if wl.pad else 1.0)
        flop = 6.0 * wl.params_m * 1e6 * tokens
        hbm = flop * LLM_HBM_BYTES_PER_FLOP
    else:
        flop, hbm = wl.gflop * 1e9, wl.hbm_mb * 1e6
    peak = board.tensor_tflops * 1e12 / (1.0 if pipe.amp else board.fp32_slowdown)
    eff = wl.mm_eff * rng.uniform(0.8, 1.1)
    t_c = pipe.batch * flop * pad / (peak * eff * clock)
    t_m = pipe.batch * hbm * pipe.hbm_scale * pad / (board.hbm_gbps * GB * HBM_EFF) * (1.0 if pipe.amp else 1.3)
    t_m = t_m * rng.lognormal(0.0, 0.03, (k, r))
    return t_c, t_m


def _loader(rng: np.random.Generator, s: Setup, k: int, r: int, size: F) -> dict[str, F]:
    """Decode work, storage waits and bytes of each rank's next batch."""
    c, pipe, wl = s.cluster, s.pipeline, s.pipeline.workload
    b = pipe.batch
    # With decoding on the GPU (DALI, nvJPEG) the host keeps a tenth of the work: reading and collation.
    decode = b * wl.decode_ms * 1e-3 * size * rng.lognormal(0.0, 0.1, (k, r)) * (0.1 if pipe.gpu_decode else 1.0)
    batch_bytes = b * wl.sample_kb * 1e3 * size
    hit = np.clip(rng.beta(20.0 * pipe.cache_hit + 0.5, 20.0 * (1.0 - pipe.cache_hit) + 0.5, (k, r)), 0.0, 1.0)
    miss = batch_bytes * (1.0 - hit)
    # Object stores are read in 4 MB ranges of sharded archives; file stores a file per sample, or
    # 256 KB reads of packed files (records, Parquet row groups) for small samples.
    chunk = 4e6 if c.storage.key == "object-store" else max(wl.sample_kb * 1e3, 256e3)
    requests = np.ceil(miss / chunk)
    lat = c.storage_latency_s * rng.lognormal(0.0, c.storage.tail_sigma, (k, r))
    io_latency = requests * lat * rng.lognormal(0.0, 0.3, (k, r))
    node_share = c.gpus if not c.storage.network or c.storage.key != "object-store" else c.gpus * 0.5
    return {
        "decode": decode,
        "io_latency": io_latency,
        "io_xfer": miss / (c.storage_gbps * GB),
        "storage_bound": miss * node_share / (c.storage_gbps * GB),
        "read_bytes": miss,
    }


def _cores(rng: np.random.Generator, s: Setup, k: int, r: int) -> tuple[F, F, F]:
    """Cores each rank's loader can use with and without the CPU limit, and the neighbour mask."""
    c, pipe, d = s.cluster, s.pipeline, s.disturbances
    pod = np.arange(r) // c.gpus
    noisy = np.zeros((k, r))
    if d.noisy_pod is not None:
        ep = episodes(rng, k, 0.002, k * 0.15) if rng.random() < 0.5 else np.ones(k)
        noisy[:, pod == d.noisy_pod] = ep[:, None]
    # The trainer process of each rank keeps about one core busy (launches, synchronisation).
    node_free = c.node_cores * (1.0 - noisy * d.noisy_share) * rng.uniform(0.85, 1.0) / c.gpus - 1.0
    nolimit = np.maximum(node_free, 0.5)
    limit = pipe.cpu_limit / c.gpus - 1.0 if pipe.cpu_limit else np.inf
    return np.maximum(np.minimum(nolimit, limit), 0.3), nolimit, noisy


def _comm(rng: np.random.Generator, s: Setup, k: int) -> tuple[F, F, F, F, float, float]:
    """Ring all-reduce time per link kind, with the fabric's congestion episodes."""
    c, pipe, d = s.cluster, s.pipeline, s.disturbances
    # DDP under autocast keeps fp32 parameters, so gradients travel as fp32 unless the Job reduces in bf16.
    grad = pipe.workload.params_m * 1e6 * (2.0 if pipe.bf16_grads else 4.0)
    intra = 2.0 * (c.gpus - 1) / c.gpus * grad if c.gpus > 1 else 0.0
    inter = 2.0 * (c.pods - 1) / c.pods * grad if c.pods > 1 else 0.0
    zero = np.zeros(k)
    nv = pc = zero
    jitter = rng.lognormal(0.0, 0.08, k)
    if intra and c.board.nvlink_gbps:
        nv = intra / (c.board.nvlink_gbps / 2.0 * GB * LINK_EFF) * jitter
    elif intra:
        pc = intra / (PCIE_GBPS[c.board.pcie_gen] * GB * LINK_EFF / (2.0 if c.pcie_shared else 1.0)) * jitter
    congested = zero
    net = zero
    if inter and c.fabric is not None:
        congested = episodes(rng, k, d.congestion_rate, 40.0)
        bw = c.nics * c.fabric.gbit / 8.0 * GB * c.fabric.efficiency
        net = inter / bw * rng.lognormal(0.0, 0.12, k) * (1.0 + congested * (d.congestion_factor - 1.0))
    return nv, pc, net, congested, intra, inter


def _host(rng: np.random.Generator, s: Setup, k: int, r: int, est_step: float) -> dict[str, F]:
    """Host-memory stalls, OOM restarts, GC pauses and checkpoints."""
    d = s.disturbances
    m = d.mem_pressure
    # Reclaim and swap-in stalls grow steeply as the working set nears the limit.
    level = max(0.0, (m - 0.3) / 0.7) ** 1.5
    main_mem = level * est_step * rng.lognormal(np.log(0.5), 0.8, (k, r))
    loader_mem = level * est_step * rng.lognormal(np.log(1.0), 0.8, (k, r))
    oom = (rng.random((k, r)) < d.oom_rate) * rng.uniform(10.0, 40.0, (k, r))
    gc = (rng.random((k, r)) < d.gc_prob) * rng.lognormal(np.log(0.12), 0.6, (k, r))
    ckpt = np.zeros(k)
    if d.ckpt_every_s:
        every = max(2, int(d.ckpt_every_s / max(est_step, 1e-3)))
        ckpt[every - 1 :: every] = d.ckpt_s
    return {"main_mem": main_mem, "loader_mem": loader_mem, "oom": oom, "gc": gc, "ckpt": ckpt}


def draw_costs(rng: np.random.Generator, s: Setup, k: int, est_step: float) -> Costs:
    """All stage costs of k iterations (``est_step`` scales the time-based pauses)."""
    c, pipe = s.cluster, s.pipeline
    r = c.pods * c.gpus
    size, pad = _sizes(rng, s, k, r)
    clock = _clock(rng, s, k, r)
    t_c, t_m = _gpu(rng, s, k, r, pad, clock)
    ld = _loader(rng, s, k, r, size)
    cores, nolimit, noisy = _cores(rng, s, k, r)
    h2d_bytes = pipe.batch * pipe.workload.h2d_kb * 1e3 * pipe.h2d_scale * size
    pcie = PCIE_GBPS[c.board.pcie_gen] * GB * LINK_EFF / (2.0 if c.pcie_shared else 1.0)
    launch = pipe.workload.kernels * pipe.launch_us * 1e-6 * rng.lognormal(0.0, 0.1, (k, r))
    # A throttled or crowded trainer launches late: the penalty grows with how short of cores it is.
    short = np.clip(pipe.workers / np.maximum(cores, 0.3) - 1.0, 0.0, 4.0) * (pipe.cpu_limit is not None)
    penalty = launch * (0.15 * short + 0.8 * noisy * s.disturbances.noisy_share)
    nv, pc, net, congested, intra, inter = _comm(rng, s, k)
    host = _host(rng, s, k, r, est_step)
    return Costs(
        decode=ld["decode"],
        io_latency=ld["io_latency"],
        io_xfer=ld["io_xfer"],
        storage_bound=ld["storage_bound"],
        read_bytes=ld["read_bytes"],
        cores=cores,
        cores_nolimit=nolimit,
        workers=pipe.workers,
        queue=max(1, pipe.workers * pipe.prefetch),
        loader_mem=host["loader_mem"],
        h2d=h2d_bytes / pcie * (1.0 - pipe.h2d_overlap),
        h2d_bytes=h2d_bytes,
        t_compute=t_c,
        t_hbm=t_m,
        launch=launch,
        launch_penalty=penalty,
        main_mem=host["main_mem"],
        oom=host["oom"],
        gc=host["gc"],
        comm_nvlink=nv,
        comm_pcie=pc,
        comm_net=net,
        intra_bytes=intra,
        inter_bytes=inter,
        comm_overlap=pipe.comm_overlap,
        ckpt=host["ckpt"],
        clock=clock,
        congested=congested,
        noisy=noisy,
    )
