"""Drawing a scenario for a target class: hardware, workload, shapes, relative stage times, then the knobs.

The draw follows the order described in :mod:`.scenario`; every helper below draws from the job's
generator, so their order (and the order of draws inside each) is part of the simulator's output.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.simulation import catalog as cat
from bottleneck_operator_dev.simulation.environment import Environment, draw_extras, sample_environment
from bottleneck_operator_dev.simulation.knobs import (
    KERNEL_DUTY,
    LAUNCH_DRAM_SCALE,
    Draft,
    Shape,
    draw_cpu,
    draw_dram,
    draw_grad,
    draw_h2d,
    draw_host_memory,
    draw_io,
    kernel_efficiency,
    log_uniform,
    pick,
    uniform,
)
from bottleneck_operator_dev.simulation.scenario import (
    MECHANISMS,
    Scenario,
    comm_seconds_per_byte,
    in_holdout,
    launch_bound,
)
from bottleneck_operator_dev.simulation.stages import AMBIGUOUS_MARGIN, StageTimes, label_of


def _draw_combo(rng: np.random.Generator, holdout: bool, target: Bottleneck) -> tuple[str, str, int]:
    storages = list(cat.STORAGE_KINDS)
    if target is Bottleneck.IO and rng.random() < 0.6:
        # most input-bound jobs read remote or slow storage
        storages = ["object-fuse", "object-http", "nfs", "sata-ssd"]
    while True:
        combo = (pick(rng, list(cat.GPU_KINDS)), pick(rng, storages), pick(rng, cat.NIC_GBPS))
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
    :func:`~bottleneck_operator_dev.simulation.environment.draw_extras`) come from a generator of their
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
    mechanism = str(pick(rng, MECHANISMS[target]))
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


def _draw_workload(rng: np.random.Generator, mechanism: str) -> cat.Workload:
    wl_keys = list(cat.WORKLOADS)
    if mechanism == "mem-dram" and rng.random() < 0.5:
        wl_keys = ["recsys"]
    elif mechanism == "ic-comm" and rng.random() < 0.4:
        wl_keys = ["llm", "vision-vit"]
    elif mechanism in ("ic-h2d", "cpu-decode"):
        wl_keys = ["vision-cnn", "vision-vit", "av"]  # decoded images/clips: big tensors, costly decode
    return cat.WORKLOADS[pick(rng, wl_keys)]


def _draw_shape(rng: np.random.Generator, mechanism: str, kind: cat.GpuKind) -> Shape:
    """1-8 GPUs per pod, 1-8 pods, packed onto nodes or spread."""
    gpus_per_node = int(pick(rng, kind.gpus_per_node))
    gpp = int(pick(rng, [g for g in (1, 2, 4, 8) if g <= gpus_per_node]))
    n_pods = int(pick(rng, (1, 1, 1, 2, 2, 4, 8)))
    if mechanism == "ic-comm" and gpp * n_pods == 1:
        n_pods = int(pick(rng, (2, 4, 8)))
    ppn_max = max(1, gpus_per_node // gpp)
    ppn = min(n_pods, ppn_max) if rng.random() < 0.6 else 1
    if mechanism == "ic-comm" and kind.spec.nvlink_bps and rng.random() < 0.8:
        # NVLink inside a node rarely bounds a step: communication-bound jobs mostly span nodes.
        n_pods, ppn = max(n_pods, 2), 1
    node_cpus = int(pick(rng, kind.cpus_per_gpu)) * gpus_per_node
    node_mem = float(pick(rng, kind.mem_gib_per_gpu)) * gpus_per_node * cat.GIB
    return Shape(gpus_per_node, gpp, n_pods, ppn, node_cpus, node_mem)


def _draw_relative(
    rng: np.random.Generator, target: Bottleneck, mechanism: str, ambiguous: bool
) -> tuple[float, dict[Bottleneck, float]]:
    """Relative times: target 1, runner-up 1 - m, the rest lower."""
    m = float(rng.uniform(0.0, 0.12)) if ambiguous else float(0.17 + 0.75 * rng.beta(1.1, 2.5))
    others = [c for c in MECHANISMS if c is not target]
    runner = others[int(rng.integers(len(others)))]
    rel = {c: (1 - m) * log_uniform(rng, 0.05, 0.95) for c in others}
    rel[runner] = 1 - m
    rel[target] = 1.0
    if mechanism == "mem-dram":
        rel[Bottleneck.GPU] = max(rel[Bottleneck.GPU], 0.15)
    elif mechanism in ("ic-h2d", "cpu-decode", "ic-comm", "io-storage"):
        # A stage seldom stretches far past the GPU's math time, but a small model on a large GPU does
        # (tests/data gpu-loader, gpu-io, gpu-h2d: an H200 under 1 % busy): a quarter of these Jobs.
        low = mechanism != "ic-comm" and rng.random() < 0.25
        least = (
            (1 - m) * log_uniform(rng, 0.005, 0.3)
            if low
            else max(rel[Bottleneck.GPU], (1 - m) * uniform(rng, (0.3, 0.9)))
        )
        rel[Bottleneck.GPU] = least
    return m, rel


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
    gpu_sps = uniform(rng, wl.a100_sps) * (spec.tflops / 312.0) ** 0.9 * uniform(rng, (0.7, 1.05))
    t_flops = batch / gpu_sps
    m, rel = _draw_relative(rng, target, mechanism, ambiguous)
    d = Draft(rng, target, mechanism, spec, wl, shape, batch, m, rel, t_flops / rel[Bottleneck.GPU])
    cap, bytes_ps, bw = draw_io(d, storage, nic)
    decode, loader, cpu_limit = draw_cpu(d)
    faults, latency = draw_host_memory(d, loader)
    dram_ratio = draw_dram(d) * (LAUNCH_DRAM_SCALE if mechanism == "gpu-launch" else 1.0)
    pcie_eff, h2d = draw_h2d(d)
    spb = comm_seconds_per_byte(gpu, shape.gpn_job, shape.n_nodes, nic)
    grad = draw_grad(d, spb)
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
        overlap_slack=uniform(rng, (0.02, 0.12)),
        **kernel_efficiency(rng, wl, mechanism),
        # Kernels run only part of a launch-bound step, however busy GPU_UTIL reads.
        kernel_duty=uniform(rng, KERNEL_DUTY) if launch else 1.0,
        times=times, label=label.value, margin=margin,
        runner_up=runner_up.value, env=env, tags=tags,
    )  # fmt: skip


def _draw_environment(
    d: Draft,
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
