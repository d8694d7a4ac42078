"""Each exporter's signals for one pod, read from the pod's :class:`~.exporters.Track` as Prometheus would."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.window import FloatArray
from bottleneck_operator_dev.familys.exporters import CFS_PERIOD, Scrapes, Track, counter, scrapes
from bottleneck_operator_dev.familys.scenario import Scenario
from bottleneck_operator_dev.familys.timeline import TICK

LOOKBACK = 600.0  # seconds of timeline before the window: rate() ranges reach back up to 4 scrape intervals


@dataclass(frozen=True)
class Pod:
    """What every exporter of one pod reads: the job, the pod's timeline, the window's grid and the cluster."""

    rng: np.random.Generator
    sc: Scenario
    p: int
    track: Track
    at: FloatArray
    step: float
    cfg: dict[str, float]
    fams: set[Family]

    def sample(self, si: float) -> Scrapes:
        return scrapes(
            self.rng, float(self.at[0]), self.at, self.step, si, misses=self.cfg["misses"], resets=self.cfg["resets"]
        )


def _collections(times: FloatArray, collect: float, phase: float) -> FloatArray:
    """When dcgm-exporter last collected before each scrape (it serves its cached value)."""
    return phase + np.floor((times - phase) / collect) * collect


def dcgm(pod: Pod, sig: dict[str, FloatArray]) -> None:
    """dcgm-exporter: DEV fields from NVML's one-second samples, at its last collection before each scrape."""
    rng, sc, p, track, cfg = pod.rng, pod.sc, pod.p, pod.track, pod.cfg
    gpu, g = sc.gpu, sc.gpus_per_pod
    sample = pod.sample
    # --- dcgm-exporter
    d = sample(cfg["si_dcgm"])
    ct = _collections(d.times, cfg["collect"], cfg["phase"])

    def m(name: str, span: float) -> FloatArray:
        return track.mean(name, ct, span)

    util = np.round(m("any", 1.0), 2)
    sig["gpu_util"] = d.sampler.last(util)
    sig["mem_copy_util"] = d.sampler.last(np.round(m("copy", 1.0), 2))
    sig["fb_used_frac"] = d.sampler.last(np.clip(cfg["fb"] + rng.normal(0, 0.002, ct.size), 0, 1))
    act = np.clip(0.5 * m("sm", 1.0) + 0.3 * m("tensor", 1.0) + 0.3 * m("dram", 1.0), 0, 1)
    powers, clocks, slow = [], [], []
    for i in range(g):
        c = sc.clock[p][i]
        demand = (
            gpu.idle_w + (gpu.tdp_w - gpu.idle_w) * act * (0.85 + 0.15 * c) + rng.normal(0, 0.01 * gpu.tdp_w, ct.size)
        )
        cap = sc.power_limit_w * rng.uniform(0.985, 1.0, ct.size)
        powers.append(np.minimum(demand, cap))
        busy = util > 0.05
        clocks.append(np.round(gpu.max_clock_mhz * c * np.where(busy, 1.0, rng.uniform(0.9, 1.0, ct.size)) / 15) * 15)
        slow.append(((demand >= cap) & (sc.power_limit_w < gpu.tdp_w)).astype(float))
    sig["power_w"] = d.sampler.last(np.mean(powers, axis=0))
    sig["sm_clock_mhz"] = d.sampler.last(np.mean(clocks, axis=0))
    sig["nvlink_total_bps"] = d.sampler.last(2 * m("nvlink", 1.0))
    sig["xid_code"] = d.sampler.last(np.zeros(ct.size))
    _dcgm_prof(pod, sig, d, ct, np.mean(slow, axis=0))


def _dcgm_prof(pod: Pod, sig: dict[str, FloatArray], d: Scrapes, ct: FloatArray, slow: FloatArray) -> None:
    """The profiling fields, each the mean over dcgm-exporter's collect interval, and the power/clock fields."""
    sc, track, fams = pod.sc, pod.track, pod.fams
    prof = pod.cfg["collect"]

    def m(name: str, span: float) -> FloatArray:
        return track.mean(name, ct, span)

    if Family.DCGM_PROF in fams:
        sig["gr_engine_active"] = d.sampler.last(m("any", prof))
        sig["tensor_active"] = d.sampler.last(m("tensor", prof))
        sig["dram_active"] = d.sampler.last(m("dram", prof))
        sig["pcie_tx_bps"] = d.sampler.last(m("pcie_tx", prof))
        sig["pcie_rx_bps"] = d.sampler.last(m("pcie_rx", prof))
    if Family.DCGM_PROF_SM in fams:
        sig["sm_active"] = d.sampler.last(m("sm", prof))
        sig["sm_occupancy"] = d.sampler.last(m("occ", prof))
    if Family.DCGM_PROF_NVLINK in fams:
        sig["nvlink_tx_bps"] = d.sampler.last(m("nvlink", prof))
        sig["nvlink_rx_bps"] = d.sampler.last(m("nvlink", prof))
    if Family.DCGM_PROF_PIPES in fams:
        sig["fp32_active"] = d.sampler.last(m("fp32", prof))
        sig["fp16_active"] = d.sampler.last(m("fp16", prof))
    if Family.DCGM_POWER_CLOCKS in fams:
        sig["power_limit_w"] = d.sampler.last(np.full(ct.size, sc.power_limit_w))
        sig["clock_slowdown_frac"] = d.sampler.last(slow)


def cadvisor(pod: Pod, sig: dict[str, FloatArray]) -> None:
    """cAdvisor (the workload's containers) and kube-state-metrics."""
    rng, sc, track, cfg, fams = pod.rng, pod.sc, pod.track, pod.cfg, pod.fams
    sample = pod.sample
    # --- cAdvisor (the workload's containers) and kube-state-metrics
    if Family.CADVISOR in fams:
        ca = sample(cfg["si_cadvisor"])
        sig["cpu_cores"] = ca.sampler.rate(counter(track, "cpu", ca, 5e5))
        ws = sc.working_set_bytes * (1 + rng.normal(0, 0.01, ca.times.size))
        if sc.mem_limit_bytes is not None:
            ws = np.minimum(ws, sc.mem_limit_bytes * 0.995)
        sig["mem_working_set_bytes"] = ca.sampler.last(ws)
        limit = np.nan if sc.mem_limit_bytes is None else sc.mem_limit_bytes
        sig["mem_limit_bytes"] = ca.sampler.last(np.full(ca.times.size, limit))
        sig["fs_read_bps"] = ca.sampler.rate(counter(track, "block_read", ca, 3e12))
        if Family.CADVISOR_CFS in fams:
            periods = counter(track, "one", ca, 4e6, 1 / CFS_PERIOD)
            thr = counter(track, "throttled", ca, 1e5, 1 / CFS_PERIOD)
            with np.errstate(divide="ignore", invalid="ignore"):
                sig["cpu_throttled_frac"] = np.clip(ca.sampler.rate(thr) / ca.sampler.rate(periods), 0, 1)
    if Family.KSM in fams and sc.cpu_limit is not None:
        k = sample(cfg["si_ksm"])
        sig["cpu_limit_cores"] = k.sampler.last(np.full(k.times.size, sc.cpu_limit))


def _node_rates(pod: Pod, nd: Scrapes) -> dict[str, FloatArray]:
    """The node's counters (the pod's intervals plus its neighbours' steady load), as rates."""
    cfg, track, t = pod.cfg, pod.track, nd.times
    t_ref = float(pod.at[0]) - LOOKBACK

    def node_counter(name: str, extra_rate: float, offset: float, scale: float = 1.0) -> FloatArray:
        v = counter(track, name, nd, offset, scale) + extra_rate * (t - t_ref)
        if nd.reset_at is not None:
            v = np.where(t > nd.reset_at, v - extra_rate * (nd.reset_at - t_ref), v)
        out: FloatArray = np.asarray(v, dtype=np.float64)
        return out

    nb = cfg["nb_cores"]
    counters = {
        "busy": node_counter("cpu", nb, 1e8),
        "iowait": node_counter("dstate", cfg["nb_dstate"], 1e6, 0.8),
        "system": node_counter("system", 0.08 * nb, 1e7),
        "disk": node_counter("block_read", cfg["nb_disk"], 5e12),
        "disk_busy": node_counter("disk_busy", cfg["nb_disk_busy"], 1e5),
        "faults": node_counter("majfault", cfg["nb_faults"], 1e7),
        "rx": node_counter("net_rx", cfg["nb_net"], 1e13),
        "tx": node_counter("tcp", 0.3 * cfg["nb_net"], 1e13),
    }
    if Family.NODE_PSI in pod.fams:
        for key, ch, share in PSI_SHARES:
            counters[f"node_psi_{key}"] = node_counter(ch, cfg["nb_psi"] * share, 1e4)
    if Family.NODE_IB in pod.fams:
        counters["ib"] = node_counter("ib", cfg["nb_ib"], 1e14)
    return dict(zip(counters, nd.sampler.rate(np.stack(list(counters.values()))), strict=True))


# PSI resources: (signal suffix, channel, share of the neighbours' pressure that reaches the node's)
PSI_SHARES = (
    ("cpu_some", "psi_cpu", 1.0),
    ("io_some", "psi_io_some", 1.0),
    ("io_full", "psi_io_full", 1 / 3),
    ("mem_some", "psi_mem_some", 1 / 4),
    ("mem_full", "psi_mem_full", 1 / 8),
)


def node(pod: Pod, sig: dict[str, FloatArray]) -> None:
    """node-exporter on the pod's node: the pod's load plus its neighbours'."""
    cfg = pod.cfg
    nd = pod.sample(cfg["si_node"])
    t = nd.times
    ncpu = float(pod.sc.node_cpus)
    rates = _node_rates(pod, nd)
    sig["node_cpus"] = nd.sampler.last(np.full(t.size, ncpu))
    sig["node_cpu_busy_frac"] = np.clip(rates["busy"] / ncpu, 0, 1)
    sig["node_cpu_iowait_frac"] = np.clip(rates["iowait"] / ncpu, 0, 1)
    sig["node_cpu_system_frac"] = np.clip(rates["system"] / ncpu, 0, 1)
    sig["node_disk_read_bps"] = rates["disk"]
    sig["node_disk_reads_ps"] = rates["disk"] / cfg["req"]
    sig["node_disk_busy_frac"] = np.clip(rates["disk_busy"], 0, 1)
    avail = cfg["mem_avail"] + pod.rng.normal(0, 0.005, t.size)
    sig["node_mem_avail_frac"] = nd.sampler.last(np.clip(avail, 0.005, 1))
    sig["node_swap_used_frac"] = nd.sampler.last(np.full(t.size, cfg["swap_used"]))
    sig["node_majfault_ps"] = rates["faults"]
    sig["node_net_rx_bps"] = rates["rx"]
    sig["node_net_tx_bps"] = rates["tx"]
    for key, _, _ in PSI_SHARES:
        if f"node_psi_{key}" in rates:
            sig[f"node_psi_{key}"] = np.clip(rates[f"node_psi_{key}"], 0, 1)
    if "ib" in rates:
        sig["ib_rx_bps"] = rates["ib"]
        sig["ib_tx_bps"] = rates["ib"].copy()


def sidecar(pod: Pod, sig: dict[str, FloatArray]) -> None:
    """The collector sidecar: the pod's own cgroup."""
    sc, track, cfg, fams, g = pod.sc, pod.track, pod.cfg, pod.fams, pod.sc.gpus_per_pod
    sample = pod.sample
    # --- the collector sidecar: the pod's own cgroup
    if Family.SIDECAR in fams:
        s = sample(cfg["si_sidecar"])
        sc_counters = {
            f"sc_psi_{key}": counter(track, ch, s, 3e3)
            for key, ch in (
                ("cpu_some", "psi_cpu"),
                ("io_some", "psi_io_some"),
                ("io_full", "psi_io_full"),
                ("mem_some", "psi_mem_some"),
                ("mem_full", "psi_mem_full"),
            )
        }
        sc_counters["sc_cpu_cores"] = counter(track, "cpu", s, 5e5)
        sc_counters["periods"] = counter(track, "one", s, 4e6, 1 / CFS_PERIOD)
        sc_counters["throttled"] = counter(track, "throttled", s, 1e5, 1 / CFS_PERIOD)
        sc_counters["sc_io_read_bps"] = counter(track, "block_read", s, 1e12)
        sc_counters["sc_majfault_ps"] = counter(track, "majfault", s, 1e6)
        sc_counters["sc_swapin_ps"] = counter(track, "swapin", s, 1e5)
        sc_counters["sc_oom_kills"] = counter(track, "zero", s, 0.0)
        sr = dict(zip(sc_counters, s.sampler.rate(np.stack(list(sc_counters.values()))), strict=True))
        for key in sc_counters:
            if key.startswith("sc_"):
                sig[key] = np.clip(sr[key], 0, 1) if key.startswith("sc_psi_") else sr[key]
        with np.errstate(divide="ignore", invalid="ignore"):
            sig["sc_throttled_frac"] = np.clip(sr["throttled"] / sr["periods"], 0, 1)
        tick = np.floor(s.times / 5.0) * 5.0  # the collector reads its cgroup every 5 s
        sig["sc_procs_running"] = s.sampler.last(np.round(track.mean("running", tick, TICK)))
        sig["sc_procs_iowait"] = s.sampler.last(np.round(track.mean("dstate", tick, TICK)))
        per_worker = track.mean("decoding", tick, 5.0) / sc.workers * min(1.0, sc.worker_cores / sc.workers)
        busy_workers = np.where(per_worker >= 0.9, sc.workers, 0)
        busy_trainer = (track.mean("trainer_busy", tick, 5.0) >= 0.9).astype(float)
        sig["sc_procs_busy"] = s.sampler.last(g * (busy_workers + busy_trainer))


def pod_signals(pod: Pod) -> dict[str, FloatArray]:
    """Every signal of one pod, from the exporters the cluster runs."""
    sig: dict[str, FloatArray] = {}
    dcgm(pod, sig)
    if Family.CADVISOR in pod.fams or Family.KSM in pod.fams:
        cadvisor(pod, sig)
    if Family.NODE in pod.fams:
        node(pod, sig)
    if Family.SIDECAR in pod.fams:
        sidecar(pod, sig)
    return sig
