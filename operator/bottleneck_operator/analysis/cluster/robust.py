"""Robust outlier scores across a Job's peers.

The modified z-score of Iglewicz and Hoaglin ("How to Detect and Handle Outliers", ASQC Basic
References in Quality Control 16, 1993): ``M = 0.6745 (x - median) / MAD``, where 0.6745 is the
normal quantile that makes the MAD a consistent estimate of the standard deviation; they recommend
calling ``|M| > 3.5`` an outlier. When more than half the peers agree exactly the MAD is 0, and the
score falls back to the mean absolute deviation, ``(x - median) / (1.253314 MeanAD)`` (1.253314 =
sqrt(pi/2) makes MeanAD consistent for a normal standard deviation), as IBM SPSS does for the same
statistic.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# Iglewicz & Hoaglin's cut-off for the modified z-score.
OUTLIER_Z = 3.5
_MAD_TO_SD = 0.6745
_MEAN_AD_TO_SD = 1.253314


def modified_z(values: Sequence[float]) -> tuple[float, list[float]]:
    """The peers' median and each one's modified z-score (0 for all when they cannot be told apart).

    Args:
        values: one figure per peer (no NaN).

    Returns:
        (median, scores), scores in the order of ``values``; positive above the median.
    """
    x = np.asarray(values, dtype=np.float64)
    med = float(np.median(x))
    dev = x - med
    mad = float(np.median(np.abs(dev)))
    if mad > 0:
        scores = _MAD_TO_SD * dev / mad
    else:
        mean_ad = float(np.mean(np.abs(dev)))
        if mean_ad == 0:
            return med, [0.0] * len(x)
        scores = dev / (_MEAN_AD_TO_SD * mean_ad)
    return med, [float(s) for s in scores]
