"""One pod's window: every exporter's series read into the contract's signals."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.signals import SIGNALS, Family
from bottleneck_operator_dev.familyai.accounting import Latents
from bottleneck_operator_dev.familyai.exporters import Reader, Scrapes, interp_rows, scrape_times
from bottleneck_operator_dev.familyai.plan import Plan
from bottleneck_operator_dev.familyai.scrapeconfig import ScrapeConfig
from bottleneck_operator_dev.familyai.timeline import LEAD, Timeline, ar1

FloatArray = npt.NDArray[np.float64]
Signals = dict[str, FloatArray]


@dataclass(frozen=True)
class PodState:
    """What one pod did, on the latent grid: GPU activity, power, link bytes, its cgroup and its node."""

    gpu: Latents
    power: Latents
    links: Latents
    pod: Latents
    node: Latents


def _reader(
    rng: np.random.Generator, tl: Timeline, cfg: ScrapeConfig, p: int, name: str, at: FloatArray, step: float
) -> Reader:
    lo, hi = float(at[0]) - LEAD + 10.0, float(at[-1])
    times = scrape_times(rng, lo, hi, cfg.interval[name], cfg.lost, cfg.outage.get(name))
    alive = interp_rows(tl.t, tl.alive[p].astype(float), times) > 0.999
    return Reader(tl.t, Scrapes(times[alive], cfg.interval[name]), at, step)


def _dcgm(
    rng: np.random.Generator, plan: Plan, tl: Timeline, cfg: ScrapeConfig, p: int, s: PodState, r: Reader
) -> Signals:
    g = plan.gpus_per_pod
    jitter = np.exp(0.03 * ar1(rng, (g, tl.t.size), 20.0))
    spread = tl.gpu_spread[p][:, None]

    def per_gpu(x: FloatArray, hi: float = 1.0) -> FloatArray:
        out: FloatArray = np.clip(x[p][None, :] * jitter, 0.0, hi)
        return out

    def avg(x: FloatArray, average: bool = True) -> FloatArray:
        out: FloatArray = r.collected(x, cfg.collect, average).mean(axis=0)
        return out

    fb = np.clip(plan.fb_frac * (1 - 0.5 * tl.warm) + rng.uniform(-0.01, 0.01, size=(g, 1)), 0.02, 0.995)
    nv = s.links["nvlink_tx"][p] + s.links["nvlink_rx"][p]
    out: Signals = {
        "gpu_util": avg(per_gpu(s.gpu["busy"]), average=False),
        "mem_copy_util": avg(per_gpu(s.gpu["memcopy"])),
        "fb_used_frac": r.collected(np.broadcast_to(fb, (g, tl.t.size)).copy(), cfg.collect, False).max(axis=0),
        "power_w": avg(np.minimum(per_gpu(s.power["power"], 1e4), plan.power_limit)),
        "sm_clock_mhz": avg(np.broadcast_to(s.power["clock"][p] * spread, (g, tl.t.size)).copy(), False),
        "nvlink_total_bps": avg(np.broadcast_to(nv, (g, tl.t.size)) * jitter / jitter.mean()),
        "xid_code": r.gauge(np.full(tl.t.size, cfg.xid)),
    }
    if Family.DCGM_PROF in cfg.present:
        out |= {
            "gr_engine_active": avg(per_gpu(s.gpu["gr"])),
            "tensor_active": avg(per_gpu(s.gpu["tensor"])),
            "dram_active": avg(per_gpu(s.gpu["dram"])),
            "pcie_tx_bps": avg(np.broadcast_to(s.links["pcie_tx"][p], (g, tl.t.size)).copy()),
            "pcie_rx_bps": avg(np.broadcast_to(s.links["pcie_rx"][p], (g, tl.t.size)).copy()),
        }
    if Family.DCGM_PROF_SM in cfg.present:
        out |= {"sm_active": avg(per_gpu(s.gpu["sm"])), "sm_occupancy": avg(per_gpu(s.gpu["occ"]))}
    if Family.DCGM_PROF_NVLINK in cfg.present:
        out |= {
            "nvlink_tx_bps": avg(np.broadcast_to(s.links["nvlink_tx"][p], (g, tl.t.size)).copy()),
            "nvlink_rx_bps": avg(np.broadcast_to(s.links["nvlink_rx"][p], (g, tl.t.size)).copy()),
        }
    if Family.DCGM_PROF_PIPES in cfg.present:
        out |= {"fp32_active": avg(per_gpu(s.gpu["fp32"])), "fp16_active": avg(per_gpu(s.gpu["fp16"]))}
    if Family.DCGM_POWER_CLOCKS in cfg.present:
        out |= {
            "power_limit_w": r.gauge(np.full(tl.t.size, plan.power_limit)),
            "clock_slowdown_frac": avg(np.broadcast_to(s.power["capped"][p], (g, tl.t.size)).copy(), False),
        }
    return out


def _cadvisor(plan: Plan, tl: Timeline, cfg: ScrapeConfig, p: int, s: PodState, r: Reader) -> Signals:
    pod, resets = s.pod, tl.restarts[p]
    out: Signals = {
        "cpu_cores": r.counter(pod["cpu"][p], resets, start=5e4),
        "mem_working_set_bytes": r.gauge(pod["ws"][p]),
        "fs_read_bps": r.counter(pod["io_read"][p], resets, start=1e9),
    }
    if Family.CADVISOR_CFS in cfg.present:
        periods = r.counter(np.full(tl.t.size, 10.0), resets, start=1e5)
        throttled = r.counter(10.0 * pod["throttled"][p], resets, start=1e4)
        with np.errstate(invalid="ignore", divide="ignore"):
            out["cpu_throttled_frac"] = np.clip(throttled / periods, 0.0, 1.0)
    return out


def _node(plan: Plan, tl: Timeline, cfg: ScrapeConfig, p: int, s: PodState, r: Reader) -> Signals:
    nd = s.node
    modes = {m: r.counter(nd[m][p], start=1e7) for m in ("busy", "iowait", "system", "idle")}
    total = modes["busy"] + modes["iowait"] + modes["idle"]
    with np.errstate(invalid="ignore", divide="ignore"):
        out: Signals = {
            "node_cpus": r.gauge(np.full(tl.t.size, float(plan.ncpu))),
            "node_cpu_busy_frac": np.clip(modes["busy"] / total, 0.0, 1.0),
            "node_cpu_iowait_frac": np.clip(modes["iowait"] / total, 0.0, 1.0),
            "node_cpu_system_frac": np.clip(modes["system"] / total, 0.0, 1.0),
        }
    out |= {
        "node_disk_read_bps": r.counter(nd["disk"][p], start=1e12),
        "node_disk_reads_ps": r.counter(nd["disk_ops"][p], start=1e8),
        "node_disk_busy_frac": np.clip(r.counter(nd["disk_busy"][p], start=1e5), 0.0, 1.0),
        "node_mem_avail_frac": r.gauge(nd["mem_avail"][p]),
        "node_swap_used_frac": r.gauge(nd["swap_used"][p]),
        "node_majfault_ps": r.counter(nd["majfault"][p], start=1e6),
        "node_net_rx_bps": r.counter(nd["net_rx"][p], start=1e12),
        "node_net_tx_bps": r.counter(nd["net_tx"][p], start=1e12),
    }
    if Family.NODE_PSI in cfg.present:
        for key in ("cpu_some", "io_some", "io_full", "mem_some", "mem_full"):
            out[f"node_psi_{key}"] = np.clip(r.counter(nd[f"psi_{key}"][p], start=1e4), 0.0, 1.0)
    if Family.NODE_IB in cfg.present:
        resets = () if cfg.ib_reset is None else (cfg.ib_reset,)
        out["ib_rx_bps"] = r.counter(nd["ib_rx"][p], resets, start=1e13)
        out["ib_tx_bps"] = r.counter(nd["ib_tx"][p], resets, start=1e13)
    return out


def _sidecar(plan: Plan, tl: Timeline, cfg: ScrapeConfig, p: int, s: PodState, r: Reader) -> Signals:
    pod = s.pod
    resets = tuple(x for x in (cfg.collector_reset,) if x is not None)
    out: Signals = {
        f"sc_psi_{k}": np.clip(r.counter(pod[f"psi_{k}"][p], resets), 0.0, 1.0)
        for k in ("cpu_some", "io_some", "io_full", "mem_some", "mem_full")
    }
    periods = r.counter(np.full(tl.t.size, 10.0), resets)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["sc_throttled_frac"] = np.clip(r.counter(10.0 * pod["throttled"][p], resets) / periods, 0.0, 1.0)
    oom = np.searchsorted(np.asarray(tl.restarts[p]), tl.t, side="right").astype(float)
    out |= {
        "sc_cpu_cores": r.counter(pod["cpu"][p] + 0.02, resets),
        "sc_io_read_bps": r.counter(pod["io_read"][p], resets),
        "sc_majfault_ps": r.counter(pod["majfault"][p], resets),
        "sc_swapin_ps": r.counter(pod["swapin"][p], resets),
        "sc_oom_kills": r.sampler.rate(interp_rows(tl.t, oom, r.times)),
        "sc_procs_running": r.gauge(pod["procs_running"][p], counts=True),
        "sc_procs_iowait": r.gauge(pod["procs_iowait"][p], counts=True),
        "sc_procs_busy": r.gauge(pod["procs_busy"][p], counts=True),
    }
    if Family.SIDECAR_NET in cfg.present:
        out["sc_net_rx_bps"] = r.counter(pod["net_rx"][p], resets)
        out["sc_net_tx_bps"] = r.counter(pod["net_tx"][p], resets)
    return out


def pod_signals(
    rng: np.random.Generator,
    plan: Plan,
    tl: Timeline,
    cfg: ScrapeConfig,
    p: int,
    s: PodState,
    at: FloatArray,
    step: float,
) -> Signals:
    """Every signal the deployed exporters give for pod ``p``, on the window's timestamps."""
    out = _dcgm(rng, plan, tl, cfg, p, s, _reader(rng, tl, cfg, p, "dcgm", at, step))
    if Family.CADVISOR in cfg.present:
        out |= _cadvisor(plan, tl, cfg, p, s, _reader(rng, tl, cfg, p, "cadvisor", at, step))
    ksm = _reader(rng, tl, cfg, p, "ksm", at, step) if Family.KSM in cfg.present else None
    if ksm is not None and plan.cpu_limit is not None:
        out["cpu_limit_cores"] = ksm.gauge(np.full(tl.t.size, plan.cpu_limit))
    spec = Family.CADVISOR in cfg.present and cfg.layout.get("cadvisor") == "spec-kept"
    if plan.mem_limit is not None and (spec or ksm is not None or Family.SIDECAR in cfg.present):
        source = ksm or _reader(rng, tl, cfg, p, "cadvisor", at, step)
        out["mem_limit_bytes"] = source.gauge(np.full(tl.t.size, plan.mem_limit))
    if Family.NODE in cfg.present:
        out |= _node(plan, tl, cfg, p, s, _reader(rng, tl, cfg, p, "node", at, step))
    if Family.SIDECAR in cfg.present:
        out |= _sidecar(plan, tl, cfg, p, s, _reader(rng, tl, cfg, p, "sidecar", at, step))
    unknown = set(out) - set(SIGNALS)
    if unknown:
        raise AssertionError(f"not contract signals: {sorted(unknown)}")
    return out
