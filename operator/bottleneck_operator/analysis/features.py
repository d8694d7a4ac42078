"""Features of a job window that transfer across hardware, computed for many windows at once.

Every pod's signals are first turned into *derived series* that mean the same on any cluster:
fractions of a known capacity (PCIe and NVLink against the GPU's datasheet link, CPU against the
pod's limit and the node's cores, memory against the limit), pressure-stall shares, ratios between
signals (network vs disk reads, receive vs transmit symmetry, ``GPU_UTIL`` minus SM/graphics-engine
activity — the gap that NCCL and tiny kernels open, TELEMETRY.md "Reading the profiling metrics") and
a few rates on a log scale. Each series is summarised by robust statistics over time (mean,
p10/p50/p90, burstiness = std/mean); pods are then aggregated into job features (mean over pods,
plus max/min of the means to expose stragglers and one busy pod).

A signal that no exporter provided stays NaN all the way through: the classifier
(HistGradientBoostingClassifier) routes NaN natively, and the model is trained with whole families
dropped, as real clusters drop them.

Everything is vectorised over (pods x series x time) so that features plus prediction run at
thousands of job windows per second on one core.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from bottleneck_operator.analysis.gather import gather
from bottleneck_operator.analysis.hardware import spec_for
from bottleneck_operator.contract.signals import SIGNAL_NAMES
from bottleneck_operator.contract.window import FloatArray, JobWindow

# --- derived per-pod series (name -> meaning). Order is the feature schema: append only.
SERIES: tuple[str, ...] = (
    "act",  # best GPU activity: sm_active > gr_engine_active > gpu_util
    "gpu_util",
    "gr_engine_active",
    "sm_active",
    "sm_occupancy",
    "tensor_active",
    "dram_active",
    "mem_copy_util",
    "fb_used_frac",
    "util_gap",  # gpu_util - (sm_active or gr_engine_active): kernels running but SMs idle (NCCL, tiny kernels)
    "tensor_per_act",  # tensor pipe share while the GPU is active
    "dram_minus_tensor",  # bandwidth-bound kernels: DRAM busy, tensor pipes not
    "pcie_rx_frac",  # host -> device vs link capacity
    "pcie_tx_frac",
    "nvlink_frac",  # NVLink bytes vs the GPU's NVLink capacity
    "cpu_per_gpu",  # cores used per GPU
    "cpu_limit_frac",  # cores used / CPU limit
    "cpu_node_frac",  # cores used / node CPUs
    "job_share_node_cpu",  # this pod's share of the node's busy CPU (low: neighbours make the noise)
    "cpu_throttled_frac",
    "mem_limit_frac",
    "node_cpu_busy_frac",
    "node_cpu_iowait_frac",
    "node_cpu_system_frac",
    "node_disk_busy_frac",
    "node_mem_used_frac",
    "node_swap_used_frac",
    "log_majfault",
    "node_psi_cpu_some",
    "node_psi_io_some",
    "node_psi_io_full",
    "node_psi_mem_some",
    "node_psi_mem_full",
    "net_rx_share",  # network receive / (network receive + block reads): remote storage reads
    "net_symmetry",  # min(rx, tx) / max(rx, tx): ~1 for all-reduce traffic, ~0 for storage reads
    "log_net_per_gpu",
    "log_read_per_gpu",
    "read_rel_peak",  # reads / the window's own peak: a flat plateau near 1 suggests a saturated source
    "net_rel_peak",
    "sc_psi_cpu_some",
    "sc_psi_io_some",
    "sc_psi_io_full",
    "sc_psi_mem_some",
    "sc_psi_mem_full",
    "sc_cpu_limit_frac",
    "sc_throttled_frac",
    "sc_log_majfault",
    "sc_iowait_procs_share",
    "pcie_rel_peak",  # host-to-device bytes / the window's own peak: a saturated link runs flat at its ceiling
    "pcie_per_act",  # host-to-device link share per unit of GPU activity: bytes the GPUs wait for
    "power_rel_peak",  # power / the window's own peak: dips mark stalls even without PROF fields
    # iowait over the node's CPU time not spent busy: waiting on storage while cores are free to run
    # (remote storage through FUSE/NFS sits in iowait while the CPU is not saturated; a CPU-bound node
    # has no idle time left to wait in)
    "iowait_of_idle",
)
STATS: tuple[str, ...] = ("mean", "p10", "p50", "p90", "cv")
QUANTILES: tuple[float, ...] = (0.1, 0.5, 0.9)
# Series whose per-pod means also enter as max and min across pods (stragglers, one hot pod).
POD_SPREAD: tuple[str, ...] = (
    "act",
    "util_gap",
    "pcie_rx_frac",
    "nvlink_frac",
    "cpu_limit_frac",
    "cpu_throttled_frac",
    "node_cpu_iowait_frac",
    "node_psi_io_some",
    "node_psi_mem_some",
    "log_net_per_gpu",
    "mem_limit_frac",
)
# Correlations over time between GPU activity and an input signal: a stage that stalls the GPU moves
# against it.
CORRELATIONS: tuple[str, ...] = (
    "pcie_rx_frac",
    "power_rel_peak",
    "log_net_per_gpu",
    "log_read_per_gpu",
    "cpu_per_gpu",
    "node_cpu_iowait_frac",
)
EXTRA: tuple[str, ...] = (
    "act_low_share",  # share of samples with GPU activity < 0.3
    "act_pod_spread",  # max - min of the pods' mean activity
    "n_pods",
    "n_nodes",
    "gpus_per_pod",
    "log_gpus",
    "co_located_pods",
    "has_nvlink",
)

FEATURE_NAMES: tuple[str, ...] = (
    *(f"{s}.{st}" for s in SERIES for st in STATS),
    *(f"{s}.mean.{agg}" for s in POD_SPREAD for agg in ("podmax", "podmin")),
    *(f"corr.act.{s}" for s in CORRELATIONS),
    *EXTRA,
)
FEATURE_INDEX: dict[str, int] = {n: i for i, n in enumerate(FEATURE_NAMES)}
N_FEATURES = len(FEATURE_NAMES)


def feature_schema_hash() -> str:
    """A short hash of the feature names: a model trained on another schema must not be loaded."""
    return hashlib.sha256("\n".join(FEATURE_NAMES).encode()).hexdigest()[:16]


_RAW = {name: i for i, name in enumerate(SIGNAL_NAMES)}
_S = {name: i for i, name in enumerate(SERIES)}


def _raw(r: FloatArray, name: str) -> FloatArray:
    return r[:, _RAW[name], :]


def _coalesce(*arrays: FloatArray) -> FloatArray:
    """First non-NaN value per element, in argument order."""
    out = arrays[0].copy()
    for a in arrays[1:]:
        mask = np.isnan(out)
        out[mask] = a[mask]
    return out


def _div(a: FloatArray, b: FloatArray | float) -> FloatArray:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.divide(a, b)
    out[~np.isfinite(out)] = np.nan
    return np.asarray(out, dtype=np.float64)


def _nan_sum(a: FloatArray, b: FloatArray) -> FloatArray:
    """a + b treating NaN as 0 unless both are NaN."""
    both = np.isnan(a) & np.isnan(b)
    out = np.nan_to_num(a) + np.nan_to_num(b)
    out[both] = np.nan
    return out


def _rel_peak(x: FloatArray) -> FloatArray:
    """Each sample over its pod's peak in the window (NaN when the pod has no positive sample)."""
    with np.errstate(invalid="ignore"):
        peak = np.where(np.isnan(x), -np.inf, x).max(axis=1, keepdims=True)
    peak[~np.isfinite(peak) | (peak <= 0)] = np.nan
    return _div(x, peak)


def _derived(raw: FloatArray, gpus: FloatArray, pcie: FloatArray, nvlink: FloatArray) -> FloatArray:
    """Derived series for every pod: shape (pods, len(SERIES), T)."""
    p, _, t = raw.shape
    d = np.full((p, len(SERIES), t), np.nan)

    def g(name: str) -> FloatArray:
        return _raw(raw, name)

    gpu_util, gr, sm = g("gpu_util"), g("gr_engine_active"), g("sm_active")
    act = _coalesce(sm, gr, gpu_util)
    tensor, dram = g("tensor_active"), g("dram_active")
    cols: dict[str, FloatArray] = {
        "act": act,
        "gpu_util": gpu_util,
        "gr_engine_active": gr,
        "sm_active": sm,
        "sm_occupancy": g("sm_occupancy"),
        "tensor_active": tensor,
        "dram_active": dram,
        "mem_copy_util": g("mem_copy_util"),
        "fb_used_frac": g("fb_used_frac"),
        "util_gap": gpu_util - _coalesce(sm, gr),
        "tensor_per_act": _div(tensor, np.maximum(act, 0.02)),
        "dram_minus_tensor": dram - tensor,
        "pcie_rx_frac": _div(g("pcie_rx_bps"), pcie),
        "pcie_tx_frac": _div(g("pcie_tx_bps"), pcie),
    }
    nv_prof = _nan_sum(g("nvlink_tx_bps"), g("nvlink_rx_bps"))
    nv_bytes = _coalesce(nv_prof, g("nvlink_total_bps"))
    cols["nvlink_frac"] = _div(nv_bytes, np.where(nvlink > 0, nvlink, np.nan))
    cpu, limit, node_cpus = g("cpu_cores"), g("cpu_limit_cores"), g("node_cpus")
    cols["cpu_per_gpu"] = _div(cpu, np.maximum(gpus, 1.0))
    cols["cpu_limit_frac"] = _div(cpu, limit)
    node_frac = _div(cpu, node_cpus)
    cols["cpu_node_frac"] = node_frac
    busy = g("node_cpu_busy_frac")
    cols["job_share_node_cpu"] = np.clip(_div(node_frac, np.maximum(busy, 0.01)), 0.0, 1.5)
    cols["cpu_throttled_frac"] = g("cpu_throttled_frac")
    cols["mem_limit_frac"] = _div(g("mem_working_set_bytes"), g("mem_limit_bytes"))
    for name in ("node_cpu_busy_frac", "node_cpu_iowait_frac", "node_cpu_system_frac", "node_disk_busy_frac"):
        cols[name] = g(name)
    cols["node_mem_used_frac"] = 1.0 - g("node_mem_avail_frac")
    cols["node_swap_used_frac"] = g("node_swap_used_frac")
    cols["log_majfault"] = np.log10(1.0 + np.maximum(g("node_majfault_ps"), 0.0))
    for name in ("cpu_some", "io_some", "io_full", "mem_some", "mem_full"):
        cols[f"node_psi_{name}"] = g(f"node_psi_{name}")
        cols[f"sc_psi_{name}"] = g(f"sc_psi_{name}")
    rx, tx = g("node_net_rx_bps"), g("node_net_tx_bps")
    reads = np.fmax(np.fmax(g("node_disk_read_bps"), g("fs_read_bps")), g("sc_io_read_bps"))
    cols["net_rx_share"] = _div(rx, _nan_sum(rx, reads) + 1.0)
    cols["net_symmetry"] = _div(np.fmin(rx, tx), np.fmax(rx, tx) + 1.0)
    per_gpu = np.maximum(gpus, 1.0)
    cols["log_net_per_gpu"] = np.log10(1.0 + np.maximum(_nan_sum(rx, tx), 0.0) / per_gpu)
    cols["log_read_per_gpu"] = np.log10(1.0 + np.maximum(reads, 0.0) / per_gpu)
    cols["read_rel_peak"] = _rel_peak(reads)
    cols["net_rel_peak"] = _rel_peak(rx)
    cols["sc_cpu_limit_frac"] = _div(g("sc_cpu_cores"), limit)
    cols["sc_throttled_frac"] = g("sc_throttled_frac")
    cols["sc_log_majfault"] = np.log10(1.0 + np.maximum(g("sc_majfault_ps"), 0.0))
    running, waiting = g("sc_procs_running"), g("sc_procs_iowait")
    cols["sc_iowait_procs_share"] = _div(waiting, running + waiting)
    cols["pcie_rel_peak"] = _rel_peak(g("pcie_rx_bps"))
    cols["pcie_per_act"] = _div(cols["pcie_rx_frac"], np.maximum(act, 0.05))
    cols["power_rel_peak"] = _rel_peak(g("power_w"))
    cols["iowait_of_idle"] = np.clip(_div(g("node_cpu_iowait_frac"), np.maximum(1.0 - busy, 0.02)), 0.0, 1.0)
    for name, values in cols.items():
        d[:, _S[name], :] = values
    return d


def _stats(d: FloatArray) -> FloatArray:
    """Per pod and series: mean, p10, p50, p90, cv over time; shape (pods, series, len(STATS))."""
    p, s, t = d.shape
    ordered = np.sort(d, axis=2)  # NaN sorts last, so the valid samples are the first n
    n = t - np.count_nonzero(np.isnan(ordered), axis=2)
    # NaN -> 0 in place: the quantiles below read only the first n (valid) samples of each row
    filled = np.nan_to_num(ordered, copy=False, nan=0.0, posinf=np.inf, neginf=-np.inf)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = filled.sum(axis=2) / n
        # einsum sums the squares without a temporary (pods x series x time) array
        var = np.maximum(np.einsum("ijk,ijk->ij", filled, filled) / n - mean * mean, 0.0)
        cv = np.minimum(np.sqrt(var) / np.maximum(np.abs(mean), 1e-3), 10.0)
    out = np.empty((p, s, len(STATS)))
    out[..., 0] = mean
    # Quantiles by nearest rank among the valid samples: one flat gather per quantile.
    last = np.maximum(n - 1, 0).ravel()
    flat = filled.reshape(p * s, t)
    rows = np.arange(p * s)
    for k, q in enumerate(QUANTILES):
        out[..., 1 + k] = flat[rows, np.rint(q * last).astype(np.intp)].reshape(p, s)
    out[..., 4] = cv
    out[n == 0] = np.nan
    return out


def _corr(a: FloatArray, b: FloatArray) -> FloatArray:
    """Pearson correlation over time per pod, NaN-aware; NaN when either side is flat or missing."""
    valid = ~(np.isnan(a) | np.isnan(b))
    n = valid.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        am = np.where(valid, a, 0.0).sum(axis=1) / n
        bm = np.where(valid, b, 0.0).sum(axis=1) / n
        da = np.where(valid, a - am[:, None], 0.0)
        db = np.where(valid, b - bm[:, None], 0.0)
        cov = (da * db).sum(axis=1)
        sa = np.sqrt((da * da).sum(axis=1))
        sb = np.sqrt((db * db).sum(axis=1))
        r = cov / (sa * sb)
    r[(n < 4) | (sa < 1e-9) | (sb < 1e-9)] = np.nan
    return np.asarray(r, dtype=np.float64)


def pod_features(windows: Sequence[JobWindow]) -> tuple[FloatArray, FloatArray, list[int]]:
    """Per-pod statistics and correlations for every pod of every window.

    Args:
        windows: job windows (any lengths: shorter ones are padded with NaN).

    Returns:
        (stats of shape (pods, len(SERIES), len(STATS)), correlations plus the low-activity share
        (pods, len(CORRELATIONS) + 1),
        offsets: index of each window's first pod; a window without pods has an empty slice).
    """
    pods = [p for w in windows for p in w.pods]
    offsets: list[int] = []
    k = 0
    for w in windows:
        offsets.append(k)
        k += len(w.pods)
    if not pods:
        return np.empty((0, len(SERIES), len(STATS))), np.empty((0, len(CORRELATIONS) + 1)), offsets
    lengths = [len(w.timestamps) for w in windows for _ in w.pods]
    t = max(1, max(lengths))
    raw, gpus, pcie, nvlink = gather(pods, lengths, t)
    d = _derived(raw, gpus, pcie, nvlink)
    stats = _stats(d)
    act = d[:, _S["act"], :]
    corr = np.stack([_corr(act, d[:, _S[s], :]) for s in CORRELATIONS], axis=1)
    low = act < 0.3
    n_act = (~np.isnan(act)).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        low_share = low.sum(axis=1) / n_act
    # The low-activity share travels as one more column after the correlations (see EXTRA).
    return stats, np.column_stack([corr, low_share]), offsets


def _segment_mean(x: FloatArray, starts: npt.NDArray[np.intp]) -> FloatArray:
    """NaN-ignoring mean of consecutive row segments beginning at ``starts`` (non-empty segments)."""
    valid = ~np.isnan(x)
    total = np.add.reduceat(np.where(valid, x, 0.0), starts, axis=0)
    count = np.add.reduceat(valid.astype(np.float64), starts, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(total / count, dtype=np.float64)


_SPREAD_IDX = [_S[s] for s in POD_SPREAD]


def features_from_pods(
    windows: Sequence[JobWindow], stats: FloatArray, extra: FloatArray, offsets: Sequence[int]
) -> FloatArray:
    """Job-level feature rows from per-pod statistics (see :func:`pod_features`)."""
    x = np.full((len(windows), N_FEATURES), np.nan)
    rows = np.array([i for i, w in enumerate(windows) if w.pods], dtype=np.intp)
    if len(rows) == 0:
        return x
    starts = np.asarray(offsets, dtype=np.intp)[rows]
    n_stat = len(SERIES) * len(STATS)
    n_spread = 2 * len(POD_SPREAD)
    n_corr = len(CORRELATIONS)
    flat = stats.reshape(len(stats), -1)
    x[rows, :n_stat] = _segment_mean(flat, starts)
    means = stats[:, _SPREAD_IDX, 0]
    podmax = np.fmax.reduceat(means, starts, axis=0)
    podmin = np.fmin.reduceat(means, starts, axis=0)
    x[rows, n_stat : n_stat + n_spread] = np.stack([podmax, podmin], axis=2).reshape(len(rows), -1)
    base = n_stat + n_spread
    x[rows, base : base + n_corr + 1] = _segment_mean(extra, starts)
    spread = np.fmax.reduceat(stats[:, _S["act"], 0], starts) - np.fmin.reduceat(stats[:, _S["act"], 0], starts)
    # Per-pod facts summed per window with reduceat, not a Python loop per window.
    pods = [p for i in rows for p in windows[i].pods]
    has_nvlink: dict[str | None, float] = {}
    for p in pods:
        if p.gpu_model not in has_nvlink:
            has_nvlink[p.gpu_model] = float(spec_for(p.gpu_model).nvlink_bps > 0)
    per_pod = np.array([(p.gpu_count, p.co_located_pods, has_nvlink[p.gpu_model]) for p in pods], dtype=np.float64)
    local = np.concatenate([[0], np.cumsum([len(windows[i].pods) for i in rows])[:-1]]).astype(np.intp)
    n_pods = np.add.reduceat(np.ones(len(pods)), local)
    gpus = np.add.reduceat(per_pod[:, 0], local)
    nodes = [max(len({p.node for p in windows[i].pods if p.node}), 1) for i in rows]
    meta = np.column_stack(
        (
            n_pods,
            nodes,
            gpus / n_pods,
            np.log2(np.maximum(gpus, 1.0)),
            np.add.reduceat(per_pod[:, 1], local) / n_pods,
            np.maximum.reduceat(per_pod[:, 2], local),
        )
    )
    x[rows, base + n_corr + 1] = np.where(meta[:, 0] > 1, spread, 0.0)
    x[rows, base + n_corr + 2 :] = meta
    return x


def extract_features(windows: Sequence[JobWindow]) -> FloatArray:
    """The feature matrix of many job windows, one row each, columns as :data:`FEATURE_NAMES`.

    Args:
        windows: job windows; a window without pods gives a row of NaN.

    Returns:
        Array of shape (len(windows), len(FEATURE_NAMES)).
    """
    stats, extra, offsets = pod_features(windows)
    return features_from_pods(windows, stats, extra, offsets)


def single_pod_windows(window: JobWindow) -> list[JobWindow]:
    """One window per pod, to give each pod of a multi-pod job its own verdict."""
    return [
        JobWindow(
            namespace=window.namespace,
            job=window.job,
            start=window.start,
            end=window.end,
            step=window.step,
            timestamps=window.timestamps,
            pods=(p,),
            quality=window.quality,
        )
        for p in window.pods
    ]


def value(x: FloatArray, name: str) -> float | None:
    """One named feature of a feature row, None when missing."""
    v = float(x[FEATURE_INDEX[name]])
    return None if np.isnan(v) else v
