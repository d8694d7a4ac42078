"""Assembly: the pass's answers cut into one JobWindow per Job, with its data quality.

Two corrections come first. Without a node label on node-exporter's series, only ``node_uname_info``
says which ``instance`` is which node: :func:`attach_instances` counts each instance series for a node
at the steps where node_uname_info pairs them, as ``* on (instance) group_left (nodename)`` would (in
PromQL that join cost Prometheus a new label set per series and step). And readings no hardware can
produce are treated as missing (:func:`drop_implausible_nvlink`): dcgm-exporter's NVLink total has a
disputed unit upstream, and the PROF NVLink fields read 0 on some firmware whatever the traffic.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import MutableMapping, Sequence

import numpy as np

from bottleneck_operator.contract.signals import SIGNALS, Family
from bottleneck_operator.contract.window import DataQuality, FloatArray, JobWindow, PodWindow, SignalBlock
from bottleneck_operator.telemetry.fetch.store import MODE_PREFIX, Pod, PodKey, Store, WindowRequest
from bottleneck_operator.telemetry.plan import catalog as cat
from bottleneck_operator.telemetry.plan.grid import Chunk, Grid, present, scatter, take_many

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
    members = {pod: info for pod, info in store.pods.get(key, {}).items() if present(info.presence, lo, hi)}
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
    signals = take_many(((n, c) for n, c in own.items() if n in cat.ENTRIES), lo, hi, grids)
    if _prefer_kubelet_psi(signals):
        notes.append("pod pressure (PSI) from the kubelet (container_pressure_*), the collector's where it has none")
    co_located = 0
    if not info.node and (ns, pod) in store.hints:
        info = Pod(node=store.hints[(ns, pod)], presence=info.presence, by_prefix=info.by_prefix)
        notes.append("node taken from the collector's or dcgm-exporter's labels (no kube_pod_info node)")
    if info.node:
        node_signals = store.node_signals.get(info.node, {})
        signals.update(take_many(((n, c) for n, c in node_signals.items() if n in SIGNALS), lo, hi, grids))
        signals.update(_cpu_shares(node_signals, lo, hi, grids))
        if not any(SIGNALS[n].family in _NODE_FAMILIES for n in signals):
            notes.append(
                f"no node-exporter series for node {info.node} (node_uname_info join or node_exporter_node_label)"
            )
        co_located = sum(
            1
            for other, chunks in store.on_node.get(info.node, {}).items()
            if other not in job_pods and present(chunks, lo, hi)
        )
    notes.extend(drop_implausible_nvlink(signals))
    gpu_count, model = _gpus(store.gpus.get((ns, pod), {}), lo, hi)
    if gpu_count == 0 and info.node and present(store.unmapped.get(info.node, []), lo, hi):
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


def _cpu_shares(node_signals: dict[str, list[Chunk]], lo: int, hi: int, grids: dict[int, int]) -> dict[str, FloatArray]:
    """node_cpu_{busy,iowait,system}_frac from the per-mode CPU rates: shares of all modes' time."""
    per_mode = ((n.removeprefix(MODE_PREFIX), c) for n, c in node_signals.items() if n.startswith(MODE_PREFIX))
    modes = take_many(per_mode, lo, hi, grids)
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


def _gpus(by_model: dict[str, list[Chunk]], lo: int, hi: int) -> tuple[int, str | None]:
    best_model, best, total = None, 0, np.zeros(max(0, hi - lo + 1))
    for model, chunks in by_model.items():
        counts = np.nan_to_num(scatter(chunks, lo, hi))
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


def attach_instances(store: Store) -> None:
    """Move the instance-keyed series of one segment into ``store.node_signals``.

    Args:
        store: the pass's store; its ``instance_signals`` and ``uname`` are emptied.
    """
    parts: dict[tuple[str, str], list[FloatArray]] = defaultdict(list)
    grids: dict[tuple[str, str], Chunk] = {}
    for instance, node, presence in store.uname:
        signals = store.instance_signals.get(instance)
        if not signals or not len(presence.idx):
            continue
        paired = np.isfinite(presence.val)
        always = bool(paired.all())  # the usual case: the instance is the node's for the whole segment
        lo, hi = int(presence.idx[0]), int(presence.idx[-1])
        for name, chunks in signals.items():
            for chunk in chunks:
                # Answers of one segment share its grid: the presence row then masks the samples as
                # they are; scatter() lines up anything else.
                same = chunk.idx is presence.idx or np.array_equal(chunk.idx, presence.idx)
                values = chunk.val if same else scatter([chunk], lo, hi)
                parts[(node, name)].append(values if always else np.where(paired, values, np.nan))
                grids[(node, name)] = presence
    for (node, name), rows in parts.items():
        how = "sum" if name.startswith(MODE_PREFIX) else cat.MERGE.get(name, "max")
        value = rows[0] if len(rows) == 1 else _combine(rows, how)
        store.node_signals[node][name].append(Chunk(grids[(node, name)].idx, value))
    store.uname.clear()
    store.instance_signals.clear()


def _combine(rows: list[FloatArray], how: str) -> FloatArray:
    """A node's instances at each step: their sum or max; NaN where none has a sample."""
    stacked = np.vstack(rows)
    empty = np.isnan(stacked).all(axis=0)
    combined = np.nansum(stacked, axis=0) if how == "sum" else np.fmax.reduce(stacked, axis=0)
    return np.asarray(np.where(empty, np.nan, combined), dtype=np.float64)


# NVLink 5 (B200): 1.8 TB/s per GPU, both directions together; nothing exceeds it.
NVLINK_MAX_BPS = 1.8e12
# DEV traffic above which PROF fields reading exactly 0 for the whole window cannot be right.
NVLINK_TRAFFIC_BPS = 1e9
PROF_NVLINK = ("nvlink_tx_bps", "nvlink_rx_bps")


def drop_implausible_nvlink(signals: MutableMapping[str, FloatArray]) -> list[str]:
    """Blank implausible NVLink readings of one pod in place; returns notes for data quality.

    Args:
        signals: the pod's signals (``nvlink_total_bps``, ``nvlink_tx_bps``, ``nvlink_rx_bps``).

    Returns:
        One note per kind of implausible reading found (empty when all is plausible).
    """
    notes: list[str] = []
    total = signals.get("nvlink_total_bps")
    traffic = False
    if total is not None:
        finite = total[np.isfinite(total)]
        traffic = bool(finite.size) and float(np.median(finite)) > NVLINK_TRAFFIC_BPS
        too_high = np.isfinite(total) & (total > NVLINK_MAX_BPS)
        if too_high.any():
            # A unit mismatch scales every reading: the low ones are no more right than the high ones.
            signals["nvlink_total_bps"] = np.full_like(total, np.nan)
            notes.append(
                "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL above any NVLink's capacity (unit mismatch?): treated as missing"
            )
    for name in PROF_NVLINK:
        values = signals.get(name)
        if values is None:
            continue
        finite = values[np.isfinite(values)]
        too_high = np.isfinite(values) & (values > NVLINK_MAX_BPS)
        if too_high.any():
            signals[name] = np.full_like(values, np.nan)
            notes.append(f"{name} above any NVLink's capacity: treated as missing")
        elif traffic and finite.size and not finite.any():
            del signals[name]
            notes.append("NVLink PROF fields read 0 while the DEV counter shows traffic (firmware): treated as missing")
    return list(dict.fromkeys(notes))
