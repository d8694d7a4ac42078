"""From a scenario to the physical state of its pods, GPUs and nodes at every scrape.

The one source of truth both outputs are rendered from (OpenMetrics/live exporters and ``to_window``).
Stage times drift slowly and jitter per sample; start-up, evaluation passes and checkpoints change
what the job does; the step time of each sample follows from the overlapped stages
(:func:`~bottleneck_operator_dev.simulation.stages.step_time`), and every metric follows from the step
time: samples/s, bytes/s, busy shares. Gauges hold the value at each scrape; counters are cumulative
sums of the per-interval rates, so ``rate()`` over them gives back the simulated rates.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.simulation import catalog as cat
from bottleneck_operator_dev.simulation.hostextras import host_extras
from bottleneck_operator_dev.simulation.hostside import host_state
from bottleneck_operator_dev.simulation.scenario import Scenario
from bottleneck_operator_dev.simulation.state import EXPORTERS, B, F, JobState, rounded

# Class order of ``JobState.pod["bound_class"]``.
BOUND_CLASSES = (Bottleneck.IO, Bottleneck.CPU, Bottleneck.INTERCONNECT, Bottleneck.GPU, Bottleneck.MEMORY)
# the link share at which a copy engine streams without a pause: pinned copies moved 58 GB/s, 0.9 of
# PCIe Gen5 x16, on an H200 (tests/data/gpu-h2d-pinned)
COPY_ENGINE_RATE = 0.9


def _slow(rng: np.random.Generator, shape: tuple[int, ...], t: F, amp: float) -> F:
    """Smooth drift: two sinusoids of random period (5-40 min) and phase, in log scale."""
    out = np.zeros((*shape, t.size))
    for _ in range(2):
        period = rng.uniform(300, 2400, size=(*shape, 1))
        phase = rng.uniform(0, 2 * np.pi, size=(*shape, 1))
        out += amp * np.sin(2 * np.pi * t / period + phase)
    return out


def _phase_masks(sc: Scenario, rel: F) -> tuple[F, F, F]:
    """Share of each interval spent training (vs start-up/checkpoint), in evaluation, in checkpointing."""
    env = sc.env
    active = np.clip((rel - env.startup_s) / max(env.startup_s * 0.3, 1.0), 0.0, 1.0)
    ckpt = np.zeros_like(rel)
    if env.ckpt_every_s:
        pos = np.mod(rel - env.startup_s, env.ckpt_every_s)
        ckpt = ((pos < env.ckpt_len_s) & (rel > env.startup_s + env.ckpt_every_s * 0.5)).astype(float)
    evaluation = np.zeros_like(rel)
    if env.eval_every_s:
        pos = np.mod(rel - env.startup_s, env.eval_every_s)
        evaluation = ((pos > env.eval_every_s - env.eval_len_s) & (rel > env.startup_s)).astype(float)
    return active * (1 - ckpt), evaluation, ckpt


def _gaps(rng: np.random.Generator, n: int, prob: float, si: float, rows: int = 0) -> B:
    shape = (rows, n) if rows else (n,)
    up = np.ones(shape, dtype=bool)
    for r in range(max(rows, 1)):
        if rng.random() < prob and n > 8:
            length = max(1, int(rng.uniform(120, 480) / si))
            at = int(rng.integers(1, max(2, n - length)))
            if rows:
                up[r, at : at + length] = False
            else:
                up[at : at + length] = False
    return up


def _hold_dcgm(st: JobState, collect_s: float, si: float, phase: float) -> None:
    """dcgm-exporter serves what it last collected: scrapes faster than its collections repeat values."""
    if collect_s <= si:
        return
    rel = st.t - st.t[0]
    last_collection = np.floor((rel - phase) / collect_s) * collect_s + phase
    held = np.clip(np.ceil((last_collection - 1e-9) / si), 0, rel.size - 1).astype(np.intp)
    for key, v in st.gpu.items():
        st.gpu[key] = v[..., held]


def simulate(sc: Scenario, start: float, end: float, pod_node: tuple[int, ...]) -> JobState:
    """Compute the job's state at every scrape between ``start`` and ``end``.

    Args:
        sc: the scenario.
        start / end: the job's first and last second (unix).
        pod_node: for each pod, the index of its node among the job's nodes.

    Returns:
        The state, deterministic for ``sc.seed``.
    """
    rng = np.random.default_rng([sc.seed, 7])
    # What came after the first signals (FP32/FP16 pipes, board clocks and limits, swap-ins, OOM kills,
    # RDMA port counters) draws from its own generator: every earlier signal of a seed stays as it was.
    side = np.random.default_rng([sc.seed, 0xE8])
    env = sc.env
    si = env.scrape_interval
    t0 = np.ceil(start / si) * si
    t = np.arange(t0, end + 1e-9, si, dtype=float)
    n = t.size
    rel = t - start
    N = max(pod_node) + 1
    offsets = {e: round(float(rng.uniform(0.0, min(si, 15.0) * 0.8)), 3) for e in EXPORTERS}
    up = {e: _gaps(rng, n, env.gap_prob if e != "ksm" else env.gap_prob * 0.2, si) for e in EXPORTERS}
    up["node"] = _gaps(rng, n, env.gap_prob, si, rows=N)
    st = JobState(t=t, offsets=offsets, up=up, pod_node=pod_node)

    # The steps below draw from ``rng`` in this order; reordering them changes every job.
    active, evaluation, ckpt = _phase_masks(sc, rel)
    x = _stage_times(sc, rng, t, evaluation)
    step, wait = _step_time(sc, st, x)
    sps = active * sc.batch / step  # samples/s per GPU while training
    a = active
    dt = np.diff(t, prepend=t[0] - si)
    sm, tensor, dram = _gpu_activity(sc, st, rng, x, step, wait, a, rel)
    fp32 = _gpu_pipes(sc, st, side, sm)
    _gpu_transfers(sc, st, rng, a * (1 - evaluation), step, sps)
    _gpu_memory_power(sc, st, (rng, side), rel, sm, tensor, dram, fp32)
    host_state(sc, st, rng, x=x, step=step, sps=sps, a=a, evaluation=evaluation, ckpt=ckpt, rel=rel, dt=dt, N=N)
    host_extras(sc, st, side, x=x, step=step, sps=sps, a=a, evaluation=evaluation, rel=rel, dt=dt, N=N)
    _hold_dcgm(st, env.dcgm_collect_s, si, float(rng.uniform(0.0, env.dcgm_collect_s)))
    if env.counter_reset and n > 10:
        # node-exporter restarts on the first node: its counters start again from zero (rate() copes).
        r = int(rng.integers(n // 3, 2 * n // 3))
        for key, counter in st.node.items():
            if key.endswith("_c"):
                counter[0, ..., r:] -= counter[0, ..., r - 1 : r]
        st.up["node"][0, r - 1] = False
    return st


def _per_gpu(rng: np.random.Generator, v: F, gpus: int, sigma: float, lo: float = 0.0, hi: float = np.inf) -> F:
    """A per-pod series ``v`` (P, n) spread over each pod's GPUs (P, G, n) with a little jitter."""
    g = v[:, None, :] * np.exp(rng.normal(0.0, sigma, size=(v.shape[0], gpus, v.shape[1])))
    return np.clip(g, lo, hi)


def _stage_times(sc: Scenario, rng: np.random.Generator, t: F, evaluation: F) -> dict[str, F]:
    """Per pod and sample stage times: slow drifts, jitter, and I/O bursts (cache misses, metadata storms)."""
    env = sc.env
    P, n = sc.n_pods, t.size
    tm = sc.times
    base = {
        # A cached dataset is copied from the page cache: a few per cent of a storage read's time.
        "io": tm.io * (0.02 if env.dataset_cached else 1.0), "cpu": tm.cpu, "host_mem": tm.host_mem, "h2d": tm.h2d,
        "comm": tm.comm, "flops": tm.flops, "dram": tm.dram,
    }  # fmt: skip
    x: dict[str, F] = {}
    for k, v in base.items():
        f = _slow(rng, (P,), t, env.drift) + rng.normal(0.0, env.noise, size=(P, n))
        x[k] = v * np.exp(f)
    x["io"] = x["io"] * np.where(rng.random((P, n)) < 0.03, rng.uniform(1.3, 2.5, (P, n)), 1.0)
    # Evaluation: forward only (about a third of the math), no all-reduce, lighter augmentation.
    x["flops"] = x["flops"] * (1 - 0.65 * evaluation)
    x["dram"] = x["dram"] * (1 - 0.6 * evaluation)
    x["comm"] = x["comm"] * (1 - evaluation)
    x["cpu"] = x["cpu"] * (1 - 0.35 * evaluation)
    return x


def _step_time(sc: Scenario, st: JobState, x: dict[str, F]) -> tuple[F, F]:
    """(seconds per step, share of it each rank waits for the slowest), per pod and sample."""
    bounds = np.stack(
        [
            x["io"],
            x["cpu"],
            np.maximum(x["h2d"], x["comm"]),
            x["flops"],
            np.maximum(x["host_mem"], x["dram"]),
        ]
    )
    ordered = np.sort(bounds, axis=0)
    step = ordered[-1] + sc.overlap_slack * ordered[-2]  # (P, n) seconds per step, as stages.step_time
    st.pod["slowest_s"] = ordered[-1]  # the slowest stage's time, before slack and synchronisation
    # Synchronous data parallelism: every rank waits in the all-reduce for the slowest one, with NCCL
    # kernels spinning meanwhile (they count as GPU busy).
    wait = np.zeros_like(step)
    if sc.n_pods > 1:
        sync = step.max(axis=0, keepdims=True)
        wait = (sync - step) / sync
        step = np.repeat(sync, sc.n_pods, axis=0)
    st.pod["step_s"] = step
    # Which class bounds each sample (order of BOUND_CLASSES): the label should win most of the time.
    st.pod["bound_class"] = np.argmax(bounds, axis=0).astype(np.float64)
    return step, wait


def _gpu_activity(
    sc: Scenario, st: JobState, rng: np.random.Generator, x: dict[str, F], step: F, wait: F, a: F, rel: F
) -> tuple[F, F, F]:
    """GPU and SM activity, tensor and DRAM pipes; returns (SM, tensor, DRAM active) per pod and sample."""
    G = sc.gpus_per_pod
    kernel = np.maximum(x["flops"], x["dram"])
    # the share of time in which kernels run: the GPU's work being issued, less the launch gaps
    u = np.clip(a * kernel / step, 0, 1) * sc.kernel_duty
    c = np.clip(a * (np.minimum(x["comm"], step) / step + wait), 0, 1)  # NCCL kernels running
    # Start-up: a few kernels (warm-up, cuDNN autotuning) while the model and data load.
    warmup = (1 - a) * (rel < sc.env.startup_s) * rng.uniform(0.0, 0.08)
    busy = np.clip(u + c * (1 - u) + warmup, 0, 1)
    # GPU_UTIL: the share of time in which a kernel or a copy ran. Small kernels with launch gaps in
    # between read their time share, as the graphics engine does (0.49 against 0.48 on an H200,
    # tests/data/gpu-launch). The copy engines count for the time they move bytes: pinned copies
    # streaming at the link's rate read 0.99 with the SMs idle, pageable ones at 0.15 of it 0.18
    # (gpu-h2d-pinned, gpu-h2d).
    copying = np.clip(a * np.minimum(x["h2d"], step) / step, 0, 1)
    copy_engine = copying * min(sc.pcie_eff / COPY_ENGINE_RATE, 1.0)
    util = np.clip(u + c * (1 - u) + warmup, 0, 1)
    util = util + (1 - util) * copy_engine
    st.gpu["gpu_util"] = rounded(_per_gpu(rng, util, G, 0.04, 0.0, 1.0) * 100.0)
    # Any kernel, NCCL's waiting ones too, is graphics-engine time as much as GPU_UTIL time: four real loops
    # read the two within 0.005 (tests/data/gpu-compute, gpu-hbm, gpu-launch, gpu-launch-wide)
    st.gpu["gr_engine_active"] = _per_gpu(rng, busy * rng.uniform(0.97, 1.0), G, 0.04, 0.0, 1.0)
    # NCCL keeps a handful of SMs spinning; warps waiting on memory still count as SM-active.
    sm = u * sc.sm_eff + c * rng.uniform(0.04, 0.12)
    st.gpu["sm_active"] = _per_gpu(rng, sm, G, 0.05, 0.0, 1.0)
    dram_bound = x["dram"] > x["flops"]
    # occupancy over SM activity: 0.85 and 0.37 in two real HBM-bound loops, 0.15 and 0.41 in two
    # compute-bound ones (tests/data/gpu-hbm, gpu-streamed, gpu-compute, gpu-transformer)
    occ = np.where(dram_bound, rng.uniform(0.35, 0.85), rng.uniform(0.12, 0.45))
    if sc.kernel_duty < 1:  # a few warps a kernel: 0.03 and 0.13 of SM activity (gpu-launch, gpu-launch-wide)
        occ = np.full(occ.shape, rng.uniform(0.02, 0.15))
    st.gpu["sm_occupancy"] = _per_gpu(rng, sm * occ, G, 0.06, 0.0, 1.0)
    # FP32 math (TF32 off, no mixed precision) runs on the SMs' FP32 pipes: tensor 0.0 on an H200's fp32
    # products (tests/data/gpu-compute-fp32)
    tensor = u * sc.tensor_eff * x["flops"] / kernel * (0.0 if sc.env.fp32_math else 1.0)
    st.gpu["tensor_active"] = _per_gpu(rng, tensor, G, 0.06, 0.0, 1.0)
    # DRAM activity: ~0.8 is the practical peak of HBM/GDDR (DCGM profiling documentation).
    dram = u * np.minimum(0.8 * x["dram"] / kernel, 0.92)
    st.gpu["dram_active"] = _per_gpu(rng, dram, G, 0.05, 0.0, 0.95)
    st.gpu["mem_copy_util"] = rounded(np.minimum(st.gpu["dram_active"] * rng.uniform(0.9, 1.2) * 100, 100.0))
    return sm, tensor, dram


def _gpu_pipes(sc: Scenario, st: JobState, side: np.random.Generator, sm: F) -> F:
    """FP32 and FP16 pipe activity per GPU; returns the FP32 pipes' per pod and sample.

    On an H200 (tests/data, DCGM's pipe fields through NVML's GPM): fp32 products with TF32 off kept the
    FP32 pipes 0.76 active at SM activity 0.97; a transformer's layer norms and activations 0.03 at 0.86,
    fp32 HBM streams 0.01, bf16 products 0.0; the FP16 pipes stayed at 0.0 in every loop (bf16 math runs
    on the tensor pipes, its elementwise ops in FP32). Loops in fp16 mixed precision run some of their
    elementwise ops on the FP16 pipes.
    """
    fp32_eff = side.uniform(0.7, 0.85) if sc.env.fp32_math else side.uniform(0.005, 0.06)
    fp16_eff = side.uniform(0.005, 0.05) if side.random() < 0.4 and not sc.env.fp32_math else 0.0
    fp32 = sm * fp32_eff
    st.gpu["fp32_active"] = _per_gpu(side, fp32, sc.gpus_per_pod, 0.05, 0.0, 1.0)
    st.gpu["fp16_active"] = _per_gpu(side, sm * fp16_eff, sc.gpus_per_pod, 0.05, 0.0, 1.0)
    return np.asarray(fp32)


def _gpu_transfers(sc: Scenario, st: JobState, rng: np.random.Generator, training: F, step: F, sps: F) -> None:
    """PCIe: H2D batches (+ P2P all-reduce without NVLink), D2H a little (losses, metrics); NVLink."""
    G = sc.gpus_per_pod
    spec = cat.GPU_KINDS[sc.gpu].spec
    gpn = sc.gpus_per_pod * sc.pods_per_node
    intra = 2 * (gpn - 1) / gpn * sc.grad_bytes if gpn > 1 else 0.0
    comm_rate = training * intra / step
    h2d_rate = sps * sc.h2d_bytes + 2e5
    p2p = comm_rate if not spec.nvlink_bps else 0.0 * comm_rate
    if sc.env.rdma:  # GPUDirect RDMA: the NIC reads and writes GPU memory over PCIe, as much each way
        p2p = p2p + training * 2 * (sc.n_nodes - 1) / sc.n_nodes * sc.grad_bytes / step / gpn
    cap = spec.pcie_bps * 0.97
    st.gpu["pcie_rx"] = _per_gpu(rng, np.minimum(h2d_rate + p2p, cap), G, 0.05)
    st.gpu["pcie_tx"] = _per_gpu(rng, np.minimum(h2d_rate * rng.uniform(0.01, 0.04) + p2p + 1e5, cap), G, 0.08)
    nvl = comm_rate if spec.nvlink_bps else np.zeros_like(comm_rate)
    st.gpu["nvlink_tx"] = _per_gpu(rng, nvl, G, 0.03)
    st.gpu["nvlink_rx"] = _per_gpu(rng, nvl, G, 0.03)
    # An instantaneous TX+RX rate, whatever dcgm-exporter's "counter" type says.
    st.gpu["nvlink_total"] = (st.gpu["nvlink_tx"] + st.gpu["nvlink_rx"]) / cat.NVLINK_TOTAL_UNIT_BYTES


def _gpu_memory_power(
    sc: Scenario,
    st: JobState,
    rngs: tuple[np.random.Generator, np.random.Generator],
    rel: F,
    sm: F,
    tensor: F,
    dram: F,
    fp32: F,
) -> None:
    """Framebuffer use, power draw and SM clock (lowered to hold the power limit), the limit and the
    clock-event reasons; ``rngs``: the job's generator and the one of what came later (see ``simulate``)."""
    rng, side = rngs
    env = sc.env
    kind = cat.GPU_KINDS[sc.gpu]
    fb_total_mib = kind.spec.memory_gb * 1e9 / cat.MIB
    ramp = np.clip(rel / max(env.startup_s * 0.6, 1.0), 0.05, 1.0)
    shape = (sc.n_pods, rel.size)
    fb_used = _per_gpu(rng, np.broadcast_to(env.fb_frac * ramp, shape).copy(), sc.gpus_per_pod, 0.004, 0.0, 0.998)
    fb_used = fb_used * fb_total_mib
    st.gpu["fb_used"] = rounded(fb_used)
    st.gpu["fb_free"] = rounded(np.maximum(fb_total_mib * 0.995 - fb_used, 0.0))
    # The draw the pipes ask for, as a share of the board's limit: tensor-core math draws the most, SMs
    # issuing anything some, HBM traffic a little. An H200 drew 0.99 of its limit under bf16 matmuls
    # (their demand is above it), 0.72 streaming HBM, 0.19-0.30 launching tiny kernels and 0.18 idle
    # with a context held (tests/data/gpu-compute, gpu-hbm, gpu-launch*, gpu-io; recordings/README.md).
    # FP32 math draws about as much from the FP32 pipes: 0.99 of the limit at the full clock for fp32
    # products (gpu-compute-fp32); the few FP32 ops of mixed-precision loops are in the fits above.
    fp32_draw = 0.65 * fp32 if env.fp32_math else 0.0
    demand = kind.idle_w + kind.tdp_w * (0.42 * sm + 0.75 * tensor + 0.15 * dram + fp32_draw)
    demand = _per_gpu(rng, demand, sc.gpus_per_pod, 0.03, kind.idle_w * 0.9)
    # The limit the board enforces: its default (the TDP), or lower where the cluster caps its boards.
    limit = kind.tdp_w * env.power_cap
    # the board holds its limit from just under it (687-694 W of 700), not at one repeated value
    st.gpu["power"] = demand / (1.0 + (demand / limit) ** 16) ** (1 / 16)
    st.gpu["power_limit"] = np.full(demand.shape, limit)
    # Above the limit the clock falls until the draw fits: 0.75 of 1980 MHz on that H200. A GPU that
    # holds a CUDA context idles at its maximum clock (every starved loop there).
    steep = rng.uniform(1.0, 1.3)
    held = np.minimum(1.0, limit / demand) ** steep
    # Power management moves the clock a few bins from sample to sample and boards boost differently,
    # healthy or not: a clock a little under the maximum says nothing by itself (at most 2.5 % per
    # board, 2 % per sample here, so a busy board off its limit stays above 0.95 of its maximum).
    board = side.uniform(0.975, 1.0, size=(*demand.shape[:2], 1))
    wander = 1.0 - np.minimum(np.abs(side.normal(0.0, 0.008, size=demand.shape)), 0.02)
    st.gpu["sm_clock"] = rounded(kind.boost_mhz * held * board * wander / 15) * 15
    # NVML's reasons: the software power cap while it holds the clock down, idle while nothing runs.
    capping = np.where(held < 0.995, cat.CLOCK_REASON_SW_POWER_CAP, 0)
    st.gpu["clock_reasons"] = np.asarray(capping + np.where(st.gpu["gpu_util"] < 1.0, cat.CLOCK_REASON_IDLE, 0), float)
