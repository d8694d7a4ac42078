"""Tilting a drawn Job towards a class intent, so that every class is drawn about equally often.

A tilt only changes what a cluster could plausibly have set up that way (slower storage, a tight
CPU limit, a slow fabric, a small batch on a fast GPU, a pod memory limit below what the workers
hold); whether the tilted Job is really limited by that class is decided by the counterfactual
runs, never here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyag.counterfactual import step_time
from bottleneck_operator_dev.familyag.hardware import GIB, GPUS, gpu_by_key, storage_by_key
from bottleneck_operator_dev.familyag.host import anon_bytes, host_costs, settle_memory
from bottleneck_operator_dev.familyag.scenario import (
    DECODED,
    Scenario,
    draw_fabric,
    draw_model,
    draw_storage,
    refit,
    with_gpu,
)
from bottleneck_operator_dev.familyag.workloads import MODELS, ModelSpec

Tilt = Callable[[Scenario, np.random.Generator], Scenario]


def _model(name: str) -> ModelSpec:
    return next(m for m in MODELS if m.name == name)


def _with_model(sc: Scenario, model: ModelSpec, rng: np.random.Generator) -> Scenario:
    """The Job with another model (and a batch of it)."""
    return replace(sc, model=model, batch=int(rng.choice(model.batches)), files=model.files and rng.random() < 0.7)


def _fitting(sc: Scenario, names: tuple[str, ...], rng: np.random.Generator) -> ModelSpec:
    fits = [m for m in MODELS if m.name in names and m.min_memory <= sc.gpu.memory_bytes]
    return fits[int(rng.integers(len(fits)))] if fits else _model(names[0])


def _sound(sc: Scenario, rng: np.random.Generator, keep: str) -> Scenario:
    """The Job with the stages other than ``keep`` set up soundly, each only most of the time."""
    if keep != "io" and rng.random() < 0.85:
        kind = storage_by_key(str(rng.choice(["nvme", "nvme", "lustre"])))
        store = draw_storage(rng, kind)
        sc = replace(
            sc,
            storage=kind,
            storage_bps=store["bps"],
            storage_latency=store["latency"],
            stream_bps=store["stream"],
            cache_warm=sc.cache_warm or rng.random() < 0.5,
        )
    if keep != "cpu" and rng.random() < 0.85:
        limit = None if rng.random() < 0.6 else float(rng.choice([16, 24, 32])) * sc.gpus_per_pod
        sc = replace(
            sc,
            workers=max(sc.workers, int(rng.choice([8, 10, 12, 16]))),
            cpu_limit=limit,
            gpu_decode=sc.model.kind in DECODED and rng.random() < 0.75,
            aug=min(sc.aug, 1.2),
            neighbours=replace(sc.neighbours, cpu=min(sc.neighbours.cpu, 0.1 * sc.node_cpus)),
        )
    if keep != "memory" and rng.random() < 0.9:
        sc = replace(sc, mem_limit=None, swap="none", swap_bytes=0.0)
    if keep != "interconnect" and rng.random() < 0.85:
        fabric = draw_fabric(rng, gpu_by_key("h100")) if sc.pods > 1 else None
        sc = replace(
            sc,
            fabric=fabric,
            nic_ports=int(rng.choice([4, 8])) if fabric else 0,
            pinned=True,
            pcie_share=1.0,
            nvlink_health=1.0,
        )
    return sc


def _free_step(sc: Scenario, *stages: str) -> float:
    """The Job's step time with ``stages`` ample: what it would run at without the scarce resource."""
    settled = settle_memory(sc)
    return step_time(settled, frozenset(stages))


def _io(sc: Scenario, rng: np.random.Generator) -> Scenario:
    """Sample-heavy data on storage that cannot keep up: slow or remote, small files, a cold cache.

    The storage's bandwidth is drawn as a share (15-90 %) of what the Job would read without the limit.
    """
    if sc.gpu.key == "l4":
        sc = with_gpu(sc, gpu_by_key(str(rng.choice(["a100", "h100", "l40s"]))), rng)
    names = ("resnet50", "vit-b16", "efficientnet-b0", "conformer-l", "wav2vec2-base")
    sc = _with_model(replace(sc, gpus_per_pod=sc.node_gpus), _fitting(sc, names, rng), rng)
    sc = _sound(sc, rng, "io")
    kind = storage_by_key(str(rng.choice(["nfs", "object-store", "block-volume", "nvme-iomax", "sata-ssd", "lustre"])))
    store = draw_storage(rng, kind)
    sc = refit(
        replace(
            sc,
            storage=kind,
            storage_bps=store["bps"],
            storage_latency=store["latency"],
            stream_bps=store["stream"],
            files=rng.random() < 0.6,
            cache_warm=rng.random() < 0.3,
        ),
        rng,
    )
    need = sc.gpus_per_pod * host_costs(settle_memory(sc)).miss_bytes / _free_step(sc, "storage")
    bps = float(np.clip(need * rng.uniform(0.15, 0.9), 0.2 * kind.bps[0], kind.bps[1]))
    return replace(sc, storage_bps=bps, stream_bps=min(sc.stream_bps, bps))


def _cpu(sc: Scenario, rng: np.random.Generator) -> Scenario:
    """Costly decoding with too little CPU: a tight CFS limit, too few workers, or a crowded node.

    The CPU the loader gets is drawn as a share (20-85 %) of what it would use without the limit.
    """
    names = (
        "resnet50",
        "vit-b16",
        "efficientnet-b0",
        "conformer-l",
        "wav2vec2-base",
        "llama2-7b-lora",
        "dlrm-host-tables",
    )
    sc = _sound(_with_model(sc, _fitting(sc, names, rng), rng), rng, "cpu")
    sc = refit(replace(sc, gpu_decode=False, cache_warm=True, cpu_limit=None, aug=float(rng.uniform(0.8, 2.0))), rng)
    hc = host_costs(settle_memory(sc))
    free = _free_step(sc, "cpu")
    ranks, share = sc.gpus_per_pod, float(rng.uniform(0.2, 0.85))
    need = ranks * ((hc.decode_cpu + hc.host_cpu) / free + 1.2)
    how = rng.choice(["throttled", "few-workers", "crowded"])
    if how == "few-workers" and hc.decode_cpu / free * share < sc.workers - 1:
        return replace(sc, workers=max(1, int(hc.decode_cpu / free * share)))
    sc = replace(sc, workers=min(32, max(sc.workers, int(np.ceil(hc.decode_cpu / free * 1.2)) + 1)))
    if how == "crowded":
        system = 0.5 + 0.02 * sc.node_cpus
        taken = max(0.0, sc.node_cpus - system - need * share)
        return replace(sc, neighbours=replace(sc.neighbours, count=max(1, sc.neighbours.count), cpu=taken))
    return replace(sc, cpu_limit=max(1.0, round(need * share, 1)))


def _interconnect(sc: Scenario, rng: np.random.Generator) -> Scenario:
    """Much to move over a slow link: a slow fabric, PCIe-only peers, host tables, or all-to-all traffic."""
    how = rng.choice(["network", "network", "pcie", "nvlink"])
    if how == "network":
        model = _fitting(sc, ("llama2-7b-full", "llama2-7b", "gpt-1.3b", "moe-8x1b", "vit-l16", "gpt-1.3b-sft"), rng)
        sc = _sound(_with_model(sc, model, rng), rng, "interconnect")
        fabric = draw_fabric(rng, GPUS[3]) if rng.random() < 0.7 else draw_fabric(rng, sc.gpu)
        return replace(sc, pods=int(rng.choice([2, 4, 8])), fabric=fabric, nic_ports=1, batch=min(model.batches))
    if how == "pcie":
        if rng.random() < 0.5:
            sc = _sound(_with_model(sc, _model("dlrm-host-tables"), rng), rng, "interconnect")
            return replace(sc, pinned=rng.random() < 0.3, pcie_share=2.0, cpu_limit=None, workers=8)
        sc = with_gpu(sc, gpu_by_key(str(rng.choice(["l40s", "l4"]))), rng, per_pod=int(rng.choice([4, 8])))
        model = _fitting(sc, ("gpt-350m", "vit-l16", "gpt-1.3b-sft", "vit-b16"), rng)
        sc = _sound(_with_model(replace(sc, pods=1), model, rng), rng, "interconnect")
        return replace(sc, batch=min(model.batches), pcie_share=2.0)
    sc = with_gpu(sc, gpu_by_key(str(rng.choice(["a100", "h100", "h200"]))), rng, per_pod=8)
    sc = _sound(_with_model(replace(sc, pods=1), _model("dlrm-gpu-tables"), rng), rng, "interconnect")
    return replace(sc, nvlink_health=float(rng.choice([1.0, 0.5])))


def _gpu(sc: Scenario, rng: np.random.Generator) -> Scenario:
    """Compute-heavy models on a sound setup, or small kernels issued one by one (launch-bound)."""
    if rng.random() < 0.3:
        sc = with_gpu(sc, gpu_by_key(str(rng.choice(["h100", "h200", "a100"]))), rng)
        sc = _with_model(sc, _fitting(sc, ("efficientnet-b0", "gpt-350m", "resnet50"), rng), rng)
        sc = _sound(sc, rng, "gpu")
        return replace(sc, batch=min(sc.model.batches), mode="eager", launch_s=float(rng.uniform(8e-6, 20e-6)))
    model = draw_model(rng, sc.gpu, ("llm-pretrain", "llm-finetune", "llm-pretrain", "vision-vit", "speech"))
    sc = _sound(_with_model(sc, model, rng), rng, "gpu")
    return replace(sc, batch=max(model.batches))


def _memory(sc: Scenario, rng: np.random.Generator) -> Scenario:
    """HBM-bound kernels (depthwise convs, embedding gathers) or host memory short enough to swap.

    For swapping, the share of the touched memory that does not fit is drawn log-uniformly (0.05-2 %).
    """
    if rng.random() < 0.4:
        sc = with_gpu(sc, GPUS[int(rng.choice([0, 3, 4]))], rng, per_pod=1)
        model = _model(str(rng.choice(["efficientnet-b0", "dlrm-gpu-tables"])))
        sc = _sound(_with_model(replace(sc, pods=1), model, rng), rng, "memory")
        return replace(sc, batch=max(model.batches), mode="compiled", gpu_decode=True)
    names = ("dlrm-host-tables", "dlrm-host-tables", "dlrm-host-tables", "resnet50", "conformer-l", "vit-b16")
    sc = _sound(_with_model(sc, _fitting(sc, names, rng), rng), rng, "memory")
    calm = replace(sc.neighbours, cpu=min(sc.neighbours.cpu, 0.05 * sc.node_cpus))
    sc = replace(sc, workers=max(sc.workers, 8), cpu_limit=None, neighbours=calm)
    low, high = 5e-4, 0.02
    if sc.model.tables == 0:
        rss = float(rng.uniform(2.0, 8.0)) * GIB
        sc = replace(sc, worker_rss=rss, gpu_decode=True, workers=int(rng.choice([4, 6, 8])))
        low, high = 2e-3, 0.03
    sc = refit(replace(sc, swap=str(rng.choice(["zram", "disk"])), mem_limit=None), rng)
    anon = anon_bytes(sc)
    touched = sc.model.tables if sc.model.tables else anon
    excess = touched * float(np.exp(rng.uniform(np.log(low), np.log(high))))
    limit = (anon - excess) / 0.97
    if limit > sc.node_ram * 0.9:
        sc = replace(sc, node_ram=limit / 0.9)
    room = max(0.0, sc.node_ram * 0.96 - limit * 1.02)
    neighbours = replace(sc.neighbours, memory=min(sc.neighbours.memory, room))
    return replace(sc, swap_bytes=max(4.0 * excess, 0.05 * sc.node_ram), mem_limit=limit, neighbours=neighbours)


TILTS: dict[Bottleneck, Tilt] = {
    Bottleneck.IO: _io,
    Bottleneck.CPU: _cpu,
    Bottleneck.INTERCONNECT: _interconnect,
    Bottleneck.GPU: _gpu,
    Bottleneck.MEMORY: _memory,
}


def tilt(sc: Scenario, intent: Bottleneck, rng: np.random.Generator) -> Scenario:
    """The Job tilted towards ``intent`` (a no-op for Unknown)."""
    fn = TILTS.get(intent)
    return fn(sc, rng) if fn else sc
