"""The last stages of drawing one Job: its per-pod constants, per-tick inputs and exporters' view."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyz.plan import LEAD_S, Plan, View, runs

B = Bottleneck


def lanes(d: SimpleNamespace) -> None:
    """Window length, and the GPU side of the per-pod constants."""
    # --- window and ticks
    d.samples = round(float(d.rng.uniform(20 * 60, 30 * 60)) / d.step) + 1
    d.samples = max(d.samples, 21)
    d.ticks = LEAD_S + math.ceil((d.samples - 1) * d.step) + 2
    d.K = d.pods
    d.spread = d.rng.uniform(0.94, 1.07, d.K)  # board-to-board power efficiency
    d.lanes = {
        "fmax": np.full(d.K, d.gpu.max_clock_mhz),
        "idle_clock": np.full(d.K, d.gpu.idle_clock_mhz),
        "plim": np.full(d.K, d.plim),
        "tdp": np.full(d.K, d.gpu.tdp_w),
        "pidle": np.full(d.K, d.gpu.idle_w),
        "pdyn": (d.gpu.tdp_w - d.gpu.idle_w) * float(d.rng.uniform(1.0, 1.25)) * d.spread,
        "alpha": np.full(d.K, 1.0 - math.exp(-1.0 / float(d.rng.uniform(20.0, 60.0)))),
        "tamb": d.rng.uniform(25.0, 40.0, d.K),
        "rth": np.full(d.K, 45.0 / d.gpu.tdp_w),
        "tslow": np.full(d.K, float(d.rng.uniform(83.0, 90.0))),
        "slew": np.full(d.K, 90.0),
        "peak": np.full(d.K, d.peak),
        "flops": np.full(d.K, d.flops),
        "hbm_bytes": np.full(d.K, d.hbm_bytes),
        "hbm_bw": np.full(d.K, d.hbm_bw),
        "hbm_peak": np.full(d.K, d.gpu.hbm_gbps * 1e9),
        "kernels": np.full(d.K, d.kernels),
        "launch_s": np.full(d.K, d.launch_s),
        "py_s": np.full(d.K, d.py_s),
        "tensor_share": np.full(d.K, d.tensor_share),
        # small kernels leave most SMs idle; large GEMMs fill them
        "fill": np.full(d.K, {"small-mlp": 0.3, "dlrm": 0.6}.get(d.model, float(d.rng.uniform(0.8, 0.95)))),
        "occupancy": np.full(d.K, float(d.rng.uniform(0.2, 0.6))),
        "fb_used": d.rng.uniform(0.85, 0.98, d.K),
    }


def lanes_host(d: SimpleNamespace) -> None:
    """The host side of the per-pod constants."""
    d.lanes |= {
        "workers": np.full(d.K, d.workers),
        "batch": np.full(d.K, d.batch),
        "sample_b": np.full(d.K, d.stored),
        "decode_s": np.full(d.K, d.decode_s),
        "prefetch": np.full(d.K, 2.0 * d.workers),
        "gpus": np.full(d.K, float(d.gpus)),
        "quota": np.full(d.K, d.quota),
        "ncores": np.full(d.K, d.ncores),
        "store_bw": np.full(d.K, d.store_bw),
        "store_net": np.full(d.K, d.store_net),
        "dstate": np.full(d.K, d.dstate),
        "dataset": np.full(d.K, d.dataset),
        "cache0": np.full(d.K, d.cache0),
        "anon": np.full(d.K, d.workers_anon),
        "mem_limit": np.full(d.K, d.mem_limit),
        "swap": np.full(d.K, d.swap),
        "fault_s": np.full(d.K, d.fault_s),
        "touch": np.full(d.K, d.touch),
        "main_touch": np.full(d.K, 0.6),
        "restart_s": np.full(d.K, d.restart_s),
        "node_mem": np.full(d.K, d.node_mem),
        "h2d": np.full(d.K, d.h2d),
        "pcie_bw": np.full(d.K, d.pcie_bw),
        "h2d_overlap": np.full(d.K, d.h2d_overlap),
        "intra": np.full(d.K, d.intra),
        "intra_bw": np.full(d.K, d.intra_bw),
        "intra_pcie": np.full(d.K, d.intra_pcie),
        "inter": np.full(d.K, d.inter),
        "nic": np.full(d.K, d.nic),
        "rdma": np.full(d.K, 1.0 if d.rdma else 0.0),
        "flows": np.full(d.K, d.flows),
        "ranks": np.full(d.K, float(d.ranks)),
        "comm_overlap": np.full(d.K, d.comm_overlap),
        "buckets": np.full(d.K, float(d.rng.integers(4, 40))),
    }


def noise(d: SimpleNamespace) -> None:
    """Exogenous per-tick inputs: neighbours, jitter, leaks and pauses."""
    # --- exogenous per-tick inputs
    d.noise = {
        "jitter": np.clip(1.0 + 0.03 * d.rng.standard_normal((d.ticks, d.K)), 0.85, 1.15),
        "pause": np.zeros((d.ticks, d.K)),
        "anon_extra": np.zeros((d.ticks, d.K)),
        "nbr_cpu": np.zeros((d.ticks, d.K)),
        "nbr_flows": np.zeros((d.ticks, d.K)),
        "nbr_disk": np.zeros((d.ticks, d.K)),
        "nbr_mem": np.zeros((d.ticks, d.K)),
        "nbr_psi": np.zeros((d.ticks, d.K)),
    }
    for k in range(d.K):
        if d.shared:
            d.on = runs(d.rng, d.ticks, float(d.rng.uniform(60, 600)), float(d.rng.uniform(30, 300)), 0.7)
            d.noise["nbr_cpu"][:, k] = (
                d.nbr_cpu_mean * (0.6 + 0.4 * d.on) if d.intent is B.CPU else d.nbr_cpu_mean * d.on
            )
            d.noise["nbr_flows"][:, k] = d.nbr_flows_mean * d.on
            # a neighbour with a busy disk and swap: node-level signals that lie about this pod
            d.noise["nbr_disk"][:, k] = float(d.rng.choice([0.0, 0.3e9, 1.5e9])) * d.on
            d.noise["nbr_mem"][:, k] = float(d.rng.uniform(0.1, 0.7)) * d.node_mem * (0.7 + 0.3 * d.on)
            d.noise["nbr_psi"][:, k] = float(d.rng.choice([0.0, 0.05, 0.3])) * d.on
        else:
            d.noise["nbr_mem"][:, k] = 0.05 * d.node_mem
    if d.restart_s > 0:
        # a slow leak in the workers: the cgroup hits its limit, the OOM killer fires, the loader restarts
        d.period = float(d.rng.uniform(1.2, 2.0)) * d.restart_s
        d.phase = (np.arange(d.ticks) % d.period) / d.period
        d.noise["anon_extra"][:] = ((1.05 * d.mem_limit - d.anon) * d.phase)[:, None]
    if d.rng.random() < 0.5:
        # checkpoints and evaluation pauses: the whole Job stops stepping for a while
        d.every = float(d.rng.uniform(600.0, 1500.0))
        d.length = float(d.rng.uniform(20.0, 90.0))
        d.offset = float(d.rng.uniform(0.0, d.every))
        d.tick = np.arange(d.ticks)
        d.noise["pause"][:] = (((d.tick + d.offset) % d.every) < d.length).astype(float)[:, None]
        d.tags.append("pauses")


def view(d: SimpleNamespace) -> None:
    """What the cluster's exporters show of this Job."""
    d.fields = str(d.rng.choice(["dev", "default", "full", "full"]))
    d.base_si = float(d.rng.choice([10.0, 15.0, 30.0, 30.0, 60.0]))
    d.intervals = {e: d.base_si for e in ("dcgm", "cadvisor", "ksm", "node", "sidecar")}
    if d.rng.random() < 0.3:
        d.intervals["dcgm"] = float(d.rng.choice([15.0, 30.0, 60.0]))
    d.tags += [f"fields:{d.fields}", f"scrape:{int(d.base_si)}s"]
    if d.shared:
        d.tags.append("shared-node")
    d.view = View(
        fields=d.fields,
        intervals=d.intervals,
        dcgm_collect=float(d.rng.choice([1.0, 5.0, 10.0, 30.0])),
        miss=float(d.rng.choice([0.0, 0.01, 0.05])),
        reset=float(d.rng.choice([0.0, 0.1, 0.3])),
        sidecar=bool(d.rng.random() < 0.85),
        sidecar_net=bool(d.rng.random() < 0.8),
        psi=bool(d.rng.random() < 0.9),
        node_names=tuple(f"gpu-node-{int(d.rng.integers(1000)):03d}-{k}" for k in range(d.K)),
        co_located=tuple(int(d.rng.integers(1, 6)) if d.shared else 0 for _ in range(d.K)),
    )


def finish(d: SimpleNamespace) -> Plan:
    """The plan."""
    d.name = f"z{d.index:05d}-{d.model}"
    return Plan(
        namespace=str(d.rng.choice(["ml-research", "vision", "nlp", "recsys"])),
        name=d.name,
        intent=d.intent,
        intent_mechanism=d.mech,
        gpu=d.gpu,
        gpus=d.gpus,
        pods=d.pods,
        step=d.step,
        samples=d.samples,
        ticks=d.ticks,
        lanes=d.lanes,
        noise=d.noise,
        view=d.view,
        tags=d.tags,
    )
