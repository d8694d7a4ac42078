"""Copying many pods' signal series into one (pods x signals x time) array, fast.

Feature extraction handles thousands of job windows per second, each with a few pods of ~50 series of
~30 samples: per-array numpy calls would cost more than the arithmetic. A pod whose signals come as a
:class:`~bottleneck_operator.contract.window.SignalBlock` is one array already; the blocks (or the
series of plain mappings) of all pods are joined once per window length and written with one indexed
assignment.

The array is laid out signal-major: each signal's (pods x time) plane is contiguous, so the derived
series, computed plane by plane, read and write whole blocks of memory rather than strided rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import attrgetter

import numpy as np
import numpy.typing as npt

from bottleneck_operator.analysis.hardware import spec_for
from bottleneck_operator.contract.signals import SIGNAL_NAMES
from bottleneck_operator.contract.window import FloatArray, PodWindow, SignalBlock

_RAW = {name: i for i, name in enumerate(SIGNAL_NAMES)}


_F8 = np.dtype(np.float64)
_DTYPE = attrgetter("dtype")


def _join(arrays: list[FloatArray]) -> FloatArray:
    """The arrays' values end to end, as one flat float64 array.

    Joining the raw buffers of contiguous float64 arrays costs a fraction of ``np.concatenate``'s
    per-array overhead, which dominates for tens of thousands of 30-sample series; any other dtype or
    layout goes through ``np.concatenate``.
    """
    if arrays and set(map(_DTYPE, arrays)) == {_F8}:
        try:
            return np.frombuffer(b"".join(arrays), dtype=np.float64)  # type: ignore[arg-type]
        except (BufferError, TypeError, ValueError):  # a non-contiguous view
            pass
    return np.concatenate([np.ravel(a) for a in arrays]) if arrays else np.empty(0)


def gather(
    pods: Sequence[PodWindow], lengths: Sequence[int], t: int
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Every pod's signals in one array, plus its GPU count and link capacities.

    Args:
        pods: the pods of all windows, in order.
        lengths: the length of each pod's window (its series are read up to that length).
        t: the longest window; shorter ones are padded with NaN.

    Returns:
        (raw of shape (pods, len(SIGNAL_NAMES), t) with NaN where a signal is missing, a view of a
        signal-major array: ``raw[:, j, :]`` is contiguous;
        GPU count, PCIe bytes/s and NVLink bytes/s of each pod, each of shape (pods, 1)).
    """
    n, n_sig = len(pods), len(SIGNAL_NAMES)
    # Left uninitialised: every row is either copied from a series or set to NaN below, so the
    # (signals x pods x time) array is written once instead of filled with NaN and then overwritten.
    store = np.empty((n_sig, n, t))
    flat = store.reshape(n_sig * n, t)
    raw = store.transpose(1, 0, 2)
    groups, odd, scalars = _group(pods, lengths, t)
    copied = np.zeros(len(flat), dtype=bool)
    for m, (pod_layouts, owners, arrays) in groups.items():
        sizes = np.fromiter(map(len, pod_layouts), dtype=np.intp, count=len(pod_layouts))
        block = _join(arrays)
        if len(block) != m * int(sizes.sum()):  # a series of another length than its window: pod by pod
            copied[:] = False
            odd = list(range(n))
            break
        # signal j of pod i is flat row j * n + i
        idx = np.concatenate(pod_layouts) * n + np.repeat(np.asarray(owners, dtype=np.intp), sizes)
        flat[idx, :m] = block.reshape(len(idx), m)
        if m < t:
            flat[idx, m:] = np.nan
        copied[idx] = True
    flat[~copied] = np.nan
    for i in odd:
        raw[i] = np.nan
        _copy_pod(raw[i], pods[i].signals, t)
    scal = np.asarray(scalars, dtype=np.float64).reshape(n, 3)
    return raw, scal[:, 0:1], scal[:, 1:2], scal[:, 2:3]


# window length -> (each pod's signal rows, the pods' indices, their blocks or series in order)
_Groups = dict[int, tuple[list[npt.NDArray[np.intp]], list[int], list[FloatArray]]]


def _group(
    pods: Sequence[PodWindow], lengths: Sequence[int], t: int
) -> tuple[_Groups, list[int], list[tuple[float, float, float]]]:
    """The pods' series grouped by their window's length, the pods to copy one by one, and each pod's
    (GPU count, PCIe bytes/s, NVLink bytes/s).

    Each group is copied by one C-level assignment; a group keeps each pod's layout (signal rows) and
    index, turned into flat row numbers in one step.
    """
    scalars: list[tuple[float, float, float]] = []
    specs: dict[str | None, tuple[float, float]] = {}
    layouts: dict[tuple[str, ...], npt.NDArray[np.intp] | None] = {}
    odd: list[int] = []  # pods with a signal outside the catalogue, or a block not of its window's length: one by one
    groups: _Groups = {}
    for i, pod in enumerate(pods):
        sig = pod.signals
        block = sig.array if isinstance(sig, SignalBlock) else None
        keys = sig.names if block is not None else tuple(sig)  # type: ignore[attr-defined]
        layout = layouts.get(keys, _UNSEEN)
        if layout is _UNSEEN:  # pods of one batch mostly share a layout: map it to rows once
            known = all(k in _RAW for k in keys)
            layout = layouts[keys] = np.array([_RAW[k] for k in keys], dtype=np.intp) if known else None
        m = min(lengths[i], t)
        if layout is not None and (block is None or block.shape[1] == m):
            group = groups.get(m)
            if group is None:
                group = groups[m] = ([], [], [])
            group[0].append(layout)
            group[1].append(i)
            if block is not None:
                group[2].append(block)
            else:
                group[2].extend(sig.values())
        else:
            odd.append(i)
        caps = specs.get(pod.gpu_model)
        if caps is None:
            spec = spec_for(pod.gpu_model)
            caps = specs[pod.gpu_model] = (spec.pcie_bps, spec.nvlink_bps)
        scalars.append((float(pod.gpu_count), *caps))
    return groups, odd, scalars


_UNSEEN = np.empty(0, dtype=np.intp)  # a layout not mapped yet (None: one that cannot be)


def _copy_pod(row: FloatArray, signals: Mapping[str, FloatArray], t: int) -> None:
    for name, values in signals.items():
        j = _RAW.get(name)
        if j is not None:
            k = min(t, len(values))
            row[j, :k] = values[:k]
