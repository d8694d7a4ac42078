"""Shaping a drawn Job towards its intended class: the scarce resource, its margin, a runner-up.

Shaping works on the steady rates of :func:`~.model.stage_rates` over the window's training time
(on every 16th cell, which is plenty for a mean); the fluid runs decide the label afterwards.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from bottleneck_operator_dev.familyw.model import JobPlan, stage_rates


def pick(rng: np.random.Generator, items: tuple[str, ...]) -> str:
    return items[int(rng.integers(len(items)))]


def thin(p: JobPlan, every: int = 16) -> JobPlan:
    """The plan on every 16th cell: enough to estimate mean rates while shaping, at a fraction of the cost."""
    changes = {
        f.name: getattr(p, f.name)[:, ::every]
        for f in dataclasses.fields(p)
        if isinstance(getattr(p, f.name), np.ndarray) and getattr(p, f.name).ndim == 2
    }
    return dataclasses.replace(p, pause=p.pause[::every], n_cells=p.pause[::every].size, **changes)


def _mean_rates(p: JobPlan, low: bool = False) -> dict[str, float]:
    """Per-pod stage rates (samples/s) over the window's training time: means, or (``low``) the
    host stages' 10th percentiles, the worse seconds that a neighbour's arrival or a tenant leaves."""
    p = thin(p)
    r = stage_rates(p)
    live = p.pause < 1
    out = {k: float(np.mean(getattr(r, k)[:, live])) for k in ("io", "dec", "copy", "gpu")}
    if low:
        out.update({k: float(np.quantile(getattr(r, k)[:, live], 0.1)) for k in ("io", "dec", "copy")})
    return out


def _relax(p: JobPlan, keep: str, margin: float) -> JobPlan:
    """Give every host stage but ``keep`` at least ``margin`` times the GPUs' rate, within what is plausible."""
    r = _mean_rates(p, low=True)
    gpu_rate = r["gpu"]
    changes: dict[str, object] = {}
    tags: list[str] = []
    if keep != "storage" and r["io"] < margin * gpu_rate:
        # a dataset that the page cache holds, or a faster share of the store
        need = margin * gpu_rate / max(r["io"], 1e-9)
        miss = np.maximum(1.0 - p.hit, 0.002) / need
        changes["hit"] = np.clip(1.0 - miss, 0.0, 0.998)
        if float(np.max(changes["hit"])) > 0.97:  # type: ignore[call-overload]
            changes["stor_bw"], changes["lat_bw"] = p.stor_bw * 4.0, p.lat_bw * 4.0
            changes["hit"] = np.clip(1.0 - miss * 4.0, 0.0, 0.998)
    if keep != "cpu" and r["dec"] < margin * gpu_rate:
        need = margin * gpu_rate / max(r["dec"], 1e-9)
        workers = min(p.workers * need, 0.9 * p.node_cores)
        noise = p.dec_noise
        if workers < p.workers * need:  # not enough cores: a pre-decoded dataset or GPU-side decode
            noise = p.dec_noise * (p.workers * need / workers)
            tags.append("gpu-decode")
        changes.update(workers=workers, dec_noise=noise, nb_load=p.nb_load * 0.3)
        if math.isfinite(p.quota):
            changes["quota"] = (workers + p.main_cores) * 1.3
    if keep != "pcie" and r["copy"] < margin * gpu_rate:
        changes["pcie_bw"] = p.pcie_bw * margin * gpu_rate / r["copy"]
        tags.append("pinned-compact-inputs")
    if keep != "memory":
        changes["mem_limit"] = max(p.mem_limit, float(p.ws.max()) / 0.8)
    q = dataclasses.replace(p, **changes)  # type: ignore[arg-type]
    q.tags = (*q.tags, *tags)
    return q


def shape_plan(rng: np.random.Generator, p: JobPlan, hard: bool, attempt: int) -> JobPlan:
    """Make the intended resource the scarce one; a hard draw keeps a second one close behind."""
    squeeze = 0.7**attempt
    u = float(rng.uniform(0.72, 0.9) if hard else rng.uniform(0.3, 0.7)) * squeeze  # target rate / next bound
    margin = float(rng.uniform(1.25, 1.45) if hard else rng.uniform(1.5, 3.5))
    intent = p.intent
    # the devices first (fused kernels, hidden communication): the host is then sized against their rate
    p = _settle_device(p, intent, margin)
    p = _relax(p, intent if intent in ("storage", "cpu", "memory", "pcie") else "", margin)
    if intent in ("storage", "cpu", "memory", "pcie"):
        p = _squeeze_host(rng, p, intent, u)
    else:
        p = _squeeze_device(rng, p, intent, u, hard, squeeze)
    # compute: the GPUs bind once everything else has been relaxed; a hard draw pulls one other
    # resource close behind.
    if hard and intent != "memory":
        p = _runner_up(rng, p, intent, u)
    return p


def _settle_device(p: JobPlan, intent: str, margin: float) -> JobPlan:
    """Keep communication and HBM in their place unless one of them is the target."""
    if intent not in ("network", "nvlink", "hbm"):
        r0 = stage_rates(thin(p))
        exposed = float(np.mean(r0.exposed / r0.t_step))
        if exposed > 0.1 / margin:
            p = dataclasses.replace(p, overlap=0.95, net_share=np.clip(p.net_share * 3, 0, 1), net_bw=p.net_bw * 4)
    if intent != "hbm":
        # fused kernels: the matmuls, not the bytes, set the kernels' pace (HBM is the other Memory case)
        wl = p.workload
        c1 = 0.93 * wl.flops * p.batch / p.peak
        m2 = wl.bytes_mem * p.batch / p.hbm
        m1 = 0.93 * wl.flops * p.batch / wl.intensity / p.hbm
        if max(m2 / 0.6, m1 / 0.7) > c1:
            p = dataclasses.replace(p, bytes_scale=min(0.6 * c1 / m2, 0.7 * c1 / m1))
            p.tags = (*p.tags, "fused-kernels")
    return p


def _squeeze_host(rng: np.random.Generator, p: JobPlan, intent: str, u: float) -> JobPlan:
    """Bring a host stage (storage, loader, memory, copy link) to ``u`` of the devices' rate."""
    r = _mean_rates(p)
    gpu_rate = r["gpu"]
    if intent == "storage":
        f = u * gpu_rate / max(r["io"], 1e-9)
        return dataclasses.replace(p, stor_bw=p.stor_bw * f, lat_bw=p.lat_bw * f)
    if intent == "memory":
        # below one half, so that doubling any single host stage cannot undo what the swap costs
        ms = max(min(u * gpu_rate / max(min(r["io"], r["dec"]), 1e-9), float(rng.uniform(0.3, 0.45))), 0.08)
        excess = (1.0 / ms - 1.0) / p.mem_k
        return dataclasses.replace(p, mem_limit=float(np.mean(p.ws)) / (1.0 + excess))
    if intent == "pcie":
        f = u * gpu_rate / max(r["copy"], 1e-9)
        p = dataclasses.replace(p, pcie_bw=p.pcie_bw * f)
        p.tags = (*p.tags, "pcie-degraded" if f < 0.6 else "pcie-heavy-inputs")
        return p
    want = u * gpu_rate * p.workload.decode / float(np.mean(p.dec_noise))
    kind = pick(rng, ("workers", "quota", "node"))
    if kind == "workers":
        p = dataclasses.replace(p, workers=max(want, 0.5), quota=math.inf, nb_load=p.nb_load * 0.2)
    elif kind == "quota":
        p = dataclasses.replace(p, workers=max(want * 1.8, 2.0), quota=want + p.main_cores, nb_load=p.nb_load * 0.2)
    else:
        workers = max(want * 1.8, 2.0)
        # runnable neighbour threads that leave the loader ``want`` cores of the node by fair share
        nb = max(p.node_cores * workers / max(want, 0.1) - workers - p.main_cores, 0.0)
        nb_cores = min(p.node_cores, nb + workers + p.main_cores)
        p = dataclasses.replace(
            p, workers=workers, quota=math.inf, node_cores=nb_cores, nb_load=np.full_like(p.nb_load, nb)
        )
    p.tags = (*p.tags, f"cpu-limit:{kind}")
    return p


def _squeeze_device(rng: np.random.Generator, p: JobPlan, intent: str, u: float, hard: bool, squeeze: float) -> JobPlan:
    """Make the gradient exchange (NVLink, network) or HBM cost the devices ``1 - u`` of their rate."""
    if intent in ("network", "nvlink"):
        r0 = stage_rates(thin(p))
        t_step0 = float(np.mean(r0.t_gpu + p.t_host))
        exposed = t_step0 * (1.0 / u - 1.0)
        hidden = float(np.mean(p.overlap * (2.0 / 3.0) * r0.t_gpu))
        if intent == "network":
            t_inter = exposed + hidden - float(np.mean(r0.t_intra))
            net = 2.0 * (p.nodes - 1) / p.nodes * p.grad_bytes / max(t_inter, 1e-6)
            return dataclasses.replace(p, net_bw=net / float(np.mean(p.net_share)))
        t_intra = exposed + hidden - float(np.mean(r0.t_inter))
        nvl = 2.0 * (p.gpus - 1) / p.gpus * p.grad_bytes / max(t_intra, 1e-6)
        p = dataclasses.replace(p, nvl_bw=min(nvl, p.nvl_bw))
        p.tags = (*p.tags, "nvlink-lanes-down" if nvl < 0.5 * p.nvl_bw else "nvlink")
        return p
    if intent == "hbm":
        wl = p.workload
        c1 = 0.93 * wl.flops * p.batch / p.peak
        m2 = wl.bytes_mem * p.batch / p.hbm
        kappa = (float(rng.uniform(1.3, 1.7)) if hard else float(rng.uniform(1.8, 4.0))) / squeeze
        return dataclasses.replace(p, bytes_scale=kappa * c1 / m2)  # unfused attention, embedding gathers
    return p


def _runner_up(rng: np.random.Generator, p: JobPlan, intent: str, u: float) -> JobPlan:
    """Bring a second host stage to just above the binding rate: doubling the target gains little more."""
    r = _mean_rates(p)
    bound = min(r["io"], r["dec"], r["copy"], r["gpu"])
    close = bound * float(rng.uniform(1.2, 1.45))
    p2p = p.nvl_bw <= 0 and p.gpus > 1  # PCIe-only box: its links also carry the all-reduce
    skip = {"storage": "io", "cpu": "dec", "pcie": "copy"}.get(intent, "copy" if p2p else "")
    choice = pick(rng, tuple(s for s in ("io", "dec", "copy") if s != skip))
    if choice == "io" and intent != "storage":
        f = close / max(r["io"], 1e-9)
        p = dataclasses.replace(p, stor_bw=p.stor_bw * f, lat_bw=p.lat_bw * f, hit=np.minimum(p.hit, 0.5))
        p.tags = (*p.tags, "runner-up:IO")
    elif choice == "dec" and intent != "cpu":
        f = close / max(r["dec"], 1e-9)
        p = dataclasses.replace(p, workers=p.workers * f, quota=p.quota * f if math.isfinite(p.quota) else p.quota)
        p.tags = (*p.tags, "runner-up:CPU")
    elif choice == "copy" and intent != "pcie":
        f = close / max(r["copy"], 1e-9)
        p = dataclasses.replace(p, pcie_bw=p.pcie_bw * f)
        p.tags = (*p.tags, "runner-up:Interconnect")
    if rng.random() < 0.3 and intent != "memory":
        # the working set close to the limit: the page cache is squeezed, nothing swaps yet
        p = dataclasses.replace(p, mem_limit=float(p.ws.max()) / float(rng.uniform(0.86, 0.97)))
        p.tags = (*p.tags, "near-memory-limit")
    return p
