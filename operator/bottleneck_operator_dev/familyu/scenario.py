"""A labelled Job among other tenants: the cluster it runs in, drawn once per attempt.

A :class:`Scenario` holds the GPUs, nodes, fabric, storage, limits and neighbours of one Job, and
the pressures that scale its demand on each resource class (a heavier variant of the workload:
larger samples, heavier augmentation, a bigger shuffle buffer). :mod:`.allocation` shares the
resources out phase by phase.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from bottleneck_operator_dev.familyu.hardware import (
    FABRICS,
    GB,
    GPUS,
    LOCAL_DISKS,
    NETWORK_STORES,
    NODE_CPUS,
    NODE_MEM_GIB,
    PCIE_GBS,
    GpuSpec,
)
from bottleneck_operator_dev.familyu.step import RESOURCES
from bottleneck_operator_dev.familyu.workload import Workload, draw_workload

GIB = 2**30


@dataclass(frozen=True)
class Neighbour:
    """Another tenant on one of the Job's nodes: its demands when active."""

    cores: float
    disk_bps: float
    net_bps: float
    ib_bps: float
    pcie_bps: float
    anon: float
    majfault_ps: float
    mem_stall: float  # its own memory-pressure share (node PSI is any task's)


@dataclass(frozen=True)
class Scenario:
    """Everything drawn for one Job (one attempt)."""

    gpu: GpuSpec
    gpus_per_pod: int
    pods: int
    nvlink: bool
    fabric: str
    nic_bps: float  # bytes/s per node, all ports
    cross_leaf: bool
    oversub: float
    storage: str  # "local:<disk>" or a NETWORK_STORES key
    storage_bps: float
    client_bps: float
    node_cpus: int
    node_mem: float
    cpu_limit: float | None
    mem_limit: float | None
    workers_per_gpu: int
    trainer_cores: float
    swap: bool
    refault_bps: float
    gdr: bool
    gpus_per_switch: int
    workload: Workload
    pressure: dict[str, float]
    ws_per_pod: float
    touched_per_pod: float
    peak_eff: float
    hbm_eff: float
    board_clock: tuple[tuple[float, ...], ...]  # per pod, per GPU: share of the maximum boost clock
    power_cap: float  # enforced limit, W
    clock_factor: float  # clock under the power cap while busy (1.0 uncapped)
    io_cpu_overlap: bool
    h2d_overlap: bool
    comm_overlap: float
    neighbours: tuple[tuple[Neighbour, ...], ...]  # per node
    phases: tuple[float, ...]  # phase durations as shares of the window
    active: tuple[tuple[tuple[float, ...], ...], ...]  # per phase, per node, per neighbour: intensity
    storage_bg: tuple[float, ...]  # per phase: other clients' demand on a shared store (share of capacity)
    uplink_bg: tuple[float, ...]  # per phase: other Jobs' traffic on shared uplinks (share of capacity)
    tags: tuple[str, ...] = field(default=())


def _u(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(rng.uniform(lo, hi))


def _logu(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


# Pressure ranges: the target resource is drawn heavy, a near runner-up (hard cases) almost as heavy,
# the rest light; the label is then computed, never assumed.
_TARGET, _RUNNER, _REST = (1.0, 2.5), (0.8, 2.0), (0.06, 0.8)
_PREFER = {
    "storage": ("resnet50", "vit-b16", "video", "speech", "unet"),
    "cpu": ("resnet50", "vit-b16", "video", "speech"),
    "hostmem": (),
    "pcie": ("video", "dlrm", "resnet50", "unet"),
    "nvlink": ("lm", "unet", "vit-b16"),
    "network": ("lm", "unet", "vit-b16", "speech"),
    "sm": ("lm", "unet", "vit-b16", "video"),
    "hbm": ("dlrm", "lm", "resnet50"),
}


def _draw_gpus(rng: np.random.Generator, target: str) -> dict[str, Any]:
    """Boards, box and fabric."""
    gpu = GPUS[int(rng.integers(len(GPUS)))]
    if target == "nvlink" and gpu.nvlink_gbs == 0:
        gpu = GPUS[int(rng.choice([0, 1, 2]))]
    g = int(rng.choice([1, 2, 4, 8])) if gpu.nvlink_gbs == 0 else int(rng.choice([2, 4, 8, 8]))
    if target in ("nvlink", "pcie") and g == 1:
        g = 4
    pods = 1 if rng.random() < 0.45 else int(rng.choice([2, 2, 3, 4]))
    if target == "network" and pods == 1:
        pods = int(rng.choice([2, 3, 4]))
    fabric = str(rng.choice(list(FABRICS)))
    ports = int(rng.choice([1, 2])) if fabric == "ethernet" else min(int(rng.choice([1, 2, 4, 8])), g)
    port_gbps = float(rng.choice(FABRICS[fabric]))
    if target == "network" and rng.random() < 0.5:
        fabric, ports, port_gbps = "ethernet", 1, float(rng.choice([25.0, 50.0, 100.0]))
    return {
        "gpu": gpu,
        "nvlink": gpu.nvlink_gbs > 0 and (rng.random() < 0.9 or target == "nvlink"),
        "gpus_per_pod": g,
        "pods": pods,
        "fabric": fabric,
        "nic_bps": ports * port_gbps / 8.0 * 1e9 * 0.9,  # 90 %: framing and protocol overhead (judgement)
        "oversub": float(rng.choice([1.0, 1.0, 2.0, 3.0, 4.0])),
        "cross_leaf": bool(pods > 1 and rng.random() < 0.6),
        "gdr": fabric != "ethernet" and rng.random() < 0.8,
        "gpus_per_switch": int(rng.choice([1, 2, 2, 4])),
    }


def _draw_storage(rng: np.random.Generator, target: str) -> dict[str, Any]:
    """A node's local disk, or a shared service with a per-client cap."""
    if rng.random() < (0.35 if target == "storage" else 0.6):
        disk = str(rng.choice(list(LOCAL_DISKS), p=[0.5, 0.3, 0.2] if target == "storage" else [0.15, 0.35, 0.5]))
        return {"storage": f"local:{disk}", "storage_bps": LOCAL_DISKS[disk] * GB, "client_bps": math.inf}
    store = str(rng.choice(list(NETWORK_STORES)))
    (agg_lo, agg_hi), (cl_lo, cl_hi) = NETWORK_STORES[store]
    return {"storage": store, "storage_bps": _u(rng, agg_lo, agg_hi) * GB, "client_bps": _u(rng, cl_lo, cl_hi) * GB}


def _draw_pressure(rng: np.random.Generator, target: str, runner_up: str | None) -> dict[str, float]:
    pressure = {r: _logu(rng, *_REST) for r in RESOURCES}
    pressure["sm"] = _logu(rng, 0.5, 1.5)  # the model's own compute: the Job is what it is
    # host memory thrashes steeply once the working set passes the allocation: a milder push
    pressure[target] = _u(rng, 1.02, 1.5) if target == "hostmem" else _u(rng, *_TARGET)
    if target == "storage":  # decode usually binds first on one node: IO-bound Jobs read heavier samples
        pressure[target] *= 2.0
    if runner_up is not None and runner_up != target:
        pressure[runner_up] = _u(rng, *_RUNNER)
    return pressure


def _draw_host(rng: np.random.Generator, target: str, g: int, hostmem: float) -> dict[str, Any]:
    """Node size, cgroup limits, loader workers and the pod's host memory."""
    node_cpus = int(rng.choice(NODE_CPUS))
    cpu_limit = None if rng.random() < 0.35 else min(float(g * rng.choice([2, 4, 6, 8, 12, 16])), float(node_cpus))
    workers_per_gpu = int(rng.choice([1, 2, 4, 6, 8, 12]))
    # host memory: the trainer's RSS, each loader worker's RSS, pinned staging buffers
    ws = g * (_u(rng, 4, 16) * GIB + workers_per_gpu * _u(rng, 0.5, 3.0) * GIB)
    # the limit is set from the Job's usual working set; when host memory is the target the heavier
    # variant of the Job (bigger shuffle buffer, more workers' RSS) outgrows it a little
    headroom = _u(rng, 0.75, 1.0) if target == "hostmem" else _u(rng, 1.05, 2.5)
    unlimited = rng.random() < (0.05 if target == "hostmem" else 0.2)
    swap = bool(rng.random() < 0.4)
    return {
        "node_cpus": node_cpus,
        "node_mem": float(rng.choice(NODE_MEM_GIB)) * GIB,
        "cpu_limit": cpu_limit,
        "workers_per_gpu": workers_per_gpu,
        "trainer_cores": g * _u(rng, 0.7, 1.3),
        "ws_per_pod": ws * hostmem,
        "mem_limit": None if unlimited else ws * headroom,
        "touched_per_pod": g * _u(rng, 0.02, 0.2) * GIB * hostmem,  # anon pages each step revisits
        "swap": swap,
        # 4 KiB random reads back from swap, or file pages re-read after reclaim (judgement)
        "refault_bps": _u(rng, 0.3, 1.5) * GB if swap else _u(rng, 0.1, 0.6) * GB,
    }


def _draw_power(rng: np.random.Generator, gpu: GpuSpec, g: int, pods: int) -> dict[str, Any]:
    """Clock spread between boards, and an enforced power limit below TDP on some clusters."""
    capped = rng.random() < 0.3
    power_cap = gpu.tdp_w * (_u(rng, 0.6, 0.9) if capped else 1.0)
    full = gpu.idle_w + (gpu.tdp_w - gpu.idle_w) * _u(rng, 0.8, 1.05)
    # dynamic power goes roughly as f * V^2 with V rising with f: clock ~ power^(0.4) (judgement)
    factor = 1.0 if full <= power_cap else max(0.55, ((power_cap - gpu.idle_w) / (full - gpu.idle_w)) ** 0.4)
    return {
        "board_clock": tuple(tuple(_u(rng, 0.93, 1.0) for _ in range(g)) for _ in range(pods)),
        "power_cap": power_cap,
        "clock_factor": factor,
    }


def _draw_tenants(
    rng: np.random.Generator, target: str, hw: dict[str, Any], node_cpus: int, node_mem: float
) -> dict[str, Any]:
    """Neighbours per node and how they come and go over the window's phases."""
    shared = rng.random() < 0.6
    busy = bool(rng.random() < (0.7 if target == "storage" else 0.5))
    gpu, nic = hw["gpu"], hw["nic_bps"]
    neighbours = tuple(
        tuple(
            Neighbour(
                cores=node_cpus * _u(rng, 0.05, 0.5 if busy else 0.2),
                disk_bps=(LOCAL_DISKS["nvme-gen4"] * GB * _u(rng, 0.0, 0.6)) if rng.random() < 0.5 else 0.0,
                net_bps=nic * _u(rng, 0.0, 0.5 if busy else 0.15),
                ib_bps=nic * _u(rng, 0.0, 0.4) if hw["fabric"] != "ethernet" and rng.random() < 0.4 else 0.0,
                pcie_bps=PCIE_GBS[gpu.pcie_gen] * GB * _u(rng, 0.0, 0.6) if hw["gpus_per_pod"] < 8 else 0.0,
                anon=node_mem * _u(rng, 0.02, 0.35 if busy else 0.12),
                majfault_ps=_logu(rng, 1.0, 5e4) if rng.random() < 0.3 else 0.0,
                mem_stall=_u(rng, 0.0, 0.3) if rng.random() < 0.2 else 0.0,
            )
            for _ in range(int(rng.integers(1, 5)) if shared else 0)
        )
        for _ in range(hw["pods"])
    )
    n_phases = int(rng.integers(1, 5))
    return {
        "neighbours": neighbours,
        "phases": tuple(float(s) for s in rng.dirichlet(np.ones(n_phases) * 2.0)),
        "active": tuple(
            tuple(tuple(_u(rng, 0.3, 1.2) if rng.random() < 0.7 else 0.0 for _ in node) for node in neighbours)
            for _ in range(n_phases)
        ),
        "storage_bg": tuple(_u(rng, 0.0, 0.9 if busy else 0.4) for _ in range(n_phases)),
        "uplink_bg": tuple(_u(rng, 0.0, 0.8 if busy else 0.3) for _ in range(n_phases)),
        "tags": (
            "shared-node" if shared else "dedicated-node",
            "busy-neighbours" if busy and shared else "quiet-neighbours",
            # neighbours that make a node-level signal speak for someone else
            *(("neighbour-majfaults",) if any(nb.majfault_ps > 1e3 for n in neighbours for nb in n) else ()),
            *(("neighbour-disk",) if any(nb.disk_bps > 0 for n in neighbours for nb in n) else ()),
            *(("neighbour-memory",) if any(nb.mem_stall > 0 for n in neighbours for nb in n) else ()),
        ),
    }


def draw_scenario(rng: np.random.Generator, target: str, runner_up: str | None) -> Scenario:
    """Draw a cluster and a workload that lean towards ``target`` binding (the label decides)."""
    hw = _draw_gpus(rng, target)
    gpu: GpuSpec = hw["gpu"]
    store = _draw_storage(rng, target)
    wl = draw_workload(rng, has_tf32=gpu.has_tf32, fb_gib=gpu.fb_gib, prefer=_PREFER[target])
    pressure = _draw_pressure(rng, target, runner_up)
    host = _draw_host(rng, target, hw["gpus_per_pod"], pressure["hostmem"])
    power = _draw_power(rng, gpu, hw["gpus_per_pod"], hw["pods"])
    tenants = _draw_tenants(rng, target, hw, host["node_cpus"], host["node_mem"])
    tags = (
        f"gpu:{gpu.model}",
        f"gpus:{hw['gpus_per_pod']}x{hw['pods']}",
        f"fabric:{hw['fabric']}",
        f"storage:{store['storage']}",
        f"workload:{wl.family}",
        f"precision:{wl.precision}",
        "nvlink" if hw["nvlink"] else "pcie-only",
        *(("power-capped",) if power["clock_factor"] < 1.0 or power["power_cap"] < gpu.tdp_w else ()),
        *tenants.pop("tags"),
    )
    return Scenario(
        **hw,
        **store,
        **host,
        **power,
        **tenants,
        workload=wl,
        pressure=pressure,
        peak_eff=_u(rng, 0.35, 0.75),
        hbm_eff=_u(rng, 0.8, 0.9),
        io_cpu_overlap=bool(rng.random() < 0.7),
        h2d_overlap=bool(rng.random() < 0.5),
        comm_overlap=_u(rng, 0.0, 0.9),
        tags=tags,
    )


def pushed(scn: Scenario, target: str, factor: float) -> Scenario:
    """The same scenario with the target's demand scaled by ``factor`` and the others by its inverse root.

    ``factor`` > 1 forces a draw that missed its target; < 1 relaxes one that binds by a wide
    margin, bringing the other resources closer (hard cases).
    """
    p = {r: v * (factor if r == target else 1.0 / math.sqrt(factor)) for r, v in scn.pressure.items()}
    m = factor if target == "hostmem" else 1.0  # a bigger working set is also revisited more
    return replace(scn, pressure=p, ws_per_pod=scn.ws_per_pod * m, touched_per_pod=scn.touched_per_pod * m)
