"""Drawing one Job: a class intent biases the draws, the step model decides the label.

A draw whose physics names another class than the intent, or whose leading class is too close to
call, is drawn again (a few times); a share of Jobs keeps a close call and is tagged ``hard``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyah.hardware import (
    FABRICS,
    GPUS,
    STORAGES,
    clock_factor,
    node_cpus,
    node_memory,
    pick,
)
from bottleneck_operator_dev.familyah.roofline import Setup, Step, step_of
from bottleneck_operator_dev.familyah.workload import architecture

GIB = float(2**30)
B = Bottleneck


@dataclass(frozen=True)
class Env:
    """The node and exporters around the Job (what telemetry sees besides the step)."""

    gpus_in_node: int
    node_cpus: int
    node_mem: float
    cpu_limit: float | None
    mem_limit: float | None
    footprint: float
    swap: bool
    power_cap: float
    neighbours: int
    neighbour_cpu: float
    neighbour_disk_bps: float
    neighbour_net_bps: float
    fb_frac: float


def _gpu_key(rng: np.random.Generator, intent: Bottleneck) -> str:
    if intent is B.INTERCONNECT:
        return str(pick(rng, ("a100", "h100", "h200", "l40s", "l4"), (2, 2, 1, 2, 1)))
    return str(pick(rng, ("a100", "h100", "h200", "l40s", "l4"), (3, 3, 2, 2, 2)))


def _arch_key(rng: np.random.Generator, intent: Bottleneck, launch: bool) -> str:
    if intent is B.GPU:
        return str(
            pick(rng, ("gpt2-124m", "resnet50", "vit-b16"))
            if launch
            else pick(rng, ("gpt2-355m", "gpt2-774m", "bert-large", "vit-b16", "resnet50", "unet3d"))
        )
    if intent in (B.IO, B.CPU):
        return str(pick(rng, ("resnet50", "vit-b16", "unet3d", "gpt2-124m"), (4, 3, 2, 1)))
    if intent is B.MEMORY:
        return str(pick(rng, ("dlrm", "gpt2-124m", "bert-large", "resnet50"), (4, 2, 1, 1)))
    return str(pick(rng, ("gpt2-355m", "gpt2-774m", "bert-large", "unet3d", "resnet50", "dlrm")))


def _shape(rng: np.random.Generator, intent: Bottleneck, gpu_key: str) -> tuple[int, int, int]:
    """(GPUs in a node, GPUs per pod, pods)."""
    in_node = 8 if gpu_key in ("a100", "h100", "h200") else int(pick(rng, (4, 8) if gpu_key == "l40s" else (1, 4, 8)))
    per_pod = int(pick(rng, [g for g in (1, 2, 4, 8) if g <= in_node]))
    pods = 1
    if intent is B.INTERCONNECT and rng.random() < 0.6:
        per_pod, pods = in_node, int(pick(rng, (2, 4, 8)))
    elif rng.random() < 0.15 and per_pod == in_node:
        pods = int(pick(rng, (2, 4)))
    if intent is B.INTERCONNECT and pods == 1 and per_pod == 1:
        per_pod = in_node if in_node > 1 else 1
    return in_node, per_pod, pods


def _env(rng: np.random.Generator, intent: Bottleneck, gpu_key: str, in_node: int, per_pod: int) -> Env:
    cpus = node_cpus(rng, GPUS[gpu_key], in_node)
    mem = node_memory(rng, cpus)
    shared = per_pod < in_node and rng.random() < 0.7
    neighbours = int(rng.integers(1, 5)) if shared else 0
    busy = rng.uniform(0.5, 0.9) if intent is B.CPU and shared and rng.random() < 0.5 else rng.uniform(0.0, 0.3)
    limit = None
    if rng.random() < (0.6 if intent is B.CPU else 0.35):
        limit = float(per_pod * pick(rng, (3, 4, 6, 8, 12, 16, 24)))
    mem_limit = float(per_pod * pick(rng, (32, 64, 96, 128)) * GIB) if rng.random() < 0.6 else None
    cap = 1.0 if rng.random() < 0.7 else float(rng.uniform(0.6, 0.95))
    return Env(
        in_node,
        cpus,
        mem,
        limit,
        mem_limit,
        0.0,
        bool(rng.random() < 0.3),
        cap,
        neighbours,
        float(cpus * busy) if neighbours else 0.0,
        float(rng.uniform(0, 4e8)) if neighbours else 0.0,
        float(rng.uniform(0, 2e8)) if neighbours else 0.0,
        float(rng.uniform(0.55, 0.98)),
    )


def _storage(rng: np.random.Generator, intent: Bottleneck) -> tuple[str, float]:
    key = str(pick(rng, tuple(STORAGES), (1, 4, 3, 3) if intent is B.IO else (6, 1, 2, 2)))
    st = STORAGES[key]
    if intent is B.IO:
        return key, float(rng.uniform(st.low_bps, st.low_bps + 0.4 * (st.high_bps - st.low_bps)))
    return key, float(rng.uniform(st.low_bps + 0.3 * (st.high_bps - st.low_bps), st.high_bps))


def _loader(rng: np.random.Generator, intent: Bottleneck, env: Env, per_pod: int) -> tuple[int, float, bool]:
    """(workers per GPU, cores per GPU the loader gets, whether a CPU limit binds)."""
    free = env.node_cpus - env.neighbour_cpu
    if env.cpu_limit is not None:
        free = min(free, env.cpu_limit)
    avail = max(0.5, free / per_pod - 1.0)
    if intent is B.CPU and rng.random() < 0.4:
        workers = int(rng.integers(1, 4))
    elif intent is B.CPU:
        workers = int(max(avail + rng.integers(1, 8), 2))
    else:
        workers = int(rng.integers(4, 17))
    limited = env.cpu_limit is not None and (workers + 1) * per_pod > env.cpu_limit
    return workers, float(avail), limited


def draw_setup(rng: np.random.Generator, intent: Bottleneck) -> tuple[Setup, Env]:
    """One draw of everything the step depends on, biased towards ``intent``."""
    launch = intent is B.GPU and rng.random() < 0.3
    gpu_key = "h100" if launch and rng.random() < 0.5 else _gpu_key(rng, intent)
    gpu = GPUS[gpu_key]
    arch = architecture(_arch_key(rng, intent, launch), rng)
    in_node, per_pod, pods = _shape(rng, intent, gpu_key)
    env = _env(rng, intent, gpu_key, in_node, per_pod)
    storage_key, storage_bps = _storage(rng, intent)
    workers, avail, limited = _loader(rng, intent, env, per_pod)
    fabric = None
    if pods > 1:
        fabric = FABRICS[
            str(pick(rng, tuple(FABRICS), (1, 1, 1, 2, 3, 3) if intent is B.INTERCONNECT else (3, 3, 2, 2, 1, 1)))
        ]
    text = arch.text
    batch = int(pick(rng, (2, 4, 8, 16)) if text and arch.key != "dlrm" else pick(rng, (32, 64, 128, 256)))
    if arch.key == "dlrm":
        batch = int(pick(rng, (2048, 4096, 8192, 16384)))
    if arch.key == "unet3d":
        batch = int(pick(rng, (1, 2, 4)))
    if launch:
        batch = int(pick(rng, (1, 2, 4)))
    mode = (
        "eager"
        if launch or (intent is B.MEMORY and rng.random() < 0.6)
        else str(pick(rng, ("eager", "compiled", "graphs"), (4, 3, 1)))
    )
    launch_s = {"eager": rng.uniform(8e-6, 20e-6), "compiled": rng.uniform(4e-6, 9e-6)}.get(
        mode, rng.uniform(0.3e-6, 1.2e-6)
    )
    setup = Setup(
        arch=arch,
        gpu=gpu,
        batch=batch,
        clock=clock_factor(rng, env.power_cap),
        mode=mode,
        launch_s=float(launch_s),
        eff_compute=float(rng.uniform(0.55, 0.8)),
        eff_memory=float(rng.uniform(0.7, 0.88)),
        gpus_per_pod=per_pod,
        pods=pods,
        fabric=fabric,
        nics=int(pick(rng, (1, 2, 4, 8))) if fabric is not None and fabric.rdma else 1,
        p2p=bool(rng.random() < (0.3 if intent is B.INTERCONNECT else 0.7)),
        overlap=float(rng.uniform(0.0, 0.5) if intent is B.INTERCONNECT else rng.uniform(0.4, 0.95)),
        grad_bytes=float(pick(rng, (2.0, 4.0))),
        pinned=bool(rng.random() < (0.4 if intent is B.INTERCONNECT else 0.8)),
        storage=STORAGES[storage_key],
        storage_bps=storage_bps,
        workers=workers,
        cpu_avail=avail,
        cpu_limited=limited,
        mem_over=1.0,
        swap_bps=float(rng.uniform(0.15e9, 1.5e9)),
    )
    return _memory(rng, intent, setup, env)


def _memory(rng: np.random.Generator, intent: Bottleneck, s: Setup, env: Env) -> tuple[Setup, Env]:
    """Host memory: the pod's footprint against its limit (or the node's RAM); swap where it overflows."""
    footprint = s.gpus_per_pod * (6 * GIB + s.workers * s.arch.worker_mem + s.batch * s.arch.h2d_bytes * 4)
    cap = env.mem_limit if env.mem_limit is not None else env.node_mem * 0.9
    if intent is B.MEMORY and rng.random() < 0.5:
        cap = footprint / float(rng.uniform(1.05, 1.6))
        env = replace(env, mem_limit=cap, swap=True)
    elif footprint > cap * 0.95:
        cap = footprint / float(rng.uniform(0.5, 0.9))
        env = replace(env, mem_limit=cap if env.mem_limit is not None else None)
    over = footprint / cap if env.swap else min(footprint / cap, 0.95)
    return replace(s, mem_over=float(over)), replace(env, footprint=footprint)


def draw_job(rng: np.random.Generator, intent: Bottleneck) -> tuple[Setup, Env, Step, bool]:
    """A Job's setup, environment, step and whether it is a close call (``hard``)."""
    keep_close = bool(rng.random() < 0.1)
    last: tuple[Setup, Env, Step] | None = None
    for _ in range(12):
        setup, env = draw_setup(rng, intent)
        step = step_of(setup)
        last = (setup, env, step)
        if step.label is intent and (not step.close or keep_close):
            return setup, env, step, step.close
    assert last is not None
    return last[0], last[1], last[2], last[2].close
