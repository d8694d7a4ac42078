"""Blanking samples that no exporter could have measured, before the derived series are computed.

Pressure shares outside [0, 1] come from counter resets; repeated dcgm-exporter samples come from
scrapes (or a query step) finer than its 30 s collection interval. Both would otherwise weigh in
every statistic of :mod:`.features` as if they were readings.
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
