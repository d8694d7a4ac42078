"""Copying many pods' signal series into one (pods x signals x time) array, fast.

Feature extraction handles thousands of job windows per second, each with a few pods of ~50 series of
~30 samples: per-array numpy calls would cost more than the arithmetic. A pod whose signals come as a
:class:`~bottleneck_operator.contract.window.SignalBlock` is one array already; the blocks of all pods
are stacked once per window length, and one ``np.take`` over their rows writes the whole array.

The array is laid out signal-major: each signal's (pods x time) plane is contiguous, so the derived
series, computed plane by plane, read and write whole blocks of memory rather than strided rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from bottleneck_operator.analysis.features.hardware import PodCapacities, spec_for
from bottleneck_operator.contract.signals import SIGNAL_NAMES
from bottleneck_operator.contract.window import FloatArray, PodWindow, SignalBlock

_RAW = {name: i for i, name in enumerate(SIGNAL_NAMES)}


_N_CAPS = len(PodCapacities._fields)


def gather(pods: Sequence[PodWindow], lengths: Sequence[int], t: int) -> tuple[FloatArray, PodCapacities]:
    """Every pod's signals in one array, plus its GPUs' count and capacities.

    Args:
        pods: the pods of all windows, in order.
        lengths: the length of each pod's window (its series are read up to that length).
        t: the longest window; shorter ones are padded with NaN.

    Returns:
        (raw of shape (pods, len(SIGNAL_NAMES), t) with NaN where a signal is missing, a view of a
        signal-major array: ``raw[:, j, :]`` is contiguous;
        the pods' GPU counts and capacities).
    """
    n, n_sig = len(pods), len(SIGNAL_NAMES)
    store = np.empty((n_sig, n, t))
    groups, odd, scalars = _group(pods, lengths, t)
    source, rows = _stack(groups, n * n_sig, n, t)
    # Row j * n + i of the store (signal j of pod i) is source row rows[j * n + i]: one C loop of row
    # copies (``mode="clip"`` writes straight into ``store``, unbuffered; every index is in range), where
    # an indexed assignment would cost a scattered write with per-row overhead, and every row without
    # a series reads the NaN row, so the store needs no fill of its own.
    np.take(source, rows, axis=0, out=store.reshape(n_sig * n, t), mode="clip")
    raw = store.transpose(1, 0, 2)
    for i in odd:
        _copy_pod(raw[i], pods[i].signals, t)
    # a flat list of floats converts many times faster than a list of tuples
    scal = np.array(scalars, dtype=np.float64).reshape(n, _N_CAPS)
    return raw, PodCapacities(*(scal[:, k : k + 1] for k in range(_N_CAPS)))


# window length -> (each pod's signal rows, the pods' indices, their (signals x length) blocks in order)
_Groups = dict[int, tuple[list[npt.NDArray[np.intp]], list[int], list[FloatArray]]]


def _stack(groups: _Groups, size: int, n: int, t: int) -> tuple[FloatArray, npt.NDArray[np.intp]]:
    """Every group's blocks stacked into (series + 1, t) rows padded with NaN, the last all NaN, and for
    each of ``size`` store rows (signal j of pod i at j * n + i) the source row it reads."""
    sizes = {
        m: np.fromiter(map(len, layouts), dtype=np.intp, count=len(layouts)) for m, (layouts, _, _) in groups.items()
    }
    total = sum(int(s.sum()) for s in sizes.values())
    source = np.empty((total + 1, t))
    source[total] = np.nan
    rows = np.full(size, total, dtype=np.intp)
    start = 0
    for m, (layouts, owners, blocks) in groups.items():
        stop = start + int(sizes[m].sum())
        np.concatenate(blocks, axis=0, out=source[start:stop, :m])
        source[start:stop, m:] = np.nan
        # signal j of pod i is store row j * n + i
        at = np.concatenate(layouts) * n + np.repeat(np.asarray(owners, dtype=np.intp), sizes[m])
        rows[at] = np.arange(start, stop, dtype=np.intp)
        start = stop
    return source, rows


def _group(pods: Sequence[PodWindow], lengths: Sequence[int], t: int) -> tuple[_Groups, list[int], list[float]]:
    """The pods' blocks grouped by their window's length, the pods to copy one by one, and each pod's
    GPU count and capacities, in :class:`PodCapacities`' order, one after the other.

    A group keeps each pod's layout (signal rows) and index, turned into store rows in one step. A pod
    with a signal outside the catalogue, or a series not of its window's length, is copied alone.
    """
    scalars: list[float] = []
    specs: dict[str | None, tuple[float, float, float, float]] = {}
    layouts: dict[tuple[str, ...], npt.NDArray[np.intp] | None] = {}
    odd: list[int] = []
    groups: _Groups = {}
    for i, pod in enumerate(pods):
        sig = pod.signals
        block: FloatArray | None
        if isinstance(sig, SignalBlock):
            keys, block = sig.names, sig.array
        else:
            keys, block = tuple(sig), _block(sig.values())
        layout = layouts.get(keys, _UNSEEN)
        if layout is _UNSEEN:  # pods of one batch mostly share a layout: map it to rows once
            known = all(k in _RAW for k in keys)
            layout = layouts[keys] = np.array([_RAW[k] for k in keys], dtype=np.intp) if known else None
        m = min(lengths[i], t)
        if layout is None or block is None or block.shape[1] != m:
            odd.append(i)
        elif len(layout):  # a pod without signals stays NaN
            group = groups.get(m)
            if group is None:
                group = groups[m] = ([], [], [])
            group[0].append(layout)
            group[1].append(i)
            group[2].append(block)
        caps = specs.get(pod.gpu_model)
        if caps is None:
            spec = spec_for(pod.gpu_model)
            caps = specs[pod.gpu_model] = (spec.pcie_bps, spec.nvlink_bps, spec.tdp_w, spec.max_clock_mhz)
        scalars.append(float(pod.gpu_count))
        scalars.extend(caps)
    return groups, odd, scalars


_UNSEEN = np.empty(0, dtype=np.intp)  # a layout not mapped yet (None: one that cannot be)


def _block(series: Iterable[FloatArray]) -> FloatArray | None:
    """A mapping's series as one (signals x time) block, or None when they differ in length."""
    try:
        block = np.array(list(series), dtype=np.float64)
    except (TypeError, ValueError):  # series of different lengths
        return None
    return block if block.ndim == 2 else None


def _copy_pod(row: FloatArray, signals: Mapping[str, FloatArray], t: int) -> None:
    for name, values in signals.items():
        j = _RAW.get(name)
        if j is not None:
            k = min(t, len(values))
            row[j, :k] = values[:k]
