"""Scenario sampling: the hardware, workload and cluster conditions of one simulated job.

A scenario is drawn for a target class: first the hardware (GPU x storage x NIC, kept disjoint between
training and holdout draws), the workload and the node shapes, then the per-step time of every class
relative to the GPU's math time (the target slowest by the drawn margin, a runner-up, the rest below),
and finally the physical knobs that realise those times within published ranges (storage throughput,
decode cost, CPU quota, PCIe payload, gradient size, fault rate). Knobs that hit a physical limit
change the times; the label is then recomputed from the realised times and a draw whose label or
margin misses is redrawn.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator.simulation import catalog as cat
from bottleneck_operator.simulation.environment import Environment, sample_environment
from bottleneck_operator.simulation.stages import AMBIGUOUS_MARGIN, StageTimes, label_of

MECHANISMS: dict[Bottleneck, tuple[str, ...]] = {
    Bottleneck.IO: ("io-storage",),
    Bottleneck.CPU: ("cpu-decode", "cpu-throttle"),
    Bottleneck.MEMORY: ("mem-host", "mem-dram", "mem-fb"),
    Bottleneck.INTERCONNECT: ("ic-h2d", "ic-comm"),
    Bottleneck.GPU: ("gpu",),
}


def in_holdout(gpu: str, storage: str, nic_gbps: int) -> bool:
    """Whether a hardware combination is reserved for holdout draws (about one in five, by a stable hash)."""
    return zlib.crc32(f"{gpu}|{storage}|{nic_gbps}".encode()) % 5 == 0


@dataclass(frozen=True)
class Scenario:
    """Everything that defines one simulated job; plain values so it serialises as JSON.

    Per-step times are per GPU batch; rates are bytes/s; see ``stages.StageTimes`` for the stages.
    """

    seed: int
    target: str
    mechanism: str
    workload: str
    gpu: str
    gpus_per_pod: int
    n_pods: int
    pods_per_node: int
    gpus_per_node: int
    node_cpus: int
    node_mem_bytes: float
    storage: str
    storage_cap_bps: float
    storage_bw_bps: float
    nic_gbps: int
    batch: int
    gpu_sps: float
    bytes_per_sample: float
    decode_core_s: float
    loader_cores: float
    cpu_limit: float | None
    h2d_bytes: float
    pcie_eff: float
    grad_bytes: float
    dram_ratio: float
    faults_per_sample: float
    fault_latency_s: float
    fb_stall_s: float
    overlap_slack: float
    tensor_eff: float
    sm_eff: float
    times: StageTimes
    label: str
    margin: float
    runner_up: str
    env: Environment
    tags: tuple[str, ...] = field(default=())

    @property
    def n_nodes(self) -> int:
        return math.ceil(self.n_pods / self.pods_per_node)

    @property
    def world(self) -> int:
        return self.gpus_per_pod * self.n_pods

    @property
    def dcgm_fieldset(self) -> str:
        return self.env.dcgm_fieldset

    @property
    def scrape_interval(self) -> float:
        return self.env.scrape_interval

    def as_dict(self) -> dict[str, Any]:
        """The scenario as JSON-friendly data (for ``--labels`` files and debugging)."""
        return asdict(self)


def comm_seconds_per_byte(sc_gpu: str, gpus_on_node: int, n_nodes: int, nic_gbps: int) -> float:
    """Seconds a ring all-reduce takes per gradient byte (NVLink or PCIe in the node, the NIC between nodes)."""
    spec = cat.GPU_KINDS[sc_gpu].spec
    t = 0.0
    if gpus_on_node > 1:
        # NVLink figures are both directions summed; ~80 % bus efficiency. Without NVLink, P2P copies go
        # through the PCIe root complex at roughly a third of the link rate.
        intra = spec.nvlink_bps / 2 * 0.8 if spec.nvlink_bps else spec.pcie_bps * 0.35
        t += 2 * (gpus_on_node - 1) / gpus_on_node / intra
    if n_nodes > 1:
        t += 2 * (n_nodes - 1) / n_nodes / (nic_gbps * 1e9 / 8 * 0.85)
    return t


def _u(rng: np.random.Generator, lo_hi: tuple[float, float]) -> float:
    return float(rng.uniform(*lo_hi))


def _logu(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _pick(rng: np.random.Generator, options: tuple[Any, ...] | list[Any]) -> Any:
    return options[int(rng.integers(len(options)))]


def _draw_combo(rng: np.random.Generator, holdout: bool, target: Bottleneck) -> tuple[str, str, int]:
    storages = list(cat.STORAGE_KINDS)
    if target is Bottleneck.IO and rng.random() < 0.6:
        storages = ["object-fuse", "nfs", "sata-ssd"]  # most input-bound jobs read remote or slow storage
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
    """Draw scenarios until one is bound by ``target`` with a margin in the requested band.

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
    last: Scenario | None = None
    # The mechanism is drawn once, so that redraws do not favour the mechanisms that succeed easily.
    mechanism = str(_pick(rng, MECHANISMS[target]))
    for _ in range(200):
        sc = _draw_once(rng, target, mechanism, ambiguous, holdout, seed, scrape_interval, dcgm_fieldset)
        if sc is None:
            continue
        last = sc
        if ambiguous and sc.margin < AMBIGUOUS_MARGIN:
            return sc
        if not ambiguous and sc.label == target.value and sc.margin >= AMBIGUOUS_MARGIN + 0.02:
            return sc
    if last is None:  # pragma: no cover - every class is reachable from the tables
        raise RuntimeError(f"could not draw a {target.value} scenario")
    return last


def _draw_once(
    rng: np.random.Generator,
    target: Bottleneck,
    mechanism: str,
    ambiguous: bool,
    holdout: bool,
    seed: int,
    scrape_interval: float | None,
    dcgm_fieldset: str | None,
) -> Scenario | None:
    gpu, storage_key, nic = _draw_combo(rng, holdout, target)
    kind = cat.GPU_KINDS[gpu]
    spec = kind.spec
    storage = cat.STORAGE_KINDS[storage_key]
    wl_keys = list(cat.WORKLOADS)
    if mechanism == "mem-dram" and rng.random() < 0.5:
        wl_keys = ["recsys"]
    elif mechanism == "ic-comm" and rng.random() < 0.4:
        wl_keys = ["llm", "vision-vit"]
    elif mechanism in ("ic-h2d", "cpu-decode"):
        wl_keys = ["vision-cnn", "vision-vit", "av"]  # decoded images/clips: big tensors, costly decode
    wl = cat.WORKLOADS[_pick(rng, wl_keys)]

    # --- shapes: 1-8 GPUs per pod, 1-8 pods, packed onto nodes or spread
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
    n_nodes = math.ceil(n_pods / ppn)
    node_cpus = int(_pick(rng, kind.cpus_per_gpu)) * gpus_per_node
    node_mem = float(_pick(rng, kind.mem_gib_per_gpu)) * gpus_per_node * cat.GIB

    # --- GPU math time of one step: the anchor every other time is set against
    batch = int(rng.integers(wl.batch[0], wl.batch[1] + 1))
    gpu_sps = _u(rng, wl.a100_sps) * (spec.tflops / 312.0) ** 0.9 * _u(rng, (0.7, 1.05))
    t_flops = batch / gpu_sps

    # --- relative times: target 1, runner-up 1 - m, the rest lower
    m = float(rng.uniform(0.0, 0.12)) if ambiguous else float(0.17 + 0.75 * rng.beta(1.1, 2.5))
    others = [c for c in MECHANISMS if c is not target]
    runner = others[int(rng.integers(len(others)))]
    rel = {c: (1 - m) * _logu(rng, 0.05, 0.95) for c in others}
    rel[runner] = 1 - m
    rel[target] = 1.0
    if mechanism == "mem-dram":
        rel[Bottleneck.GPU] = max(rel[Bottleneck.GPU], 0.15)
    elif mechanism in ("ic-h2d", "cpu-decode", "ic-comm", "io-storage"):
        # Knobs with physical ceilings (bytes a sample, decode cost, model size) cannot stretch a stage
        # to many times the GPU's math time: keep the GPU a fair share of the bound.
        rel[Bottleneck.GPU] = max(rel[Bottleneck.GPU], (1 - m) * _u(rng, (0.3, 0.9)))
    scale = t_flops / rel[Bottleneck.GPU]

    gpn_job = gpp * ppn  # this job's GPUs on one node share its storage and NIC
    # --- IO: storage throughput the pod's share gets (contention, small files, throttling lower it)
    cap = _u(rng, storage.bw_bps)
    if storage.network:
        cap = min(cap, nic * 1e9 / 8 * 0.9)
    bytes_ps = _u(rng, wl.bytes_per_sample)
    t_io = rel[Bottleneck.IO] * scale
    bw = batch * gpn_job * bytes_ps / t_io
    floor = (0.1 if storage.network else 0.2) * cap if target is Bottleneck.IO else 0.3 * cap
    if bw > cap:
        bw = cap
    elif bw < floor:
        bytes_ps = min(bytes_ps * floor / bw, wl.bytes_per_sample[1] * 3)
        bw = max(floor, batch * gpn_job * bytes_ps / t_io)

    # --- CPU: loader workers on the pod's share of the node, or a CFS quota
    share = node_cpus / ppn
    # DataLoader workers: often a fixed num_workers per GPU, sometimes one per core of the pod's share.
    workers = min(share * 0.9, gpp * _u(rng, (4, 16))) if rng.random() < 0.5 else share * 0.9
    decode = _u(rng, wl.decode_core_s)
    t_cpu = rel[Bottleneck.CPU] * scale
    cpu_limit: float | None = None
    throttle = mechanism == "cpu-throttle"
    if throttle:
        cores = batch * gpp * decode / t_cpu / 0.95
        if cores < 1.0 or cores > workers:
            decode = min(max(decode * (max(1.0, min(cores, workers * 0.8)) / cores), 1e-6), 0.5)
            cores = batch * gpp * decode / t_cpu / 0.95
        cpu_limit = round(max(cores, 1.0) * 2) / 2
        loader = max(cpu_limit * 0.95 - 0.3, 0.5)  # the main process keeps ~0.3 core of the quota
    else:
        loader = workers
        decode = t_cpu * loader / (batch * gpp)
        decode = min(max(decode, wl.decode_core_s[0] * 0.3), wl.decode_core_s[1] * 3)
        need = batch * gpp * decode / t_cpu + gpp * 1.2
        if rng.random() < 0.5 and need * 1.3 <= share:  # a limit with headroom: CFS series exist, stay low
            cpu_limit = round(min(need * _u(rng, (1.3, 2.5)), share) * 2) / 2
    # --- host memory: fault stalls in the loader (swap on SSD ~0.1-1 ms a fault, zram tens of µs)
    latency = _logu(rng, 2e-5, 1e-3)
    if mechanism == "mem-host":
        # Thrashing shows thousands to tens of thousands of major faults a second (TELEMETRY.md); the
        # wait per fault (swap-in plus direct reclaim) follows from how much of the loaders' time stalls.
        t_mem = rel[Bottleneck.MEMORY] * scale
        stall = t_mem / (t_mem + t_cpu)
        fps = _logu(rng, 2e3, 6e4)
        latency = min(max(loader * stall / fps, 1e-4), 0.05)
        faults = t_mem * loader / (batch * gpp * latency)
    else:
        faults = _logu(rng, 1e-6, 1e-3) if wl.key != "recsys" else 0.0
    # --- GPU DRAM: bandwidth-bound kernels have DRAM time above math time
    dram_ratio = _u(rng, wl.dram_ratio)
    if mechanism == "mem-dram":
        dram_ratio = 1.0 / rel[Bottleneck.GPU]
    else:
        limit = (1 - m) * 0.95 / rel[Bottleneck.GPU] if target is not Bottleneck.MEMORY else dram_ratio
        dram_ratio = min(dram_ratio, limit)
    fb_stall = rel[Bottleneck.MEMORY] * scale if mechanism == "mem-fb" else 0.0
    # --- host-to-device copies: pageable memory goes through a staging buffer (~55-85 % of the link),
    # and GPUs behind one PCIe switch share its x16 uplink when they copy at once (DGX-style topologies).
    pcie_eff = _u(rng, (0.55, 0.85)) * (_u(rng, (0.5, 1.0)) if gpn_job >= 2 else 1.0)
    h2d = _u(rng, wl.h2d_bytes)
    t_h2d_want = (
        rel[Bottleneck.INTERCONNECT] if mechanism != "ic-comm" else rel[Bottleneck.INTERCONNECT] * 0.3
    ) * scale
    # float32 clips/volumes or several crops per sample make the payload far larger than a uint8 image
    h2d_lo, h2d_hi = wl.h2d_bytes[0] * 0.5, wl.h2d_bytes[1]
    if mechanism == "ic-h2d":  # 3-D volumes, float32 clip stacks: several MB a sample (128^3 float32 = 8 MB)
        h2d_hi = max(wl.h2d_bytes[1] * 12, 16e6)
    h2d = min(max(t_h2d_want * spec.pcie_bps * pcie_eff / batch, h2d_lo), h2d_hi)
    # --- gradient all-reduce
    spb = comm_seconds_per_byte(gpu, gpn_job, n_nodes, nic)
    grad = _u(rng, wl.params) * wl.grad_bytes_per_param
    if spb > 0:
        share_ic = 1.0 if mechanism == "ic-comm" or target is not Bottleneck.INTERCONNECT else 0.3
        want = rel[Bottleneck.INTERCONNECT] * share_ic * scale / spb
        if mechanism == "ic-comm":  # model size anywhere in the workload's range (x3: ZeRO/FSDP gathers)
            grad = min(max(want, wl.params[0] * wl.grad_bytes_per_param), wl.params[1] * wl.grad_bytes_per_param * 3)
        else:
            grad = min(grad, want)
    times = StageTimes(
        io=batch * gpn_job * bytes_ps / bw,
        cpu=batch * gpp * decode / loader,
        host_mem=batch * gpp * faults * latency / loader,
        h2d=batch * h2d / (spec.pcie_bps * pcie_eff),
        comm=grad * spb,
        flops=t_flops,
        dram=t_flops * dram_ratio,
        fb_stall=fb_stall,
    )
    label, margin, runner_up = label_of(times)
    env, tags = sample_environment(
        rng,
        gpu=gpu,
        mechanism=mechanism,
        label=label,
        storage_network=storage.network,
        n_nodes=n_nodes,
        node_cpus=node_cpus,
        node_mem=node_mem,
        scrape_interval=scrape_interval,
        dcgm_fieldset=dcgm_fieldset,
        comm_share=times.comm / max(times.bounds().values()),
        kernel_share=max(times.flops, times.dram) / max(times.bounds().values()),
    )
    if cpu_limit is not None and throttle:
        tags = (*tags, "cpu_throttled")
    return Scenario(
        seed=seed,
        target=target.value,
        mechanism=mechanism,
        workload=wl.key,
        gpu=gpu,
        gpus_per_pod=gpp,
        n_pods=n_pods,
        pods_per_node=ppn,
        gpus_per_node=gpus_per_node,
        node_cpus=node_cpus,
        node_mem_bytes=node_mem,
        storage=storage_key,
        storage_cap_bps=cap,
        storage_bw_bps=bw,
        nic_gbps=nic,
        batch=batch,
        gpu_sps=gpu_sps,
        bytes_per_sample=bytes_ps,
        decode_core_s=decode,
        loader_cores=loader,
        cpu_limit=cpu_limit,
        h2d_bytes=h2d,
        pcie_eff=pcie_eff,
        grad_bytes=grad,
        dram_ratio=dram_ratio,
        faults_per_sample=faults,
        fault_latency_s=latency,
        fb_stall_s=fb_stall,
        overlap_slack=_u(rng, (0.02, 0.12)),
        tensor_eff=_u(rng, wl.tensor_eff) * (0.15 if mechanism == "mem-dram" else 1.0),
        sm_eff=_u(rng, (0.75, 0.95)),
        times=times,
        label=label.value,
        margin=margin,
        runner_up=runner_up.value,
        env=env,
        tags=tags,
    )
