"""Features of a job window that transfer across hardware, computed for many windows at once.

Every pod's signals are first turned into the derived series of :mod:`.derived`, which mean the same
on any cluster. Each series is summarised by robust statistics over time (mean, p10/p50/p90,
burstiness = std/mean); pods are then aggregated into job features (mean over pods, plus max/min of
the means to expose stragglers and one busy pod).

A signal that no exporter provided stays NaN all the way through: the classifier
(HistGradientBoostingClassifier) routes NaN natively, and the model is trained with whole families
dropped, as real clusters drop them.

Everything is vectorised over (pods x series x time) so that features plus prediction run at
thousands of job windows per second on one core.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from operator import attrgetter

import numpy as np
import numpy.typing as npt

from bottleneck_operator.analysis.features.derived import derived_columns
from bottleneck_operator.analysis.features.gather import gather
from bottleneck_operator.analysis.features.hardware import spec_for
from bottleneck_operator.analysis.features.series_names import (
    BANDED,
    SERIES,
    SERIES_INDEX,
    Extra,
    FeatureKey,
    Series,
    Stat,
)
from bottleneck_operator.analysis.features.stats import (
    nan_segment_mean,
    quantile_ranks,
    row_means,
    row_peaks,
    summarise_rows,
)
from bottleneck_operator.contract.window import FloatArray, JobWindow

STATS: tuple[str, ...] = tuple(s.value for s in Stat)
QUANTILES: tuple[float, ...] = (0.1, 0.5, 0.9)
# Series whose per-pod means also enter as max and min across pods (stragglers, one hot pod).
POD_SPREAD: tuple[str, ...] = (
    Series.ACT,
    Series.UTIL_GAP,
    Series.PCIE_RX_FRAC,
    Series.NVLINK_FRAC,
    Series.CPU_LIMIT_FRAC,
    Series.CPU_THROTTLED_FRAC,
    Series.NODE_CPU_IOWAIT_FRAC,
    Series.NODE_PSI_IO_SOME,
    Series.NODE_PSI_MEM_SOME,
    Series.LOG_NET_PER_GPU,
    Series.MEM_LIMIT_FRAC,
    Series.CLOCK_REL_PEAK,
)
EXTRA: tuple[str, ...] = tuple(e.value for e in Extra)

# Series that describe the node or the job's size rather than what the job waits for: node-wide CPU
# busy and pressure come from every process on the node (a neighbour saturating it says nothing of
# the job's own loader), and cores per GPU is a habit of the workload. They stay in the row for the
# evidence and the report; the classifier never splits on them (see ``training.fit_model``).
CONTEXT_SERIES: tuple[str, ...] = (
    Series.NODE_CPU_BUSY_FRAC,
    Series.NODE_PSI_CPU_SOME,
    Series.JOB_SHARE_NODE_CPU,
    Series.CPU_NODE_FRAC,
    Series.CPU_PER_GPU,
    # the pod's CPU pressure on a busy node is its neighbours' as much as its own: read gated by how
    # far the job's cgroup uses its cores (``cpu_psi_own``)
    Series.SC_PSI_CPU_SOME_BAND,
    # raw GPU activity levels follow each workload's kernel efficiency and the exporter's sampling:
    # the classifier reads how full the pipes are (gpu_any_pipe, sm_fill, tensor_per_act, launch_gap)
    Series.GPU_UTIL,
    Series.GR_ENGINE_ACTIVE,
    Series.SM_OCCUPANCY,
    Series.MEM_COPY_UTIL,  # read as hbm_busy, where DRAM_ACTIVE is missing
    # one-way PCIe bytes are every workload's input copies, in every class: the classifier reads the
    # links from link_busy (one-way copies as far as the GPU waits for them, balanced PCIe and NVLink
    # in full)
    Series.PCIE_RX_FRAC,
    Series.PCIE_TX_FRAC,
    Series.PCIE_PER_ACT,
    Series.PCIE_REL_PEAK,
    Series.PCIE_FABRIC_FRAC,
    Series.PCIE_SYMMETRY,
    # runnable processes per usable core: on a node saturated by neighbours the usable cores shrink to
    # one, and any runnable process reads as a queue (the job's own use reads in cpu_own_sat)
    Series.SC_RUNNABLE_PER_CORE,
    # cAdvisor's working set counts active page cache: a pod reading a cached dataset sits near its
    # limit with no memory stall at all; pressure (PSI, refaults, swap-in) is what stalls it
    Series.MEM_LIMIT_FRAC,
    # a clock in MHz is the part's and its power management's: the classifier reads it against the
    # Job's peers (clock_peer_min) and the pod's own range (clock_rel_peak)
    Series.SM_CLOCK_MHZ,
    *BANDED,  # read by the classifier with their background removed (``<name>_band``)
)
# The statistics a context series enters the row with: the ones the evidence and the report read. The
# classifier never splits on them, so the rest would be sorted and summarised for nothing (a third of
# the series; the quantiles' sort is most of what a series costs).
CONTEXT_STATS: dict[str, tuple[str, ...]] = {
    Series.PCIE_RX_FRAC: (Stat.MEAN, Stat.P90),
    Series.PCIE_TX_FRAC: (Stat.MEAN, Stat.P90),
}


def _stats_of(series: str) -> tuple[str, ...]:
    return CONTEXT_STATS.get(series, ("mean",)) if series in CONTEXT_SERIES else STATS


# Series summarised by their mean alone (no sort, no quantiles).
MEAN_ONLY: frozenset[str] = frozenset(s for s in SERIES if _stats_of(s) == ("mean",))

# (series, statistic) of each series column of the row, in the schema's order
_SERIES_STATS: tuple[tuple[str, str], ...] = tuple((s, st) for s in SERIES for st in _stats_of(s))

FEATURE_NAMES: tuple[str, ...] = (
    *(f"{s}.{st}" for s, st in _SERIES_STATS),
    *(f"{s}.mean.{agg}" for s in POD_SPREAD for agg in ("podmax", "podmin")),
    *EXTRA,
)
# Where each series statistic of the row sits in the per-pod (series x STATS) statistics, flattened.
_STAT_COLUMNS = np.array([SERIES_INDEX[s] * len(STATS) + STATS.index(st) for s, st in _SERIES_STATS])
FEATURE_INDEX: dict[str, int] = {n: i for i, n in enumerate(FEATURE_NAMES)}

CONTEXT_ONLY: tuple[str, ...] = tuple(n for n in FEATURE_NAMES if n.split(".")[0] in CONTEXT_SERIES)
N_FEATURES = len(FEATURE_NAMES)


def feature_schema_hash() -> str:
    """A short hash of the feature names: a model trained on another schema must not be loaded."""
    return hashlib.sha256("\n".join(FEATURE_NAMES).encode()).hexdigest()[:16]


def pod_features(windows: Sequence[JobWindow]) -> tuple[FloatArray, FloatArray, list[int]]:
    """Per-pod statistics for every pod of every window.

    Args:
        windows: job windows (any lengths: shorter ones are padded with NaN).

    Returns:
        (stats of shape (pods, len(SERIES), len(STATS)), NaN where a statistic is not in the row
        (:data:`MEAN_ONLY` series have their mean alone),
        the low-activity share of each pod, shape (pods, 1),
        offsets: index of each window's first pod; a window without pods has an empty slice).
    """
    pods = [p for w in windows for p in w.pods]
    offsets: list[int] = []
    k = 0
    for w in windows:
        offsets.append(k)
        k += len(w.pods)
    if not pods:
        return np.empty((0, len(SERIES), len(STATS))), np.empty((0, 1)), offsets
    lengths = [len(w.timestamps) for w in windows for _ in w.pods]
    t = max(1, max(lengths))
    cols = derived_columns(*gather(pods, lengths, t), scratch=True)
    drop = ~training_mask(cols.__getitem__)
    act = _blanked(cols["act"], drop)
    with np.errstate(invalid="ignore", divide="ignore"):
        low_share = (act < 0.3).sum(axis=1) / (~np.isnan(act)).sum(axis=1)
    stats = _summarise_planes(cols, drop, act, t)
    return stats, low_share[:, None], offsets


def _summarise_planes(cols: dict[str, FloatArray], drop: npt.NDArray[np.bool_], act: FloatArray, t: int) -> FloatArray:
    """The statistics of each derived series' training-loop samples, shape (pods, len(SERIES), len(STATS)).

    Each plane is blanked (NaN where ``drop``, the samples outside the training loop) into a fresh
    array (``act`` comes blanked already) that is sorted in place, so the (pods x series x time) array
    is never built. Planes are taken out of ``cols`` as they are summarised: each is freed as soon as
    it is read, and the next one reuses its memory while it is still in cache.
    """
    stats = np.full((len(drop), len(SERIES), len(STATS)), np.nan)
    ranks = quantile_ranks(t, QUANTILES)
    for name, i in SERIES_INDEX.items():
        plane = cols.pop(name, None)
        if plane is None:
            continue
        rows = act if name == "act" else _blanked(plane, drop)
        if name in MEAN_ONLY:
            stats[:, i, 0] = row_means(rows)
        else:
            summarise_rows(rows, ranks, stats[:, i, :])
    return stats


def _blanked(plane: FloatArray, drop: npt.NDArray[np.bool_]) -> FloatArray:
    """A fresh copy of ``plane`` (broadcast to ``drop``'s shape) with NaN where ``drop`` is set: a copy
    and a masked fill cost less than ``np.where``'s three-way select."""
    out = np.empty(drop.shape)
    np.copyto(out, plane)
    np.copyto(out, np.nan, where=drop)
    return out


IDLE_ACT = 0.15  # GPU activity below this, with every input source quiet, is not the training loop
IDLE_INPUT = 0.15  # an input source below this share of its window peak is quiet
WORKING_SHARE = 0.5  # the loop has started at the first sample with activity this share of the pod's peak
MIN_TRAINING = 4  # fewer training samples than this: keep the whole window


def training_samples(d: FloatArray) -> FloatArray:
    """The derived series with samples outside the training loop blanked (NaN).

    A sample in which the GPU is idle and every input source (host-to-device copies, network receive,
    block reads) is quiet too is start-up, evaluation or a checkpoint write: nothing the training loop
    waits for. Its statistics would describe the job's phase structure, not its bottleneck. A stall
    keeps its source busy (or the GPU), so stalls stay in. Left out too are the samples before the GPU
    first works (at :data:`WORKING_SHARE` of its peak in the window, and at least :data:`IDLE_ACT`): start-up
    stages the dataset, loads the model and initialises NCCL with the GPU idle while the network is
    busy, which reads like an input-bound loop that has not begun.
    """
    keep = training_mask(lambda name: d[:, SERIES_INDEX[name], :])
    if keep.all():
        return d
    return np.where(keep[:, None, :], d, np.nan)


def training_mask(series: Callable[[str], FloatArray]) -> npt.NDArray[np.bool_]:
    """Which samples of each pod belong to the training loop (see :func:`training_samples`).

    Args:
        series: a derived series' (pods x time) plane by name.

    Returns:
        Shape (pods, time), True where a sample is kept.
    """
    act = series("act")
    quiet = act < IDLE_ACT
    for name in ("input_rel_peak", "pcie_rel_peak"):
        quiet &= ~(series(name) >= IDLE_INPUT)
    keep = ~quiet
    with np.errstate(invalid="ignore"):
        working = act >= np.fmax(WORKING_SHARE * row_peaks(act), IDLE_ACT)[:, None]
    # argmax is 0 for a pod whose GPU never works: a loop starved throughout has no start to cut
    keep &= np.arange(act.shape[1]) >= working.argmax(axis=1)[:, None]
    few = keep.sum(axis=1) < MIN_TRAINING
    if few.any():
        keep[few] = True
    return keep


_SPREAD_IDX = [SERIES_INDEX[s] for s in POD_SPREAD]


def features_from_pods(
    windows: Sequence[JobWindow], stats: FloatArray, extra: FloatArray, offsets: Sequence[int]
) -> FloatArray:
    """Job-level feature rows from per-pod statistics (see :func:`pod_features`)."""
    x = np.full((len(windows), N_FEATURES), np.nan)
    rows = np.array([i for i, w in enumerate(windows) if w.pods], dtype=np.intp)
    if len(rows) == 0:
        return x
    starts = np.asarray(offsets, dtype=np.intp)[rows]
    n_stat = len(_STAT_COLUMNS)
    n_spread = 2 * len(POD_SPREAD)
    x[rows, :n_stat] = nan_segment_mean(stats.reshape(len(stats), -1)[:, _STAT_COLUMNS], starts)
    means = stats[:, _SPREAD_IDX, 0]
    podmax = np.fmax.reduceat(means, starts, axis=0)
    podmin = np.fmin.reduceat(means, starts, axis=0)
    x[rows, n_stat : n_stat + n_spread] = np.stack([podmax, podmin], axis=2).reshape(len(rows), -1)
    base = n_stat + n_spread
    x[rows, base] = nan_segment_mean(extra, starts)[:, 0]
    spread = np.fmax.reduceat(stats[:, SERIES_INDEX["act"], 0], starts) - np.fmin.reduceat(
        stats[:, SERIES_INDEX["act"], 0], starts
    )
    # Per-pod facts summed per window with reduceat, not a Python loop per window.
    pods = [p for i in rows for p in windows[i].pods]
    has_nvlink: dict[str | None, float] = {}
    for p in pods:
        if p.gpu_model not in has_nvlink:
            has_nvlink[p.gpu_model] = float(spec_for(p.gpu_model).nvlink_bps > 0)
    per_pod = np.empty((len(pods), 3))
    per_pod[:, 0] = np.fromiter(map(attrgetter("gpu_count"), pods), dtype=np.float64, count=len(pods))
    per_pod[:, 1] = np.fromiter(map(attrgetter("co_located_pods"), pods), dtype=np.float64, count=len(pods))
    per_pod[:, 2] = np.fromiter((has_nvlink[p.gpu_model] for p in pods), dtype=np.float64, count=len(pods))
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
    x[rows, base + 1] = np.where(meta[:, 0] > 1, spread, 0.0)
    clocks = stats[:, SERIES_INDEX["sm_clock_mhz"], 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        peer = np.fmin.reduceat(clocks, starts) / np.fmax.reduceat(clocks, starts)
    # a lone pod has no peers to be slower than
    x[rows, base + 2] = np.where(meta[:, 0] > 1, peer, np.nan)
    x[rows, base + 3 :] = meta
    return x


# Windows featurised at once. Each row depends on its own window only, so any slicing gives the same
# matrix; slices keep the (signals x pods x samples) working arrays tens of megabytes rather than
# hundreds: 2,000 windows featurised 1.27x faster on one core than in one pass, and the throughput
# bench has always measured batches of this size, so the operator's pass now runs as it is measured.
FEATURE_SLICE = 500


def extract_features(windows: Sequence[JobWindow]) -> FloatArray:
    """The feature matrix of many job windows, one row each, columns as :data:`FEATURE_NAMES`.

    Args:
        windows: job windows; a window without pods gives a row of NaN.

    Returns:
        Array of shape (len(windows), len(FEATURE_NAMES)).
    """
    if len(windows) > FEATURE_SLICE:
        return np.concatenate(
            [extract_features(windows[i : i + FEATURE_SLICE]) for i in range(0, len(windows), FEATURE_SLICE)]
        )
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


def value(x: FloatArray, name: FeatureKey) -> float | None:
    """One named feature of a feature row, None when missing."""
    v = float(x[FEATURE_INDEX[name]])
    return None if np.isnan(v) else v
