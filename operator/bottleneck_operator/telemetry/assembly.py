"""Assembly: the pass's answers cut into one JobWindow per Job, with its data quality."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import numpy as np

from bottleneck_operator.contract.signals import SIGNALS, Family
from bottleneck_operator.contract.window import DataQuality, FloatArray, JobWindow, PodWindow, SignalBlock
from bottleneck_operator.telemetry import alignment as al
from bottleneck_operator.telemetry import catalog as cat
from bottleneck_operator.telemetry.grid import Grid
from bottleneck_operator.telemetry.plausibility import drop_implausible_nvlink
from bottleneck_operator.telemetry.store import MODE_PREFIX, Pod, PodKey, Store, WindowRequest

_NODE_FAMILIES = (Family.NODE, Family.NODE_PSI, Family.NODE_IB)  # node-exporter's
# Preference when one scrape interval must describe the window: the GPU series matter most.
_INTERVAL_PREFERENCE = (Family.DCGM, Family.CADVISOR, Family.SIDECAR, Family.NODE, Family.KSM)


def assemble(req: WindowRequest, grid: Grid, store: Store) -> JobWindow:
    """One Job's window: its pods' series cut onto the window's own grid, and the data quality.

    Args:
        req: the Job and window asked for.
        grid: the window's instants (``Grid.within(req.start, req.end, step)``).
        store: everything the pass read.

    Returns:
        The window; a Job without pods or data gets one with no pods and a note.
    """
    lo, hi, step = grid.first, grid.last, grid.step
    ts = grid.timestamps()
    notes: list[str] = []
    if grid.size == 0:
        notes.append(f"window shorter than one step ({step:g}s): no sample times")

    members = _members(req, lo, hi, store, notes)
    job_pods = {(req.namespace, p) for p in members}
    grids = {id(g): int(g[0]) for g in store.grids.values() if len(g)}
    pods = tuple(
        _pod_window(req.namespace, pod, members[pod], job_pods, lo, hi, store, grids, notes) for pod in sorted(members)
    )
    if not pods:
        notes.append("no pods of this Job in the window")
    families = frozenset(SIGNALS[name].family for p in pods for name in p.signals)
    if Family.DCGM_DEV in families and Family.DCGM_PROF not in families:
        notes.append("no DCGM profiling (PROF) fields: GPU analysis from DEV fields only")
    if Family.DCGM_PROF in families and Family.DCGM_PROF_SM not in families:
        notes.append("no SM activity/occupancy (dcgm-exporter's shipped counters files leave them out)")
    notes.extend(store.failures)
    if pods and store.layout:
        # The report's data quality shows notes: the layout read goes there as well as in quality.layout.
        notes.append("label layout read: " + ", ".join(f"{k} {v}" for k, v in store.layout.items()))
    return JobWindow(
        namespace=req.namespace,
        job=req.job,
        start=req.start,
        end=req.end,
        step=step,
        timestamps=ts,
        pods=pods,
        quality=DataQuality(
            families=families,
            coverage=_coverage(pods, len(ts)),
            scrape_interval=_scrape_interval(store, pods, req.namespace),
            notes=tuple(dict.fromkeys(notes)),
            layout=dict(store.layout),
        ),
    )


def _members(req: WindowRequest, lo: int, hi: int, store: Store, notes: list[str]) -> dict[str, Pod]:
    """The Job's pods present on indices lo..hi, by name (a note says when names gave them away)."""
    key = (req.namespace, req.job)
    members = {pod: info for pod, info in store.pods.get(key, {}).items() if al.present(info.presence, lo, hi)}
    if key in store.prefix_jobs:
        # No kube_pod_info at all: take pods from the signal series by the "<job>-" name prefix.
        for ns, pod in store.pod_signals:
            if ns == req.namespace and pod.startswith(req.job + "-") and pod not in members:
                members[pod] = Pod(by_prefix=True)
        if members:
            notes.append(
                "no kube_pod_info for the Job: pods found by the '<job>-' name prefix in the exporters' series"
            )
    if any(info.by_prefix for info in members.values()) and key not in store.prefix_jobs:
        notes.append("pods found by the '<job>-' name prefix: kube_pod_info has no owner labels for them")
    return members


def _pod_window(
    ns: str,
    pod: str,
    info: Pod,
    job_pods: set[PodKey],
    lo: int,
    hi: int,
    store: Store,
    grids: dict[int, int],
    notes: list[str],
) -> PodWindow:
    own = store.pod_signals.get((ns, pod), {})
    signals = al.take_many(((n, c) for n, c in own.items() if n in cat.ENTRIES), lo, hi, grids)
    if _prefer_kubelet_psi(signals):
        notes.append("pod pressure (PSI) from the kubelet (container_pressure_*), the collector's where it has none")
    co_located = 0
    if not info.node and (ns, pod) in store.hints:
        info = Pod(node=store.hints[(ns, pod)], presence=info.presence, by_prefix=info.by_prefix)
        notes.append("node taken from the collector's or dcgm-exporter's labels (no kube_pod_info node)")
    if info.node:
        node_signals = store.node_signals.get(info.node, {})
        signals.update(al.take_many(((n, c) for n, c in node_signals.items() if n in SIGNALS), lo, hi, grids))
        signals.update(_cpu_shares(node_signals, lo, hi, grids))
        if not any(SIGNALS[n].family in _NODE_FAMILIES for n in signals):
            notes.append(
                f"no node-exporter series for node {info.node} (node_uname_info join or node_exporter_node_label)"
            )
        co_located = sum(
            1
            for other, chunks in store.on_node.get(info.node, {}).items()
            if other not in job_pods and al.present(chunks, lo, hi)
        )
    notes.extend(drop_implausible_nvlink(signals))
    gpu_count, model = _gpus(store.gpus.get((ns, pod), {}), lo, hi)
    if gpu_count == 0 and info.node and al.present(store.unmapped.get(info.node, []), lo, hi):
        notes.append(f"GPUs on node {info.node} carry no pod label: is dcgm-exporter's Kubernetes pod mapping on?")
    # every series spans lo..hi: one block, which the analysis copies in one piece
    block = SignalBlock.of(signals, hi - lo + 1)
    return PodWindow(
        pod=pod, node=info.node, gpu_model=model, gpu_count=gpu_count, signals=block, co_located_pods=co_located
    )


def _prefer_kubelet_psi(signals: dict[str, FloatArray]) -> bool:
    """Put the kubelet's pod PSI in the collector's PSI signals (the collector's fill its gaps).

    Both read the pod's cgroup pressure files; the kubelet's needs no collector in the pod and no
    host mount. The kubelet's entries are removed either way. Returns whether any was used.
    """
    used = False
    for signal, kubelet in cat.KUBELET_PSI.items():
        series = signals.pop(kubelet, None)
        if series is None or not np.isfinite(series).any():
            continue
        collector = signals.get(signal)
        signals[signal] = series if collector is None else np.where(np.isfinite(series), series, collector)
        used = True
    return used


def _cpu_shares(
    node_signals: dict[str, list[al.Chunk]], lo: int, hi: int, grids: dict[int, int]
) -> dict[str, FloatArray]:
    """node_cpu_{busy,iowait,system}_frac from the per-mode CPU rates: shares of all modes' time."""
    per_mode = ((n.removeprefix(MODE_PREFIX), c) for n, c in node_signals.items() if n.startswith(MODE_PREFIX))
    modes = al.take_many(per_mode, lo, hi, grids)
    if not modes:
        return {}
    stacked = np.vstack(list(modes.values()))
    total = np.where(np.isfinite(stacked).any(axis=0), np.nansum(stacked, axis=0), np.nan)
    total = np.where(total > 0, total, np.nan)
    zero = np.zeros_like(total)

    def share(*names: str) -> FloatArray:
        part = sum((np.nan_to_num(modes[n]) for n in names if n in modes), zero)
        return np.asarray(part / total, dtype=np.float64)

    return {
        "node_cpu_busy_frac": 1.0 - share("idle", "iowait"),
        "node_cpu_iowait_frac": share("iowait"),
        "node_cpu_system_frac": share("system"),
    }


def _gpus(by_model: dict[str, list[al.Chunk]], lo: int, hi: int) -> tuple[int, str | None]:
    best_model, best, total = None, 0, np.zeros(max(0, hi - lo + 1))
    for model, chunks in by_model.items():
        counts = np.nan_to_num(al.scatter(chunks, lo, hi))
        total = total + counts
        peak = int(counts.max()) if counts.size else 0
        if peak > best:
            best_model, best = model or None, peak
    return (int(total.max()) if total.size else 0), best_model


def _coverage(pods: Sequence[PodWindow], n: int) -> float:
    if n == 0 or not pods:
        return 0.0
    gpu_pods = [p for p in pods if p.gpu_count > 0] or list(pods)
    shares = []
    for p in gpu_pods:
        core = p.signals.get("gpu_util")
        if core is None:
            core = p.signals.get("gr_engine_active")
        shares.append(float(np.isfinite(core).sum()) / n if core is not None else 0.0)
    return float(np.mean(shares))


def _scrape_interval(store: Store, pods: Sequence[PodWindow], ns: str) -> float | None:
    """The Job's own sample spacing: its pods' estimates of the most relevant exporter."""
    for group in _INTERVAL_PREFERENCE:
        found = store.intervals.get(group, {})
        keys: list[object] = [p.node for p in pods] if group is Family.NODE else [(ns, p.pod) for p in pods]
        values = [found[k] for k in keys if k in found]
        if values:
            return round(statistics.median(values), 3)
    return None
