"""Whether two generated Jobs are the same, for the written-blind families' determinism tests.

Every family hands out Jobs with the same fields (``namespace``, ``name``, ``label``, ``mechanism``,
``tags`` and a contract ``JobWindow``), so one comparison serves them all: the Job's identity and
tags, the window's grid, each pod's identity, and every signal sample (NaN equal to NaN, since a
missing scrape is part of what a generator draws).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def same_job(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` carry the same identity, tags and window, sample for sample."""
    if (a.namespace, a.name, a.label, a.mechanism, a.tags) != (b.namespace, b.name, b.label, b.mechanism, b.tags):
        return False
    wa, wb = a.window, b.window
    if not np.array_equal(wa.timestamps, wb.timestamps) or len(wa.pods) != len(wb.pods):
        return False
    for pa, pb in zip(wa.pods, wb.pods, strict=True):
        if (pa.pod, pa.node, pa.gpu_model, pa.gpu_count) != (pb.pod, pb.node, pb.gpu_model, pb.gpu_count):
            return False
        if pa.signals.keys() != pb.signals.keys():
            return False
        if not all(np.array_equal(pa.signals[k], pb.signals[k], equal_nan=True) for k in pa.signals):
            return False
    return bool(wa.quality == wb.quality)
