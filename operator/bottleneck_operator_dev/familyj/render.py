"""A job's truth, scraped and read back as the window's per-pod signals (contract names only)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.signals import SIGNALS, Family
from bottleneck_operator_dev.familyj import gpu, host
from bottleneck_operator_dev.familyj.plan import Plan, Rng
from bottleneck_operator_dev.familyj.scrape import Scraper
from bottleneck_operator_dev.familyj.stepmodel import Factors, Stages

FloatArray = npt.NDArray[np.float64]
Signals = dict[str, FloatArray]  # signal name -> (pods, timestamps)


def render(rng: Rng, plan: Plan, st: Stages, f: Factors, pause: FloatArray, sc: Scraper) -> Signals:
    """Every signal the job's exporters would give, before families are dropped."""
    out: Signals = {}
    links = gpu.link_bytes(rng, plan, st, pause)
    out.update(_dcgm(rng, plan, st, f, pause, links, sc))
    cpu = host.pod_cpu(rng, plan, st, f, pause)
    mem = host.pod_memory(rng, plan, st, f)
    cpu["cpu_cores"] = cpu["cpu_cores"] + mem["reclaim_cores"]  # direct reclaim is charged to the pod
    pressure = host.pod_pressure(rng, plan, st, cpu, mem)
    pod = {**cpu, **mem, **pressure}
    out.update(_pod_side(plan, pod, sc))
    io = host.node_io(rng, plan, pod, links["nic_bps"], pause)
    node = {**io, **host.node_cpu_memory(rng, plan, pod, io)}
    rows = np.array([plan.node_of(p) for p in range(plan.pods)])
    out.update({k: v[rows] for k, v in _node_side(plan, node, sc).items()})
    return out


def _dcgm(
    rng: Rng, plan: Plan, st: Stages, f: Factors, pause: FloatArray, links: dict[str, FloatArray], sc: Scraper
) -> Signals:
    act = gpu.activity(rng, plan, st, f, pause)
    power = gpu.power_and_clocks(rng, plan, act, f)
    fb = gpu.framebuffer(rng, plan, st.step.shape)
    truth = {**act, **power, **{k: v for k, v in links.items() if k != "nic_bps"}}
    if plan.board.nvlink_bps == 0:
        for key in ("nvlink_rx_bps", "nvlink_tx_bps"):
            truth.pop(key)
    out = {name: sc.gauge("dcgm", values) for name, values in truth.items()}
    used, free = sc.gauge("dcgm", fb["fb_used_mib"]), sc.gauge("dcgm", fb["fb_free_mib"])
    out["fb_used_frac"] = used / (used + free)
    xid = np.zeros_like(st.step)
    if rng.random() < 0.05:
        xid[:, :] = float(rng.choice([13, 31, 43, 63]))  # an old XID since the driver loaded: context only
    out["xid_code"] = sc.gauge("dcgm", xid)
    return out


def _pod_side(plan: Plan, pod: dict[str, FloatArray], sc: Scraper) -> Signals:
    """cAdvisor, kube-state-metrics and the sidecar: the pod's own cgroup."""
    block = pod["read_bps"] if plan.storage.block else np.zeros_like(pod["read_bps"])
    block = block + pod["swapin_ps"] * host.PAGE
    ones = np.ones_like(block)
    out: Signals = {
        "cpu_cores": sc.counter("cadvisor", "cpu", pod["cpu_cores"], False),
        "mem_working_set_bytes": sc.gauge("cadvisor", pod["working_set"]),
        "fs_read_bps": sc.counter("cadvisor", "fs_read", block, False),
        "sc_cpu_cores": sc.counter("sidecar", "cpu", pod["cpu_cores"] + 0.02, False),
        "sc_io_read_bps": sc.counter("sidecar", "io_read", block, False),
        "sc_majfault_ps": sc.counter("sidecar", "majfault", pod["majfault_ps"], False),
        "sc_swapin_ps": sc.counter("sidecar", "swapin", pod["swapin_ps"], False),
        "sc_oom_kills": sc.counter("sidecar", "oom", pod["oom_ps"], False),
        "sc_procs_running": sc.gauge("sidecar", np.round(pod["procs_running"])),
        "sc_procs_iowait": sc.gauge("sidecar", np.round(pod["procs_iowait"])),
        "sc_procs_busy": sc.gauge("sidecar", np.round(pod["procs_busy"])),
    }
    for key in ("cpu_some", "io_some", "io_full", "mem_some", "mem_full"):
        name = "sc_psi_" + key
        out[name] = np.clip(sc.counter("sidecar", name, pod[key], False), 0.0, 1.0)
    if plan.cpu_limit is not None:
        periods = 10.0 * ones  # CFS enforcement periods of 100 ms while the cgroup runs
        out["cpu_throttled_frac"] = sc.ratio("cadvisor", "cfs", periods * pod["throttled"], periods, False)
        out["sc_throttled_frac"] = sc.ratio("sidecar", "cfs", periods * pod["throttled"], periods, False)
        out["cpu_limit_cores"] = sc.gauge("ksm", plan.cpu_limit * ones)
    if plan.mem_limit is not None:
        out["mem_limit_bytes"] = sc.gauge("ksm", plan.mem_limit * ones)
    return out


def _node_side(plan: Plan, node: dict[str, FloatArray], sc: Scraper) -> Signals:
    """node-exporter on each of the job's nodes (rows are nodes)."""
    modes = {m: sc.counter("node", f"cpu_{m}", node[f"{m}_cores"], True) for m in ("user", "system", "iowait", "idle")}
    total = sum(modes.values())
    total = np.where(total > 0, total, np.nan)
    n = node["user_cores"].shape[0]
    avail = sc.gauge("node", node["mem_avail"])
    swap_total = node["swap_total"][:, 0]
    swap_free = sc.gauge("node", node["swap_free"])
    out: Signals = {
        "node_cpus": sc.gauge("node", np.full_like(node["user_cores"], plan.node_cpus)),
        "node_cpu_busy_frac": 1.0 - (modes["idle"] + modes["iowait"]) / total,
        "node_cpu_iowait_frac": modes["iowait"] / total,
        "node_cpu_system_frac": modes["system"] / total,
        "node_mem_avail_frac": avail / plan.node_mem_bytes,
        "node_swap_used_frac": np.where(
            swap_total[:, None] > 0, 1.0 - swap_free / np.maximum(swap_total, 1.0)[:, None], 0.0 * swap_free
        ),
    }
    for name, key in (
        ("node_disk_read_bps", "disk_read_bps"),
        ("node_disk_reads_ps", "disk_reads_ps"),
        ("node_disk_busy_frac", "disk_busy"),
        ("node_majfault_ps", "majfault_ps"),
        ("node_net_rx_bps", "net_rx_bps"),
        ("node_net_tx_bps", "net_tx_bps"),
        ("ib_rx_bps", "ib_rx_bps"),
        ("ib_tx_bps", "ib_tx_bps"),
    ):
        out[name] = sc.counter("node", name, node[key], True)
    for kind in ("cpu_some", "io_some", "io_full", "mem_some", "mem_full"):
        out["node_psi_" + kind] = np.clip(sc.counter("node", kind, node["psi_" + kind], True), 0.0, 1.0)
    out["node_disk_busy_frac"] = np.clip(out["node_disk_busy_frac"], 0.0, 1.0)
    assert all(v.shape[0] == n for v in out.values())
    return out


def keep_families(signals: Signals, families: frozenset[Family]) -> Signals:
    """Only the signals whose family this cluster publishes."""
    return {k: v for k, v in signals.items() if k in SIGNALS and SIGNALS[k].family in families}
