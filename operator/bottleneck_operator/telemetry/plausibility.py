"""Readings no hardware can produce, treated as missing rather than as a measurement.

dcgm-exporter's ``DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL`` has a disputed unit upstream (bytes, or KB/s
on some builds), and the PROF NVLink fields read 0 on some DGX-A100 firmware whatever the traffic.
A rate above any NVLink generation's capacity, or PROF fields flat at 0 while the DEV counter shows
traffic, would otherwise read as "saturated" or "no traffic": both would mislead the analysis.
"""

from __future__ import annotations

from collections.abc import MutableMapping

import numpy as np

from bottleneck_operator.contract.window import FloatArray

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
