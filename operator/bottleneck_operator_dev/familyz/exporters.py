"""The controllers' state as the exporters read it, and then as the data layer samples it.

- dcgm-exporter collects every ``dcgm_collect`` seconds: time shares (GPU_UTIL, the PROF ratios,
  PCIe/NVLink bytes) are averages over the collection interval just ended, with per-sample noise
  where the hardware counter has it; power and clock are read at the collection instant; a scrape
  returns the latest collection.
- counters (cAdvisor, node-exporter, the sidecar) integrate bytes, CPU seconds, pages and periods
  tick by tick and are read at the scrape instant; an exporter restart sets them back to zero;
- gauges are read at the scrape instant;
- PSI is the share of wall time some (or every) task of the cgroup waited, integrated as a counter
  of seconds.

Scrapes come at Prometheus's own phase and interval with a little jitter and the odd miss; the
window's values are then made exactly as the data layer asks Prometheus for them, with the
contract's :class:`~bottleneck_operator.contract.sampling.Sampler`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range
from bottleneck_operator.contract.window import PodWindow
from bottleneck_operator_dev.familyz.hardware import PAGE
from bottleneck_operator_dev.familyz.workload import Plan

FloatArray = npt.NDArray[np.float64]


def _at(per_second: FloatArray, rel: FloatArray) -> FloatArray:
    """Integrals of per-tick rates (rows of ``per_second``, shape (S, ticks)) from tick 0 to each time."""
    ticks = per_second.shape[-1]
    cum = np.concatenate([np.zeros((*per_second.shape[:-1], 1)), np.cumsum(per_second, axis=-1)], axis=-1)
    clipped = np.clip(rel, 0.0, float(ticks))
    idx = np.minimum(clipped.astype(np.int64), ticks - 1)
    out: FloatArray = cum[..., idx] + (clipped - idx) * per_second[..., idx]
    return out


class Scrapes:
    """One exporter's scrapes of one pod: times, and reads of integrated or instant quantities."""

    def __init__(
        self, rng: np.random.Generator, plan: Plan, exporter: str, t0: float, at: FloatArray, ticks: int
    ) -> None:
        si = plan.view.intervals[exporter]
        end = float(at[-1])
        phase = float(rng.uniform(0.0, si))
        first = t0 + 2.0 + phase
        count = int((end - first) // si) + 1
        times = first + si * np.arange(count) + rng.normal(0.0, 0.002 * si, count)
        keep = rng.random(count) >= plan.view.miss
        self.times = times[keep]
        self.rel = self.times - t0
        self.ticks = ticks
        self.sampler = Sampler(
            self.times, at, range_seconds=rate_range(plan.step, si), window=gauge_window(plan.step, si)
        )
        self.reset_at = float(rng.uniform(at[0], end)) - t0 if rng.random() < plan.view.reset else np.inf
        self.base = float(rng.uniform(1e3, 1e6))

    def counters(self, per_second: dict[str, FloatArray]) -> FloatArray:
        """Counter samples that integrate each per-tick rate, as read at the scrapes, shape (S, n).

        A counter runs since the exporter started (an offset) and restarts from zero when the
        exporter restarts inside the window.
        """
        rows = np.stack(list(per_second.values()))
        total = _at(rows, self.rel)
        if np.isfinite(self.reset_at):
            at_reset = _at(rows, np.array([self.reset_at]))
            out: FloatArray = np.where(self.rel >= self.reset_at, total - at_reset, total + self.base)
            return out
        return total + self.base

    def rates(self, per_second: dict[str, FloatArray]) -> dict[str, FloatArray]:
        """``rate()`` of the counters of :meth:`counters`, on the window's grid."""
        return dict(zip(per_second, self.sampler.rate(self.counters(per_second)), strict=True))

    def gauge(self, per_tick: FloatArray) -> FloatArray:
        idx = np.clip(self.rel.astype(np.int64), 0, self.ticks - 1)
        return self.sampler.last(per_tick[idx])


def _ratio(part: FloatArray, whole: FloatArray) -> FloatArray:
    """A ratio of two counters' rates (throttled over total periods), NaN where the whole is not positive."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.clip(np.where(whole > 0, part / whole, np.nan), 0.0, 1.0)


@dataclass
class _Pod:
    """One pod being read: its draws, truth, constants, exogenous inputs and the signals made so far."""

    rng: np.random.Generator
    plan: Plan
    tr: dict[str, FloatArray]
    nz: dict[str, FloatArray]
    L: dict[str, float]
    t0: float
    at: FloatArray
    out: dict[str, FloatArray] = field(default_factory=dict)


def _dcgm_shares(c: _Pod, d: Scrapes, collected: FloatArray) -> dict[str, FloatArray]:
    """Time shares and byte rates: averages over the collection interval just ended, with counter noise."""
    rng, tr, L, view = c.rng, c.tr, c.L, c.plan.view
    c_int = view.dcgm_collect
    sm = tr["kernel"] * L["fill"] + tr["comm"] * 0.15
    shares = {
        "gpu_util": (tr["gpu_busy"], 0.0),
        "mem_copy_util": (np.minimum(1.0, tr["dram"] * 1.1), 0.0),
        "nvlink_total_bps": (2.0 * tr["nvlink"], 0.01),
        "capped": (tr["capped"], 0.0),
        "gr_engine_active": (np.minimum(1.0, tr["kernel"] + tr["comm"]), 0.02),
        "tensor_active": (tr["tensor"], 0.02),
        "dram_active": (tr["dram"], 0.02),
        "pcie_tx_bps": (tr["pcie_tx"] * 1.05, 0.02),  # headers included
        "pcie_rx_bps": (tr["pcie_rx"] * 1.05, 0.02),
        "sm_active": (sm, 0.02),
        "sm_occupancy": (sm * L["occupancy"], 0.02),
        "fp32_active": (tr["fp32"], 0.02),
        "fp16_active": (tr["kernel"] * 0.03, 0.02),
        "nvlink_tx_bps": (tr["nvlink"], 0.01),
        "nvlink_rx_bps": (tr["nvlink"], 0.01),
    }
    rows = np.stack([v for v, _ in shares.values()])
    avg = (_at(rows, collected) - _at(rows, collected - c_int)) / c_int
    sd = np.array([n for _, n in shares.values()])[:, None]
    avg = d.sampler.last(avg * (1.0 + sd * rng.standard_normal(avg.shape)))
    got = dict(zip(shares, avg, strict=True))
    ratios = {
        "gr_engine_active",
        "tensor_active",
        "dram_active",
        "sm_active",
        "sm_occupancy",
        "fp32_active",
        "fp16_active",
    }
    for name in ratios:
        got[name] = np.clip(got[name], 0.0, 1.0)

    for name in ratios:
        got[name] = np.clip(got[name], 0.0, 1.0)
    return got


def _dcgm(c: _Pod) -> Scrapes:
    """dcgm-exporter: collected every few seconds, scraped at its own interval."""
    rng, plan, tr, L, out, view, ticks, g, t0, at = (
        c.rng,
        c.plan,
        c.tr,
        c.L,
        c.out,
        c.plan.view,
        c.plan.ticks,
        c.plan.gpus,
        c.t0,
        c.at,
    )
    d = Scrapes(rng, plan, "dcgm", t0, at, ticks)
    c_int = view.dcgm_collect
    c_phase = float(rng.uniform(0.0, c_int))
    collected = np.floor((d.rel - c_phase) / c_int) * c_int + c_phase  # the latest collection before each scrape
    collected = np.clip(collected, c_int, ticks - 1.0)

    def instant(per_tick: FloatArray) -> FloatArray:
        return per_tick[np.clip(collected.astype(np.int64), 0, ticks - 1)]

    got = _dcgm_shares(c, d, collected)
    out["gpu_util"] = np.clip(np.round(got["gpu_util"] * 100.0) / 100.0, 0.0, 1.0)
    out["mem_copy_util"] = np.clip(np.round(got["mem_copy_util"] * 100.0) / 100.0, 0.0, 1.0)
    out["fb_used_frac"] = d.sampler.last(np.full(d.times.size, L["fb_used"]))
    power = np.minimum(instant(tr["power"]) * (1.0 + 0.01 * rng.standard_normal(d.times.size)), L["plim"])
    out["power_w"] = d.sampler.last(power)
    spread = L["fmax"] * 0.01 * rng.standard_normal(d.times.size) * (instant(tr["clock"]) > L["idle_clock"])
    out["sm_clock_mhz"] = d.sampler.last(np.minimum(instant(tr["clock"]) + np.round(spread / 15.0) * 15.0, L["fmax"]))
    out["nvlink_total_bps"] = got["nvlink_total_bps"]
    if view.fields in ("default", "full"):
        for name in ("gr_engine_active", "tensor_active", "dram_active", "pcie_tx_bps", "pcie_rx_bps"):
            out[name] = got[name]
    if view.fields == "full":
        for name in ("sm_active", "sm_occupancy", "fp32_active", "fp16_active", "nvlink_tx_bps", "nvlink_rx_bps"):
            out[name] = got[name]
        out["power_limit_w"] = d.sampler.last(np.full(d.times.size, L["plim"]))
        out["clock_slowdown_frac"] = np.clip(np.round(got["capped"] * g) / g, 0.0, 1.0)

    return d


def _cadvisor(c: _Pod) -> None:
    """kubelet/cAdvisor and kube-state-metrics: the pod's containers."""
    rng, plan, tr, L, out, ticks, t0, at = c.rng, c.plan, c.tr, c.L, c.out, c.plan.ticks, c.t0, c.at
    ca = Scrapes(rng, plan, "cadvisor", t0, at, ticks)
    limited = L["quota"] < 1e6
    counters = {"cpu_cores": tr["cpu"], "fs_read_bps": tr["read"]}
    if limited:
        counters |= {"periods": np.full(ticks, 10.0), "throttled": 10.0 * tr["throttled"]}
    r = ca.rates(counters)
    out["cpu_cores"], out["fs_read_bps"] = r["cpu_cores"], r["fs_read_bps"]
    working_set = np.minimum(tr["anon"] + 0.3 * tr["cache"], L["mem_limit"])
    out["mem_working_set_bytes"] = ca.gauge(working_set)
    out["mem_limit_bytes"] = ca.gauge(np.full(ticks, L["mem_limit"]))
    if limited:
        out["cpu_throttled_frac"] = _ratio(r["throttled"], r["periods"])
        ks = Scrapes(rng, plan, "ksm", t0, at, ticks)
        out["cpu_limit_cores"] = ks.gauge(np.full(ticks, L["quota"]))


def _node(c: _Pod) -> None:
    """node-exporter: the whole node, neighbours included."""
    rng, plan, tr, nz, L, out, view, ticks, t0, at = (
        c.rng,
        c.plan,
        c.tr,
        c.nz,
        c.L,
        c.out,
        c.plan.view,
        c.plan.ticks,
        c.t0,
        c.at,
    )
    n = Scrapes(rng, plan, "node", t0, at, ticks)
    cores = L["ncores"]
    busy = np.minimum(cores, tr["cpu"] + nz["nbr_cpu"] + 0.3)
    swap_bytes = tr["swapin"] * PAGE * (L["fault_s"] > 50e-6)  # a disk swap device, not zram
    disk = tr["read"] + nz["nbr_disk"] + swap_bytes
    dev_bw = L["store_bw"] if L["store_net"] < 0.5 else 2e9
    nbr_net = np.where(nz["nbr_flows"] > 0, L["nic"] * nz["nbr_flows"] / (nz["nbr_flows"] + L["flows"]) * 0.6, 0.0)
    counters = {
        "node_cpu_busy_frac": busy / cores,
        "node_cpu_iowait_frac": np.minimum(cores - busy, tr["workers_io"] * L["dstate"] * 0.8 + nz["nbr_psi"] * 2.0)
        / cores,
        "node_cpu_system_frac": (0.08 * busy + tr["swapin"] * L["fault_s"]) / cores,
        "node_disk_read_bps": disk,
        "node_disk_reads_ps": tr["read"] / min(L["sample_b"], 131072.0) + nz["nbr_disk"] / 65536.0 + swap_bytes / PAGE,
        "node_disk_busy_frac": np.minimum(1.0, disk / (0.8 * max(dev_bw, 1.0))),
        "node_majfault_ps": tr["swapin"] + nz["nbr_psi"] * 2e4,
        "node_net_rx_bps": tr["net_store"] + tr["net_comm"] + nbr_net + 2e5,
        "node_net_tx_bps": tr["net_comm"] + 0.3 * nbr_net + 1e5,
    }
    if view.psi:
        counters |= {
            "node_psi_cpu_some": np.minimum(1.0, tr["run_wait"] * 0.8 + nz["nbr_psi"]),
            "node_psi_io_some": np.minimum(1.0, tr["io_wait"] + nz["nbr_psi"]),
            "node_psi_io_full": np.minimum(1.0, 0.5 * tr["io_wait"] + 0.5 * nz["nbr_psi"]),
            "node_psi_mem_some": np.minimum(1.0, tr["mem_stall"] * 1.3 + 0.3 * nz["nbr_psi"]),
            "node_psi_mem_full": np.minimum(1.0, tr["mem_stall"] * 0.8 + 0.1 * nz["nbr_psi"]),
        }
    if L["rdma"] > 0:
        # RDMA: only the infiniband collector's port counters see it
        counters |= {"ib_rx_bps": tr["ib"], "ib_tx_bps": tr["ib"]}
    for name, value in n.rates(counters).items():
        out[name] = np.clip(value, 0.0, 1.0) if name.endswith("_frac") or "_psi_" in name else value
    out["node_cpus"] = n.gauge(np.full(ticks, cores))
    avail = L["node_mem"] - tr["anon"] - nz["nbr_mem"] - 0.03 * L["node_mem"]
    out["node_mem_avail_frac"] = n.gauge(np.clip(avail / L["node_mem"], 0.0, 1.0))
    swap_total = 64.0 * 2**30
    out["node_swap_used_frac"] = n.gauge(np.minimum(1.0, tr["over"] / swap_total) if L["swap"] > 0 else np.zeros(ticks))


def _sidecar(c: _Pod) -> None:
    """The collector sidecar: the pod's own cgroup and network namespace."""
    rng, plan, tr, L, out, view, ticks, t0, at = c.rng, c.plan, c.tr, c.L, c.out, c.plan.view, c.plan.ticks, c.t0, c.at
    limited = L["quota"] < 1e6
    swap_bytes = tr["swapin"] * PAGE * (L["fault_s"] > 50e-6)  # a disk swap device, not zram
    if view.sidecar:
        s = Scrapes(rng, plan, "sidecar", t0, at, ticks)
        counters = {
            "sc_psi_cpu_some": tr["run_wait"],
            "sc_psi_io_some": tr["io_wait"],
            "sc_psi_io_full": tr["io_wait"] * 0.6,
            "sc_psi_mem_some": np.minimum(1.0, tr["mem_stall"] * 1.4 + tr["oom"]),
            "sc_psi_mem_full": tr["mem_stall"] * 0.8,
            "sc_cpu_cores": tr["cpu"] + 0.02,
            "sc_io_read_bps": tr["read"] + swap_bytes,
            "sc_majfault_ps": tr["swapin"],
            "sc_swapin_ps": tr["swapin"],
            "sc_oom_kills": tr["oom"],
        }
        if limited:
            counters |= {"periods": np.full(ticks, 10.0), "throttled": 10.0 * tr["throttled"]}
        if view.sidecar_net:
            # the pod's own interfaces: its TCP collectives and storage reads, never RDMA nor neighbours
            counters |= {"sc_net_rx_bps": tr["net_store"] + tr["net_comm"] + 1e4, "sc_net_tx_bps": tr["net_comm"] + 1e4}
        r = s.rates(counters)
        for name, value in r.items():
            if name not in ("periods", "throttled"):
                out[name] = np.clip(value, 0.0, 1.0) if "_psi_" in name else value
        if limited:
            out["sc_throttled_frac"] = _ratio(r["throttled"], r["periods"])
        out["sc_procs_running"] = s.gauge(np.round(1.0 + tr["workers_busy"]))
        out["sc_procs_iowait"] = s.gauge(np.round(tr["workers_io"] * L["dstate"]))
        out["sc_procs_busy"] = s.gauge(np.floor(tr["workers_busy"] * 0.9))


def pod_signals(
    rng: np.random.Generator, plan: Plan, truth: dict[str, FloatArray], k: int, t0: float, at: FloatArray
) -> PodWindow:
    """One pod's signals on the window's grid, in the contract's names and units."""
    c = _Pod(
        rng=rng,
        plan=plan,
        tr={name: v[:, k] for name, v in truth.items()},
        nz={name: v[:, k] for name, v in plan.noise.items()},
        L={name: float(v[k]) for name, v in plan.lanes.items()},
        t0=t0,
        at=at,
    )
    d = _dcgm(c)
    _cadvisor(c)
    _node(c)
    _sidecar(c)
    out, view, g = c.out, plan.view, plan.gpus
    out["xid_code"] = d.sampler.last(np.zeros(d.times.size))
    return PodWindow(
        pod=f"{plan.name}-worker-{k}",
        node=view.node_names[k],
        gpu_model=plan.gpu.model,
        gpu_count=g,
        signals=out,
        co_located_pods=view.co_located[k],
    )
