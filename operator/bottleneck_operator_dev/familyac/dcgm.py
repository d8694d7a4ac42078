"""dcgm-exporter's fields for one pod's GPUs, per field set (DEV only, default, full).

dcgm-exporter collects on its own interval (30 s by default) and a faster scrape repeats the cached
value; utilisation and profiling fields describe a short sample period before the collection, so
they are read from the timeline over the last second, per GPU, at that GPU's own phase.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator.contract.signals import Family, signals_of
from bottleneck_operator_dev.familyac.context import Context, FloatArray
from bottleneck_operator_dev.familyac.sources import Reader, scrape_times

SAMPLE_PERIOD = 1.0  # seconds the driver averages a utilisation over (NVML: 1/6 s to 1 s)


def families(field_set: str, nvlink: bool) -> tuple[Family, ...]:
    """Which dcgm-exporter families a field set exports."""
    if field_set == "dev":
        return (Family.DCGM_DEV,)
    if field_set == "default":
        return (Family.DCGM_DEV, Family.DCGM_PROF)
    extra = (Family.DCGM_PROF_NVLINK,) if nvlink else ()
    return (
        Family.DCGM_DEV,
        Family.DCGM_PROF,
        Family.DCGM_PROF_SM,
        Family.DCGM_PROF_PIPES,
        Family.DCGM_POWER_CLOCKS,
        *extra,
    )


def _activity(ctx: Context, t: FloatArray, phase: float) -> dict[str, FloatArray]:
    """Busy shares and byte rates of one GPU over the sample period before each collection."""
    now, before = ctx.at(t, phase), ctx.at(t - SAMPLE_PERIOD, phase)
    d = (now - before) / SAMPLE_PERIOD
    return {n: np.clip(ctx.q(d, n), 0.0, None) for n in ("math", "hbm", "comm", "h2d_bytes", "comm_bytes")}


def _per_gpu(
    ctx: Context, a: dict[str, FloatArray], g: int, rng: np.random.Generator, knobs: dict[str, float]
) -> dict[str, FloatArray]:
    cfg, s = ctx.cfg, ctx.stages
    math, hbm, comm = np.clip(a["math"], 0, 1), np.clip(a["hbm"], 0, 1), np.clip(a["comm"], 0, 1)
    anyk = np.clip(math + hbm + 0.4 * comm, 0.0, 1.0)  # NCCL kernels count; most overlap backward
    n = anyk.size
    noise = rng.normal(0.0, 0.01, n)
    rdma = cfg.fabric in ("ib", "roce") and cfg.nodes > 1
    comm_bytes = a["comm_bytes"]
    inter = s.inter_bytes / max(s.grad_bytes, 1.0) / cfg.ranks_per_node
    intra = s.intra_bytes / max(s.grad_bytes, 1.0)
    gpu = cfg.gpu
    power = gpu.idle_w + (gpu.tdp_w - gpu.idle_w) * np.clip(0.25 * anyk + 0.6 * math + 0.35 * hbm, 0, 1)
    power = np.minimum(power, cfg.power_cap * gpu.tdp_w) * rng.lognormal(0, 0.02, n)
    out = {
        "gpu_util": np.clip(anyk + noise, 0, 1),
        "gr_engine_active": np.clip(anyk * knobs["gr"] + noise, 0, 1),
        "sm_active": np.clip(math * knobs["fill"] + hbm * 0.85 + comm * 0.06, 0, 1),
        "tensor_active": np.clip(math * knobs["tensor"], 0, 1),
        "dram_active": np.clip(math * 0.25 + hbm * 0.78 + comm * 0.05 + noise, 0, 1),
        "fp16_active": np.clip((math + hbm) * knobs["fp16"], 0, 1),
        "fp32_active": np.clip((math + hbm) * knobs["fp32"], 0, 1),
        "pcie_rx_bps": a["h2d_bytes"]
        + comm_bytes * ((inter if rdma else 0.0) + (intra if cfg.intra == "pcie" else 0.0))
        + 2e5,
        "pcie_tx_bps": comm_bytes * ((inter if rdma else 0.0) + (intra if cfg.intra == "pcie" else 0.0)) + 5e4,
        "nvlink_tx_bps": comm_bytes * (intra if cfg.intra == "nvlink" else 0.0),
        "power_w": power,
        "sm_clock_mhz": gpu.boost_mhz * s.clocks[g] * rng.normal(1.0, 0.003, n),
    }
    out["sm_occupancy"] = out["sm_active"] * knobs["occ"]
    out["mem_copy_util"] = np.clip(out["dram_active"] * 1.1 + 0.01, 0, 1)
    out["nvlink_rx_bps"] = out["nvlink_tx_bps"] * rng.normal(1.0, 0.01, n)
    out["nvlink_total_bps"] = out["nvlink_tx_bps"] + out["nvlink_rx_bps"]
    out["clock_slowdown_frac"] = np.where((s.capped[g] > 0) & (anyk > 0.3), 1.0, 0.0)
    return out


def _knobs(ctx: Context, rng: np.random.Generator) -> dict[str, float]:
    p = ctx.cfg.precision
    tensor = {"bf16": (0.45, 0.8), "fp16": (0.45, 0.8), "tf32": (0.25, 0.5), "fp32": (0.0, 0.02)}[p]
    return {
        "gr": rng.uniform(0.95, 1.0),
        "fill": ctx.cfg.model.sm_fill,
        "tensor": rng.uniform(*tensor),
        "occ": rng.uniform(0.3, 0.6),
        "fp16": rng.uniform(0.04, 0.12) if p in ("bf16", "fp16") else 0.0,
        "fp32": rng.uniform(0.1, 0.3) if p in ("fp32", "tf32") else rng.uniform(0.02, 0.08),
    }


def dcgm_signals(ctx: Context, first_gpu: int, phases: FloatArray, rng: np.random.Generator) -> dict[str, FloatArray]:
    """The pod's dcgm-exporter signals on the window grid (means over its GPUs, as the contract says)."""
    cfg = ctx.cfg
    times = scrape_times(rng, ctx.start, ctx.end, cfg.scrape, ctx.step, cfg.missing)
    collect = 30.0 if rng.random() < 0.6 else cfg.scrape  # the exporter's -c, default 30 s
    c0 = times[0] - rng.uniform(0, collect)
    collected = c0 + np.floor((times - c0) / collect) * collect
    knobs = _knobs(ctx, rng)
    per = [_per_gpu(ctx, _activity(ctx, collected, ph), first_gpu + i, rng, knobs) for i, ph in enumerate(phases)]
    fb = np.max([np.clip(rng.uniform(0.85, 0.99) + rng.normal(0, 0.002, times.size), 0, 1) for _ in phases], axis=0)
    limit = np.full(times.size, cfg.power_cap * cfg.gpu.tdp_w)
    reader = Reader.of(times, ctx.grid, ctx.step, cfg.scrape)
    wanted = {n for f in families(cfg.field_set, cfg.gpu.nvlink_gbs > 0) for n in signals_of(f, context=True)}
    out: dict[str, FloatArray] = {}
    for name in sorted(wanted):
        if name == "fb_used_frac":
            raw = fb
        elif name == "power_limit_w":
            raw = limit
        elif name == "xid_code":
            raw = _xid(rng, times)
        else:
            raw = np.mean([p[name] for p in per], axis=0)
        out[name] = reader.last(raw)
    return out


def _xid(rng: np.random.Generator, times: FloatArray) -> FloatArray:
    """The last XID error code: mostly none; now and then one appears and stays (13, 31, 43, 79)."""
    raw = np.zeros(times.size)
    if rng.random() < 0.04:
        raw[int(rng.integers(times.size)) :] = float(rng.choice([13, 31, 43, 79]))
    return raw
