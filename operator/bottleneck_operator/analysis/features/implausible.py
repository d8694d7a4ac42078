"""Blanking samples that no exporter could have measured, before the derived series are computed.

Pressure shares outside [0, 1] come from counter resets; repeated dcgm-exporter samples come from
scrapes (or a query step) finer than its 30 s collection interval. Both would otherwise weigh in
every statistic of :mod:`.features` as if they were readings. ``GPU_UTIL`` below the graphics
engine's activity is no reading of one interval either: there it is replaced, not blanked
(:func:`util_in_phase`).
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator.contract.signals import SIGNAL_NAMES, Family, signals_of
from bottleneck_operator.contract.window import FloatArray

_RAW = {name: i for i, name in enumerate(SIGNAL_NAMES)}
_DCGM = [
    _RAW[n]
    for f in (Family.DCGM_DEV, Family.DCGM_PROF, Family.DCGM_PROF_SM, Family.DCGM_PROF_NVLINK)
    for n in signals_of(f)
]


# Pressure (PSI) signals are shares of wall time: a value above 1 is a counter reset or a rate taken
# across an exporter restart, not a measurement.
_SHARES = [i for name, i in _RAW.items() if "psi" in name]


def drop_impossible_shares(raw: FloatArray, *, in_place: bool = False) -> FloatArray:
    """The pods' signals with PSI shares outside [0, 1] (beyond rounding) blanked (NaN); ``in_place``
    blanks them in ``raw`` itself rather than in a copy."""
    shares = raw[:, _SHARES, :]
    bad = (shares > 1.05) | (shares < -0.05)
    if not bad.any():
        return raw
    out = raw if in_place else raw.copy(order="K")  # keeps gather's signal-major layout
    out[:, _SHARES, :] = np.where(bad, np.nan, shares)
    return out


def drop_dcgm_repeats(raw: FloatArray, *, in_place: bool = False) -> FloatArray:
    """The pods' signals with repeated dcgm-exporter samples blanked (NaN), in ``raw`` itself with
    ``in_place``.

    dcgm-exporter serves what it last collected (every 30 s by default), so 15 s scrapes, or a query
    step finer than the scrape interval, show each collection twice. Counted twice, such repeats would
    look like a flat signal and weigh twice in every statistic. A sample is a repeat when every GPU
    field present equals the previous sample's, power included (a real power reading never repeats
    to the last digit between two collections).
    """
    if raw.shape[2] < 2:
        return raw
    power = raw[:, _RAW["power_w"], :]
    # Power equal to the previous sample is rare in fresh readings: only pods where it repeats need
    # their other fields tested (NaN never equals, so a missing power sample is never a repeat).
    repeat = power[:, 1:] == power[:, :-1]
    pods = np.flatnonzero(repeat.any(axis=1))
    if not len(pods):
        return raw
    repeat = repeat[pods]
    present = np.zeros(repeat.shape, dtype=np.intp)
    # field by field on (pods x time) planes: a 3-D comparison and a reduction across fields would cost
    # several passes over every GPU field of every pod
    for i in _DCGM:
        field = raw[pods, i, :]
        cur, prev = field[:, 1:], field[:, :-1]
        missing = np.isnan(cur)
        repeat &= (cur == prev) | missing
        present += ~missing
    repeat &= present >= 3
    if not repeat.any():
        return raw
    out = raw if in_place else raw.copy(order="K")  # keeps gather's signal-major layout
    for i in _DCGM:
        field = out[pods, i, :]
        np.copyto(field[:, 1:], np.nan, where=repeat)
        out[pods, i, :] = field
    return out


# GPU_UTIL below the graphics engine's activity by more than this is out of phase, and a pod with
# that share of its samples so reads GPU_UTIL out of phase (one sample can be exporter noise: the
# simulators draw each series' noise apart; the four aliased H200 loops read it in 2-3 of 4-5)
OUT_OF_PHASE = 0.1
OUT_OF_PHASE_SHARE = 0.2


def util_in_phase(gpu_util: FloatArray, gr: FloatArray, copying: FloatArray) -> FloatArray:
    """``GPU_UTIL``, or where a pod's readings show it was read out of phase, the engine's time plus copies.

    NVML's utilisation covers the last 1/6 to 1 s before it is read; the profiling fields (graphics
    engine, SM, tensor, DRAM) cover DCGM's own sampling period. Over one interval a kernel is engine
    time and ``GPU_UTIL`` time alike (the H200 loops read the two within 0.005), so ``GPU_UTIL`` below
    the engine's activity means the two covered different intervals: a loop that alternates faster
    than that reads ``GPU_UTIL`` as 0 or 1 at random (tests/data/gpu-*-busy: 0.00 beside an engine at
    0.34, then 0.93 beside 0.25), a gap that reads like NCCL's waiting kernels. In a pod that reads so
    in a fifth of its samples or more (``OUT_OF_PHASE_SHARE``), every sample's ``GPU_UTIL`` is read as
    the engine's time plus the copy engines' share (``copying``), which is what ``GPU_UTIL`` counts over
    the engine's interval.

    Args:
        gpu_util: ``GPU_UTIL`` per pod and sample, 0..1 (NaN where missing).
        gr: the graphics engine's activity, same shape (NaN where not collected).
        copying: the copy engines' share of the time, same shape (0 where unknown).

    Returns:
        ``gpu_util`` itself where no pod reads out of phase, else a copy with those pods' rows replaced.
    """
    with np.errstate(invalid="ignore"):
        below = (gpu_util < gr - OUT_OF_PHASE).sum(axis=1)
    read = (~np.isnan(gpu_util) & ~np.isnan(gr)).sum(axis=1)
    out_of_phase = below >= np.maximum(OUT_OF_PHASE_SHARE * read, 1)
    if not out_of_phase.any():
        return gpu_util
    fixed = gpu_util.copy()
    fixed[out_of_phase] = np.clip(gr[out_of_phase] + copying[out_of_phase], 0.0, 1.0)
    return fixed
