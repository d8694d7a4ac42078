"""Drawing one Job: hardware, workload, limits, neighbours, phases; then shaping it towards a class.

The class a Job is *meant* to have only steers the draw (which resource is made scarce, by how
much, and which other one nearly binds too: :mod:`.shaping`). The label itself is decided
afterwards by the counterfactual runs (:mod:`.label`); a draw whose label misses its class is
drawn again.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyw import hardware as hw
from bottleneck_operator_dev.familyw import processes as pr
from bottleneck_operator_dev.familyw.model import CELL, TICK, JobPlan, stage_rates
from bottleneck_operator_dev.familyw.shaping import pick, shape_plan, thin
from bottleneck_operator_dev.familyw.workloads import WORKLOADS, GiB, Workload

INTENTS: dict[Bottleneck, tuple[str, ...]] = {
    Bottleneck.IO: ("storage",),
    Bottleneck.CPU: ("cpu",),
    Bottleneck.INTERCONNECT: ("pcie", "nvlink", "network"),
    Bottleneck.GPU: ("compute",),
    Bottleneck.MEMORY: ("memory", "hbm"),
}
Fields = dict[str, Any]


def draw_plan(
    rng: np.random.Generator, index: int, target: Bottleneck, memory_intent: str, attempt: int, pre: float
) -> JobPlan:
    """One Job meant to be bound by ``target``, drawn and shaped (see :func:`draw_base`, :func:`finish`)."""
    return finish(rng, draw_base(rng, index, target, memory_intent, pre), attempt)


def finish(rng: np.random.Generator, base: JobPlan, attempt: int) -> JobPlan:
    """Shape a drawn Job towards its class; each later attempt makes the scarce resource 30 % scarcer.

    Easy or hard is drawn here, so a retry of the same Job may come out either way.
    """
    hard = rng.random() < 0.45
    p = shape_plan(rng, base, hard, attempt)
    # A fluid buffer must hold a few ticks of flow, or the tick itself would cap the rate: size the
    # queues to at least six ticks of the devices' fastest consumption (DataLoader queues of
    # workers x prefetch_factor batches are usually deeper than that anyway).
    floor = 6.0 * float(stage_rates(thin(p, 4)).gpu.max()) * TICK
    p.raw_cap, p.pf_cap, p.dev_cap = max(p.raw_cap, floor), max(p.pf_cap, floor), max(p.dev_cap, floor)
    p.tags = (*base.tags, "hard" if hard else "easy", *p.tags[len(base.tags) :])
    return p


def draw_base(rng: np.random.Generator, index: int, target: Bottleneck, memory_intent: str, pre: float) -> JobPlan:
    """One Job's hardware, workload, limits, tenants and phases, before any shaping.

    Args:
        rng: the Job's own generator (attempts continue its stream).
        index: the Job's index in the family.
        target: the class the Job is meant to have.
        memory_intent: "memory" or "hbm": which Memory mechanism a Memory Job aims at.
        pre: seconds simulated before the window (the first rate ranges reach back that far).
    """
    intent = memory_intent if target is Bottleneck.MEMORY else pick(rng, INTENTS[target])
    tags: list[str] = [f"intent:{intent}"]
    f: Fields = {"index": index, "target": target, "intent": intent, "pre": pre}
    f.update(_topology(rng, intent))
    f.update(_workload(rng, intent, f["gpu"]))
    tags += [f"gpu:{f['gpu'].key}", f"nodes:{f['nodes']}", f"gpus:{f['gpus']}", f"model:{f['workload'].key}"]
    tags.append(f"precision:{f['precision']}")
    f["duration"] = float(rng.uniform(720.0, 1140.0))
    f["n_cells"] = math.ceil((pre + f["duration"]) / CELL) + 1
    shape = (f["nodes"], f["n_cells"])
    f.update(_storage(rng, intent, f["gpus"], shape, tags))
    f.update(_host(rng, f["workload"], f["gpus"], f["workers"], shape, tags))
    f.update(_device(rng, f["gpu"], f["precision"], shape, tags))
    f.update(_fabric(rng, f["gpu"], shape, tags))
    f["pause"], pause_tags = pr.pauses(rng, f["n_cells"], int(pre / CELL))
    tags += list(pause_tags)
    step_samples = float(f["gpus"] * f["batch"])
    f.update(
        raw_cap=step_samples * float(rng.uniform(2.0, 6.0)),
        pf_cap=step_samples * float(rng.uniform(2.0, 4.0)),
        dev_cap=step_samples * 2.0,
        fb_frac=float(rng.uniform(0.88, 0.985)),
        mmap=f["storage"].local and rng.random() < 0.3,
    )
    return JobPlan(**f, tags=tuple(tags))


def _topology(rng: np.random.Generator, intent: str) -> Fields:
    """The GPU part, the pods (one per node) and the GPUs per pod."""
    gpus_ok = [
        i
        for i, g in enumerate(hw.GPUS)
        if (intent != "nvlink" or g.nvlink > 0) and (intent != "network" or g.key not in ("t4", "l4"))
    ]
    w = np.array([hw.GPU_WEIGHTS[i] for i in gpus_ok])
    gpu = hw.GPUS[gpus_ok[int(rng.choice(len(gpus_ok), p=w / w.sum()))]]
    nodes = int(rng.choice([2, 3, 4])) if intent == "network" else int(rng.choice([1, 1, 1, 2, 4]))
    if intent == "nvlink":
        gpus = int(rng.choice([4, 8]))
    elif gpu.nvlink > 0:
        gpus = int(rng.choice([1, 2, 4, 8, 8]))
    else:
        gpus = int(rng.choice([1, 1, 2, 4]))
    if intent == "pcie" and gpu.nvlink == 0 and rng.random() < 0.4:
        gpus = max(gpus, 2)  # PCIe-only box whose all-reduce rides PCIe peer-to-peer
    return {"gpu": gpu, "nodes": nodes, "gpus": gpus}


def _workload(rng: np.random.Generator, intent: str, gpu: hw.Gpu) -> Fields:
    """The model family, batch and precision; plausible ones for the intended bound."""
    if intent == "hbm":
        choices = tuple(w.key for w in WORKLOADS if w.mem_heavy)
    elif intent == "compute" and rng.random() < 0.3:
        choices = ("small_cnn",)
    elif intent in ("storage", "cpu"):
        choices = ("resnet50", "vit_b16", "speech", "unet3d", "small_cnn", "bert_large")
    elif intent in ("nvlink", "network"):
        choices = ("bert_large", "gpt_1b3", "dlrm", "vit_b16", "resnet50")
    else:
        choices = tuple(w.key for w in WORKLOADS)
    key = pick(rng, choices)
    wl = next(w for w in WORKLOADS if w.key == key)
    batch = int(rng.choice(wl.batches))
    if wl.key == "small_cnn" and intent == "compute":
        batch = wl.batches[0]
    if gpu.key in ("v100", "t4"):
        precision = "fp16" if rng.random() < 0.8 else "fp32"
    else:
        precision = str(rng.choice(["bf16", "bf16", "bf16", "fp16", "tf32"]))
    return {"workload": wl, "batch": batch, "precision": precision}


def _storage(rng: np.random.Generator, intent: str, gpus: int, shape: tuple[int, int], tags: list[str]) -> Fields:
    """The store, its tenants and latency bursts, the loader's workers and the page cache."""
    p = [0.15, 0.1, 0.15, 0.3, 0.3] if intent == "storage" else [0.3, 0.15, 0.05, 0.25, 0.25]
    storage = hw.STORAGES[int(rng.choice(5, p=p))]
    tags.append(f"storage:{storage.kind}")
    if storage.local:
        share = pr.tenant_share(rng, shape, float(rng.uniform(0.8, 1.0)), 0.08)
        lat = pr.latency_bursts(rng, shape, 0.15, 0.005)
    else:
        share = pr.tenant_share(rng, shape, float(rng.uniform(0.35, 0.95)), 0.35)
        lat = pr.latency_bursts(rng, shape, 0.35, 0.03)
    workers = float(rng.choice([4, 6, 8, 10, 12, 16])) * max(1, gpus // 2)
    in_flight = workers * 2.0  # DataLoader prefetch_factor 2: requests each worker keeps outstanding
    if rng.random() < 0.35:
        hit = np.broadcast_to(pr.warming(rng, shape[1], 0.0, float(rng.uniform(0.6, 0.97))), shape).copy()
        tags.append("cache-warming")
    else:
        hit = np.full(shape, float(rng.uniform(0.0, 0.3)))
    return {
        "storage": storage,
        "stor_bw": storage.bandwidth * share,
        "lat_bw": in_flight * storage.request / (storage.latency * lat),
        "hit": hit,
        "workers": workers,
    }


def _host(
    rng: np.random.Generator, wl: Workload, gpus: int, workers: float, shape: tuple[int, int], tags: list[str]
) -> Fields:
    """The node's cores and neighbours, the CPU quota, the pod's memory and its limit."""
    node_cores = float(rng.choice([32, 48, 64, 96, 128, 192]))
    shared = rng.random() < 0.55
    main_cores = 1.2 * gpus
    if shared:
        busy = rng.random() < 0.5
        before = float(rng.uniform(0.05, 0.4)) * node_cores
        after = float(rng.uniform(0.5, 0.95) if busy else rng.uniform(0.05, 0.4)) * node_cores
        nb_level = pr.step_change(rng, shape[1], before, after, 0.2)  # a neighbour arrives or leaves
        nb_load = np.maximum(nb_level[None, :] * np.exp(pr.ar1(rng, shape, 0.1, 30.0)), 0.0)
        tags.append("neighbour:busy" if busy else "neighbour:quiet")
    else:
        nb_load = np.zeros(shape)
        tags.append("dedicated")
    quota = float(workers + main_cores) * float(rng.uniform(1.1, 2.0)) if rng.random() < 0.5 else math.inf
    ws_base = wl.working_set * float(rng.uniform(0.7, 1.3)) * max(1, gpus // 2)
    ws = ws_base * (1.0 + np.cumsum(rng.normal(0.0, 0.002, shape), axis=1).clip(-0.05, 0.2))
    swap = rng.random() < 0.4
    return {
        "node_cores": node_cores,
        "neighbours": int(rng.integers(1, 6)) if shared else 0,
        "main_cores": main_cores,
        "nb_load": nb_load,
        "quota": quota,
        "dec_noise": np.exp(pr.ar1(rng, shape, 0.08, 20.0)),
        "ws": ws,
        "node_mem": float(rng.choice([256, 512, 1024, 2048])) * GiB,
        "mem_limit": float(ws.max()) / float(rng.uniform(0.45, 0.8)),
        "swap": swap,
        "mem_k": float(rng.uniform(2.0, 6.0)) if swap else float(rng.uniform(3.0, 9.0)),
        "nb_disk": np.where(nb_load > 0, rng.uniform(0.0, 0.4) * 1e9, 0.0) * np.exp(pr.ar1(rng, shape, 0.5, 20.0)),
        "nb_net": np.where(nb_load > 0, rng.uniform(0.0, 2.0) * 1e9, 0.0) * np.exp(pr.ar1(rng, shape, 0.5, 20.0)),
        "nb_mem": float(rng.uniform(0.1, 0.6)) if shared else 0.0,
    }


def _device(rng: np.random.Generator, gpu: hw.Gpu, precision: str, shape: tuple[int, int], tags: list[str]) -> Fields:
    """Efficiencies, the enforced power limit, clocks per board, kernel noise, host copy link."""
    peak_scale = {"bf16": 1.0, "fp16": 1.0, "tf32": 0.5, "fp32": 0.125}[precision]
    capped = rng.random() < 0.3
    power_limit = gpu.tdp * (float(rng.uniform(0.65, 0.9)) if capped else 1.0)
    power_full = gpu.tdp * float(rng.uniform(0.85, 1.1))
    # Dynamic power goes roughly with clock cubed (voltage follows frequency), so a cap below the
    # draw costs the cube root of the shortfall in clock.
    cap_factor = min(1.0, ((power_limit - gpu.idle) / max(power_full - gpu.idle, 1.0)) ** (1.0 / 3.0))
    spread = rng.uniform(0.9, 1.0, shape[0])
    if capped:
        tags.append("power-capped")
    return {
        "peak": gpu.tflops * 1e12 * float(rng.uniform(*hw.MATMUL_EFFICIENCY)) * peak_scale,
        "hbm": gpu.hbm * float(rng.uniform(*hw.HBM_EFFICIENCY)),
        "power_limit": power_limit,
        "power_full": power_full,
        "spread": spread,
        "clock": np.clip(spread[:, None] * cap_factor * (1.0 + rng.normal(0.0, 0.012, shape)), 0.3, 1.0),
        "gnoise": 1.0 + np.abs(rng.normal(0.0, 0.02, shape)),
        "t_launch": float(rng.uniform(*hw.LAUNCH_SECONDS)),
        "t_host": float(rng.uniform(0.002, 0.012)),
        "pcie_bw": gpu.pcie * float(rng.uniform(*hw.PCIE_EFFICIENCY)),
    }


def _fabric(rng: np.random.Generator, gpu: hw.Gpu, shape: tuple[int, int], tags: list[str]) -> Fields:
    """NVLink inside a node; between nodes Ethernet (TCP) or RDMA (InfiniBand, RoCE), with tenants."""
    if shape[0] > 1:
        fabric, port = hw.FABRICS[int(rng.integers(len(hw.FABRICS)))]
        ports = int(rng.choice([1, 2, 4])) if fabric != "eth" else 1
        net_bw = port / 8.0 * ports * float(rng.uniform(*hw.NET_EFFICIENCY))
        net_share = pr.tenant_share(rng, shape, float(rng.uniform(0.5, 1.0)) if fabric == "eth" else 1.0, 0.15)
        tags.append(f"fabric:{fabric}")
    else:
        fabric, net_bw, net_share = "none", 100e9 / 8, np.ones(shape)
    return {
        "fabric": fabric,
        "net_bw": net_bw,
        "net_share": net_share,
        "nvl_bw": gpu.nvlink / 2.0 * float(rng.uniform(*hw.NVLINK_EFFICIENCY)),
        "overlap": float(rng.uniform(0.3, 0.9)),
    }
