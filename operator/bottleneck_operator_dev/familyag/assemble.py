"""From exporter samples to the contract's signals: the window a data layer would hand the analysis.

Counters are read with ``rate()`` and gauges with ``last_over_time()`` through the contract's own
:class:`~bottleneck_operator.contract.sampling.Sampler`, over each exporter's scrape interval, so the
numbers are made exactly the way the data layer makes them from a real Prometheus.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range
from bottleneck_operator.contract.signals import SIGNALS, Family
from bottleneck_operator_dev.familyag.exporters import PodContext, Samples, cadvisor, dcgm, ksm, node, sidecar
from bottleneck_operator_dev.familyag.profile import FloatArray

# signal -> (family, exporter, how, raw names); how: "last" (gauge), "rate" (counter), "ratio" (rate / rate)
RECIPES: dict[str, tuple[Family, str, str, tuple[str, ...]]] = {
    "gpu_util": (Family.DCGM_DEV, "dcgm", "last", ("util",)),
    "mem_copy_util": (Family.DCGM_DEV, "dcgm", "last", ("memutil",)),
    "fb_used_frac": (Family.DCGM_DEV, "dcgm", "last", ("fb",)),
    "power_w": (Family.DCGM_DEV, "dcgm", "last", ("power",)),
    "sm_clock_mhz": (Family.DCGM_DEV, "dcgm", "last", ("clock",)),
    "nvlink_total_bps": (Family.DCGM_DEV, "dcgm", "last", ("nvl_total",)),
    "xid_code": (Family.DCGM_DEV, "dcgm", "last", ("xid",)),
    "gr_engine_active": (Family.DCGM_PROF, "dcgm", "last", ("busy",)),
    "tensor_active": (Family.DCGM_PROF, "dcgm", "last", ("tensor",)),
    "dram_active": (Family.DCGM_PROF, "dcgm", "last", ("dram",)),
    "pcie_tx_bps": (Family.DCGM_PROF, "dcgm", "last", ("pcie_tx",)),
    "pcie_rx_bps": (Family.DCGM_PROF, "dcgm", "last", ("pcie_rx",)),
    "sm_active": (Family.DCGM_PROF_SM, "dcgm", "last", ("sm",)),
    "sm_occupancy": (Family.DCGM_PROF_SM, "dcgm", "last", ("occ",)),
    "nvlink_tx_bps": (Family.DCGM_PROF_NVLINK, "dcgm", "last", ("nvl_tx",)),
    "nvlink_rx_bps": (Family.DCGM_PROF_NVLINK, "dcgm", "last", ("nvl_rx",)),
    "fp32_active": (Family.DCGM_PROF_PIPES, "dcgm", "last", ("fp32",)),
    "fp16_active": (Family.DCGM_PROF_PIPES, "dcgm", "last", ("fp16",)),
    "power_limit_w": (Family.DCGM_POWER_CLOCKS, "dcgm", "last", ("power_limit",)),
    "clock_slowdown_frac": (Family.DCGM_POWER_CLOCKS, "dcgm", "last", ("slowdown",)),
    "cpu_cores": (Family.CADVISOR, "cadvisor", "rate", ("cpu",)),
    "mem_working_set_bytes": (Family.CADVISOR, "cadvisor", "last", ("wset",)),
    "mem_limit_bytes": (Family.CADVISOR, "cadvisor", "last", ("mlimit",)),
    "fs_read_bps": (Family.CADVISOR, "cadvisor", "rate", ("fs_rd",)),
    "cpu_throttled_frac": (Family.CADVISOR_CFS, "cadvisor", "ratio", ("throttled", "periods")),
    "cpu_limit_cores": (Family.KSM, "ksm", "last", ("cpu_limit",)),
    "node_cpus": (Family.NODE, "node", "last", ("cpus",)),
    "node_cpu_busy_frac": (Family.NODE, "node", "ratio", ("n_busy", "n_total")),
    "node_cpu_iowait_frac": (Family.NODE, "node", "ratio", ("n_iowait", "n_total")),
    "node_cpu_system_frac": (Family.NODE, "node", "ratio", ("n_sys", "n_total")),
    "node_disk_read_bps": (Family.NODE, "node", "rate", ("n_disk_rd",)),
    "node_disk_reads_ps": (Family.NODE, "node", "rate", ("n_disk_ops",)),
    "node_disk_busy_frac": (Family.NODE, "node", "rate", ("n_disk_busy",)),
    "node_mem_avail_frac": (Family.NODE, "node", "last", ("mem_avail",)),
    "node_swap_used_frac": (Family.NODE, "node", "last", ("swap_used",)),
    "node_majfault_ps": (Family.NODE, "node", "rate", ("n_majflt",)),
    "node_net_rx_bps": (Family.NODE, "node", "rate", ("n_rx",)),
    "node_net_tx_bps": (Family.NODE, "node", "rate", ("n_tx",)),
    "node_psi_cpu_some": (Family.NODE_PSI, "node", "rate", ("n_psi_cpu",)),
    "node_psi_io_some": (Family.NODE_PSI, "node", "rate", ("n_psi_io",)),
    "node_psi_io_full": (Family.NODE_PSI, "node", "rate", ("n_psi_io_full",)),
    "node_psi_mem_some": (Family.NODE_PSI, "node", "rate", ("n_psi_mem",)),
    "node_psi_mem_full": (Family.NODE_PSI, "node", "rate", ("n_psi_mem_full",)),
    "ib_rx_bps": (Family.NODE_IB, "node", "rate", ("ib_rx",)),
    "ib_tx_bps": (Family.NODE_IB, "node", "rate", ("ib_tx",)),
    "sc_psi_cpu_some": (Family.SIDECAR, "sidecar", "rate", ("psi_cpu",)),
    "sc_psi_io_some": (Family.SIDECAR, "sidecar", "rate", ("psi_io",)),
    "sc_psi_io_full": (Family.SIDECAR, "sidecar", "rate", ("psi_io_full",)),
    "sc_psi_mem_some": (Family.SIDECAR, "sidecar", "rate", ("psi_mem",)),
    "sc_psi_mem_full": (Family.SIDECAR, "sidecar", "rate", ("psi_mem_full",)),
    "sc_cpu_cores": (Family.SIDECAR, "sidecar", "rate", ("cpu",)),
    "sc_throttled_frac": (Family.SIDECAR, "sidecar", "ratio", ("throttled", "periods")),
    "sc_io_read_bps": (Family.SIDECAR, "sidecar", "rate", ("fs_rd",)),
    "sc_majfault_ps": (Family.SIDECAR, "sidecar", "rate", ("majflt",)),
    "sc_swapin_ps": (Family.SIDECAR, "sidecar", "rate", ("swapin",)),
    "sc_oom_kills": (Family.SIDECAR, "sidecar", "rate", ("oom",)),
    "sc_procs_running": (Family.SIDECAR, "sidecar", "last", ("running",)),
    "sc_procs_iowait": (Family.SIDECAR, "sidecar", "last", ("dstate",)),
    "sc_procs_busy": (Family.SIDECAR, "sidecar", "last", ("busyp",)),
    "sc_net_rx_bps": (Family.SIDECAR_NET, "sidecar", "rate", ("pod_rx",)),
    "sc_net_tx_bps": (Family.SIDECAR_NET, "sidecar", "rate", ("pod_tx",)),
}
_EXPORTERS: dict[str, Callable[[np.random.Generator, PodContext], Samples]] = {
    "dcgm": dcgm,
    "cadvisor": cadvisor,
    "ksm": ksm,
    "node": node,
    "sidecar": sidecar,
}


def _wanted(ctx: PodContext) -> list[str]:
    """The signals this pod's exporters publish series for (by family, GPU and limits)."""
    fams, sc = ctx.obs.families, ctx.sc
    out = []
    for name, (family, _, _, _) in RECIPES.items():
        if family not in fams:
            continue
        if name in ("nvlink_total_bps", "nvlink_tx_bps", "nvlink_rx_bps") and sc.gpu.nvlink_bps <= 0:
            continue
        if name == "cpu_limit_cores" and sc.cpu_limit is None:
            continue
        out.append(name)
    return out


def _read(sampler: Sampler, samples: Samples, how: str, raw: tuple[str, ...]) -> FloatArray:
    if how == "last":
        return sampler.last(samples.values[raw[0]])
    if how == "rate":
        out: FloatArray = np.maximum(sampler.rate(samples.values[raw[0]]), 0.0)
        return out
    num, den = sampler.rate(samples.values[raw[0]]), sampler.rate(samples.values[raw[1]])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio: FloatArray = np.where(den > 0, np.clip(num / den, 0.0, 1.0), np.nan)
    return ratio


def pod_signals(
    rng: np.random.Generator, ctx: PodContext, timestamps: FloatArray, step: float
) -> dict[str, FloatArray]:
    """Every signal of one pod at the window's timestamps, in the contract's order.

    Args:
        rng: the Job's generator.
        ctx: the pod.
        timestamps: the window's evaluation times.
        step: the window's step, seconds.

    Returns:
        Signal name -> values (NaN where the window holds no sample).
    """
    names = _wanted(ctx)
    needed = {RECIPES[n][1] for n in names}
    samples = {exp: _EXPORTERS[exp](rng, ctx) for exp in _EXPORTERS if exp in needed}
    samplers = {
        exp: Sampler(
            s.times,
            timestamps,
            range_seconds=rate_range(step, s.interval),
            window=gauge_window(step, s.interval),
        )
        for exp, s in samples.items()
    }
    out = {}
    for name in SIGNALS:
        if name in names:
            _, exp, how, raw = RECIPES[name]
            out[name] = _read(samplers[exp], samples[exp], how, raw)
    return out
