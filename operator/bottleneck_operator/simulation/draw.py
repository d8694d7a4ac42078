"""Drawing a scenario for a target class: hardware, workload, shapes, relative stage times, then the knobs.

The draw follows the order described in :mod:`.scenario`; every helper below draws from the job's
generator, so their order (and the order of draws inside each) is part of the simulator's output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from bottleneck_operator.analysis.features.hardware import GpuSpec
from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator.simulation import catalog as cat
from bottleneck_operator.simulation.environment import Environment, draw_extras, sample_environment
from bottleneck_operator.simulation.scenario import (
    MECHANISMS,
    Scenario,
    comm_seconds_per_byte,
    in_holdout,
    launch_bound,
)
from bottleneck_operator.simulation.stages import AMBIGUOUS_MARGIN, StageTimes, label_of


def _u(rng: np.random.Generator, lo_hi: tuple[float, float]) -> float:
    return float(rng.uniform(*lo_hi))


def _logu(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _pick(rng: np.random.Generator, options: tuple[Any, ...] | list[Any]) -> Any:
    return options[int(rng.integers(len(options)))]


def _draw_combo(rng: np.random.Generator, holdout: bool, target: Bottleneck) -> tuple[str, str, int]:
    storages = list(cat.STORAGE_KINDS)
    if target is Bottleneck.IO and rng.random() < 0.6:
        # most input-bound jobs read remote or slow storage
        storages = ["object-fuse", "object-http", "nfs", "sata-ssd"]
    while True:
        combo = (_pick(rng, list(cat.GPU_KINDS)), _pick(rng, storages), _pick(rng, cat.NIC_GBPS))
        if in_holdout(*combo) == holdout:
            return combo


def draw_scenario(
    rng: np.random.Generator,
    target: Bottleneck,
    *,
    ambiguous: bool,
    holdout: bool,
    seed: int,
    scrape_interval: float | None = None,
    dcgm_fieldset: str | None = None,
) -> Scenario:
    """Draw scenarios until one is bound by ``target`` with a margin in the requested band, then its extras.

    The extras (optional telemetry families, power caps, FP32 math, OOM kills:
    :func:`~bottleneck_operator.simulation.environment.draw_extras`) come from a generator of their
    own, so the draws here are the same with or without them.

    Args:
        rng: the generator to draw from.
        target: the intended bound.
        ambiguous: draw a near-tie (margin below ``AMBIGUOUS_MARGIN``; its label is whichever stage wins).
        holdout: draw only hardware combinations reserved for holdout.
        seed: the job's own seed (drives its time series).
        scrape_interval / dcgm_fieldset: force these instead of drawing them.

    Returns:
        The scenario.
    """
    sc = _draw_until(rng, target, ambiguous, holdout, seed, scrape_interval, dcgm_fieldset)
    env, tags = draw_extras(seed, sc.env, mechanism=sc.mechanism, gpus_per_node=sc.gpus_per_node)
    return replace(sc, env=env, tags=(*sc.tags, *tags))


def _draw_until(
    rng: np.random.Generator,
    target: Bottleneck,
    ambiguous: bool,
    holdout: bool,
    seed: int,
    scrape_interval: float | None,
    dcgm_fieldset: str | None,
) -> Scenario:
    """The rejection loop of :func:`draw_scenario` (its arguments)."""
    last: Scenario | None = None
    # The mechanism is drawn once, so that redraws do not favour the mechanisms that succeed easily.
    mechanism = str(_pick(rng, MECHANISMS[target]))
    if launch_bound(target, seed):
        mechanism = "gpu-launch"
    for _ in range(200):
        sc = _draw_once(rng, target, mechanism, ambiguous, holdout, seed, scrape_interval, dcgm_fieldset)
        last = sc
        if ambiguous and sc.margin < AMBIGUOUS_MARGIN:
            return sc
        if not ambiguous and sc.label == target.value and sc.margin >= AMBIGUOUS_MARGIN + 0.02:
            return sc
    if last is None:  # pragma: no cover - every class is reachable from the tables
        raise RuntimeError(f"could not draw a {target.value} scenario")
    return last


@dataclass(frozen=True)
class _Shape:
    """Pods, GPUs and nodes of one job."""

    gpus_per_node: int
    gpp: int  # GPUs per pod
    n_pods: int
    ppn: int  # pods per node
    node_cpus: int
    node_mem: float

    @property
    def n_nodes(self) -> int:
        return math.ceil(self.n_pods / self.ppn)

    @property
    def gpn_job(self) -> int:
        """This job's GPUs on one node (they share its storage and NIC)."""
        return self.gpp * self.ppn


@dataclass(frozen=True)
class _Draft:
    """What the knob draws share: the job's generator, mechanism, workload, shape and relative times."""

    rng: np.random.Generator
    target: Bottleneck
    mechanism: str
    spec: GpuSpec
    wl: cat.Workload
    shape: _Shape
    batch: int
    m: float  # margin drawn for the runner-up
    rel: dict[Bottleneck, float]  # per-class step time relative to the target's
    scale: float  # seconds per unit of ``rel``

    def t(self, c: Bottleneck) -> float:
        """Seconds per step the drawn relative times give class ``c``."""
        return self.rel[c] * self.scale


def _draw_workload(rng: np.random.Generator, mechanism: str) -> cat.Workload:
    wl_keys = list(cat.WORKLOADS)
    if mechanism == "mem-dram" and rng.random() < 0.5:
        wl_keys = ["recsys"]
    elif mechanism == "ic-comm" and rng.random() < 0.4:
        wl_keys = ["llm", "vision-vit"]
    elif mechanism in ("ic-h2d", "cpu-decode"):
        wl_keys = ["vision-cnn", "vision-vit", "av"]  # decoded images/clips: big tensors, costly decode
    return cat.WORKLOADS[_pick(rng, wl_keys)]


def _draw_shape(rng: np.random.Generator, mechanism: str, kind: cat.GpuKind) -> _Shape:
    """1-8 GPUs per pod, 1-8 pods, packed onto nodes or spread."""
    gpus_per_node = int(_pick(rng, kind.gpus_per_node))
    gpp = int(_pick(rng, [g for g in (1, 2, 4, 8) if g <= gpus_per_node]))
    n_pods = int(_pick(rng, (1, 1, 1, 2, 2, 4, 8)))
    if mechanism == "ic-comm" and gpp * n_pods == 1:
        n_pods = int(_pick(rng, (2, 4, 8)))
    ppn_max = max(1, gpus_per_node // gpp)
    ppn = min(n_pods, ppn_max) if rng.random() < 0.6 else 1
    if mechanism == "ic-comm" and kind.spec.nvlink_bps and rng.random() < 0.8:
        # NVLink inside a node rarely bounds a step: communication-bound jobs mostly span nodes.
        n_pods, ppn = max(n_pods, 2), 1
    node_cpus = int(_pick(rng, kind.cpus_per_gpu)) * gpus_per_node
    node_mem = float(_pick(rng, kind.mem_gib_per_gpu)) * gpus_per_node * cat.GIB
    return _Shape(gpus_per_node, gpp, n_pods, ppn, node_cpus, node_mem)


def _draw_relative(
    rng: np.random.Generator, target: Bottleneck, mechanism: str, ambiguous: bool
) -> tuple[float, dict[Bottleneck, float]]:
    """Relative times: target 1, runner-up 1 - m, the rest lower."""
    m = float(rng.uniform(0.0, 0.12)) if ambiguous else float(0.17 + 0.75 * rng.beta(1.1, 2.5))
    others = [c for c in MECHANISMS if c is not target]
    runner = others[int(rng.integers(len(others)))]
    rel = {c: (1 - m) * _logu(rng, 0.05, 0.95) for c in others}
    rel[runner] = 1 - m
    rel[target] = 1.0
    if mechanism == "mem-dram":
        rel[Bottleneck.GPU] = max(rel[Bottleneck.GPU], 0.15)
    elif mechanism in ("ic-h2d", "cpu-decode", "ic-comm", "io-storage"):
        # A stage seldom stretches far past the GPU's math time, but a small model on a large GPU does
        # (tests/data gpu-loader, gpu-io, gpu-h2d: an H200 under 1 % busy): a quarter of these Jobs.
        low = mechanism != "ic-comm" and rng.random() < 0.25
        least = (1 - m) * _logu(rng, 0.005, 0.3) if low else max(rel[Bottleneck.GPU], (1 - m) * _u(rng, (0.3, 0.9)))
        rel[Bottleneck.GPU] = least
    return m, rel


def _draw_io(d: _Draft, storage: cat.StorageKind, nic: int) -> tuple[float, float, float]:
    """Storage throughput the pod's share gets (contention, small files, throttling lower it).

    Returns:
        (storage capacity, bytes a sample, achieved read bandwidth), bytes/s.
    """
    cap = _u(d.rng, storage.bw_bps)
    if storage.network:
        cap = min(cap, nic * 1e9 / 8 * 0.9)
    bytes_ps = _u(d.rng, d.wl.bytes_per_sample)
    t_io = d.t(Bottleneck.IO)
    gpn_job = d.shape.gpn_job
    bw = d.batch * gpn_job * bytes_ps / t_io
    floor = (0.1 if storage.network else 0.2) * cap if d.target is Bottleneck.IO else 0.3 * cap
    if bw > cap:
        bw = cap
    elif bw < floor:
        bytes_ps = min(bytes_ps * floor / bw, d.wl.bytes_per_sample[1] * 3)
        bw = max(floor, d.batch * gpn_job * bytes_ps / t_io)
    return cap, bytes_ps, bw


def _draw_cpu(d: _Draft) -> tuple[float, float, float | None]:
    """Loader workers on the pod's share of the node, or a CFS quota: (decode core-s, loader cores, limit)."""
    rng, wl, batch, gpp = d.rng, d.wl, d.batch, d.shape.gpp
    share = d.shape.node_cpus / d.shape.ppn
    # DataLoader workers: often a fixed num_workers per GPU, sometimes one per core of the pod's share.
    pick = rng.random()  # a fifth run one to three per GPU (the gpu-loader recording: one)
    per_gpu = (1, 3) if pick < 0.2 else (4, 16)
    workers = min(share * 0.9, gpp * _u(rng, per_gpu)) if pick < 0.6 else share * 0.9
    decode = _u(rng, wl.decode_core_s)
    t_cpu = d.t(Bottleneck.CPU)
    cpu_limit: float | None = None
    if d.mechanism == "cpu-throttle":
        cores = batch * gpp * decode / t_cpu / 0.95
        if cores < 1.0 or cores > workers:
            decode = min(max(decode * (max(1.0, min(cores, workers * 0.8)) / cores), 1e-6), 0.5)
            cores = batch * gpp * decode / t_cpu / 0.95
        cpu_limit = round(max(cores, 1.0) * 2) / 2
        loader = max(cpu_limit * 0.95 - 0.05 * gpp, 0.5)  # waiting trainers sleep: ~0.05 core each
    else:
        loader = workers
        decode = t_cpu * loader / (batch * gpp)
        decode = min(max(decode, wl.decode_core_s[0] * 0.3), wl.decode_core_s[1] * 3)
        need = batch * gpp * decode / t_cpu + gpp * 1.2
        if rng.random() < 0.5 and need * 1.3 <= share:  # a limit with headroom: CFS series exist, stay low
            cpu_limit = round(min(need * _u(rng, (1.3, 2.5)), share) * 2) / 2
    return decode, loader, cpu_limit


def _draw_host_memory(d: _Draft, loader: float) -> tuple[float, float]:
    """Fault stalls in the loader (swap on SSD ~0.1-1 ms a fault, zram tens of µs): (faults a sample, latency)."""
    rng = d.rng
    latency = _logu(rng, 2e-5, 1e-3)
    if d.mechanism == "mem-host":
        # Thrashing shows thousands to tens of thousands of major faults a second (TELEMETRY.md); the
        # wait per fault (swap-in plus direct reclaim) follows from how much of the loaders' time stalls.
        t_mem = d.t(Bottleneck.MEMORY)
        t_cpu = d.t(Bottleneck.CPU)
        stall = t_mem / (t_mem + t_cpu)
        fps = _logu(rng, 2e3, 6e4)
        latency = min(max(loader * stall / fps, 1e-4), 0.05)
        faults = t_mem * loader / (d.batch * d.shape.gpp * latency)
    else:
        faults = _logu(rng, 1e-6, 1e-3) if d.wl.key != "recsys" else 0.0
    return faults, latency


def _draw_dram(d: _Draft) -> float:
    """GPU DRAM time over math time: bandwidth-bound kernels have it above 1."""
    dram_ratio = _u(d.rng, d.wl.dram_ratio)
    if d.mechanism == "mem-dram":
        return 1.0 / d.rel[Bottleneck.GPU]
    limit = (1 - d.m) * 0.95 / d.rel[Bottleneck.GPU] if d.target is not Bottleneck.MEMORY else dram_ratio
    return min(dram_ratio, limit)


def _draw_h2d(d: _Draft) -> tuple[float, float]:
    """Host-to-device copies: (PCIe efficiency, bytes a sample).

    Pageable memory goes through a staging buffer (~55-85 % of the link), and GPUs behind one PCIe
    switch share its x16 uplink when they copy at once (DGX-style topologies).
    """
    rng, wl = d.rng, d.wl
    pcie_eff = _u(rng, (0.55, 0.85)) * (_u(rng, (0.5, 1.0)) if d.shape.gpn_job >= 2 else 1.0)
    _u(rng, wl.h2d_bytes)  # drawn, then set from the wanted time (kept so that later draws stay put)
    ic = d.rel[Bottleneck.INTERCONNECT]
    t_h2d_want = (ic if d.mechanism != "ic-comm" else ic * 0.3) * d.scale
    # float32 clips/volumes or several crops per sample make the payload far larger than a uint8 image
    h2d_lo, h2d_hi = wl.h2d_bytes[0] * 0.5, wl.h2d_bytes[1]
    if d.mechanism == "ic-h2d":  # 3-D volumes, float32 clip stacks: several MB a sample (128^3 float32 = 8 MB)
        h2d_hi = max(wl.h2d_bytes[1] * 12, 16e6)
    h2d = min(max(t_h2d_want * d.spec.pcie_bps * pcie_eff / d.batch, h2d_lo), h2d_hi)
    return pcie_eff, h2d


def _draw_grad(d: _Draft, spb: float) -> float:
    """Gradient bytes all-reduced a step."""
    wl = d.wl
    grad = _u(d.rng, wl.params) * wl.grad_bytes_per_param
    if spb > 0:
        share_ic = 1.0 if d.mechanism == "ic-comm" or d.target is not Bottleneck.INTERCONNECT else 0.3
        want = d.rel[Bottleneck.INTERCONNECT] * share_ic * d.scale / spb
        if d.mechanism == "ic-comm":  # model size anywhere in the workload's range (x3: ZeRO/FSDP gathers)
            grad = min(max(want, wl.params[0] * wl.grad_bytes_per_param), wl.params[1] * wl.grad_bytes_per_param * 3)
        else:
            grad = min(grad, want)
    return grad


def _draw_once(
    rng: np.random.Generator,
    target: Bottleneck,
    mechanism: str,
    ambiguous: bool,
    holdout: bool,
    seed: int,
    scrape_interval: float | None,
    dcgm_fieldset: str | None,
) -> Scenario:
    gpu, storage_key, nic = _draw_combo(rng, holdout, target)
    kind = cat.GPU_KINDS[gpu]
    spec = kind.spec
    storage = cat.STORAGE_KINDS[storage_key]
    wl = _draw_workload(rng, mechanism)
    shape = _draw_shape(rng, mechanism, kind)
    # GPU math time of one step: the anchor every other time is set against.
    batch = int(rng.integers(wl.batch[0], wl.batch[1] + 1))
    gpu_sps = _u(rng, wl.a100_sps) * (spec.tflops / 312.0) ** 0.9 * _u(rng, (0.7, 1.05))
    t_flops = batch / gpu_sps
    m, rel = _draw_relative(rng, target, mechanism, ambiguous)
    d = _Draft(rng, target, mechanism, spec, wl, shape, batch, m, rel, t_flops / rel[Bottleneck.GPU])
    cap, bytes_ps, bw = _draw_io(d, storage, nic)
    decode, loader, cpu_limit = _draw_cpu(d)
    faults, latency = _draw_host_memory(d, loader)
    dram_ratio = _draw_dram(d) * (LAUNCH_DRAM_SCALE if mechanism == "gpu-launch" else 1.0)
    pcie_eff, h2d = _draw_h2d(d)
    spb = comm_seconds_per_byte(gpu, shape.gpn_job, shape.n_nodes, nic)
    grad = _draw_grad(d, spb)
    gpp = shape.gpp
    times = StageTimes(
        io=batch * shape.gpn_job * bytes_ps / bw,
        cpu=batch * gpp * decode / loader,
        host_mem=batch * gpp * faults * latency / loader,
        h2d=batch * h2d / (spec.pcie_bps * pcie_eff),
        comm=grad * spb,
        flops=t_flops,
        dram=t_flops * dram_ratio,
    )
    label, margin, runner_up = label_of(times)
    launch = mechanism == "gpu-launch"
    env, tags = _draw_environment(d, gpu, storage, times, label, (scrape_interval, dcgm_fieldset))
    if cpu_limit is not None and mechanism == "cpu-throttle":
        tags = (*tags, "cpu_throttled")
    if launch:
        tags = (*tags, "launch_bound")
    return Scenario(
        seed=seed, target=target.value, mechanism=mechanism, workload=wl.key, gpu=gpu,
        gpus_per_pod=gpp, n_pods=shape.n_pods, pods_per_node=shape.ppn, gpus_per_node=shape.gpus_per_node,
        node_cpus=shape.node_cpus, node_mem_bytes=shape.node_mem, storage=storage_key, storage_cap_bps=cap,
        storage_bw_bps=bw, nic_gbps=nic, batch=batch, gpu_sps=gpu_sps, bytes_per_sample=bytes_ps,
        decode_core_s=decode, loader_cores=loader, cpu_limit=cpu_limit, h2d_bytes=h2d, pcie_eff=pcie_eff,
        grad_bytes=grad, dram_ratio=dram_ratio, faults_per_sample=faults, fault_latency_s=latency,
        overlap_slack=_u(rng, (0.02, 0.12)),
        **_kernel_efficiency(rng, wl, mechanism),
        # Kernels run only part of a launch-bound step, however busy GPU_UTIL reads.
        kernel_duty=_u(rng, (0.45, 0.85)) if launch else 1.0,
        times=times, label=label.value, margin=margin,
        runner_up=runner_up.value, env=env, tags=tags,
    )  # fmt: skip


# small kernels' data stays in L2: DRAM 0.0 on an H200 (tests/data/gpu-launch, gpu-launch-wide)
LAUNCH_DRAM_SCALE = 0.05


def _kernel_efficiency(rng: np.random.Generator, wl: cat.Workload, mechanism: str) -> dict[str, float]:
    """Tensor-pipe and SM activity while kernels run (drawn in this order: tensor, then SM).

    Bandwidth-bound kernels barely use the tensor pipes. Launch-bound steps (small kernels, eager
    mode, many tiny ops, a Python loop that cannot queue work fast enough) run kernels part of the
    time, each with few warps and barely the tensor pipes: an H200 read SM activity 0.04 and 0.52 of
    its busy time for MLPs 256 and 512 wide, tensor 0.0 (tests/data/gpu-launch, gpu-launch-wide).
    """
    tensor = _u(rng, wl.tensor_eff)
    sm = _u(rng, (0.75, 0.95))
    if mechanism == "mem-dram":
        tensor *= 0.15
    elif mechanism == "gpu-launch":
        tensor *= 0.02
        sm = 0.03 + (sm - 0.75) / 0.2 * 0.57  # the same draw, mapped onto 0.03-0.6
    return {"tensor_eff": tensor, "sm_eff": sm}


def _draw_environment(
    d: _Draft,
    gpu: str,
    storage: cat.StorageKind,
    times: StageTimes,
    label: Bottleneck,
    forced: tuple[float | None, str | None],
) -> tuple[Environment, tuple[str, ...]]:
    """The job's environment; ``forced``: the scrape interval and dcgm field set, or None to draw them."""
    scrape_interval, dcgm_fieldset = forced
    return sample_environment(
        d.rng,
        gpu=gpu,
        mechanism=d.mechanism,
        label=label,
        storage_network=storage.network,
        n_nodes=d.shape.n_nodes,
        node_cpus=d.shape.node_cpus,
        node_mem=d.shape.node_mem,
        scrape_interval=scrape_interval,
        dcgm_fieldset=dcgm_fieldset,
        comm_share=times.comm / max(times.bounds().values()),
        kernel_share=max(times.flops, times.dram) / max(times.bounds().values()),
    )
