"""Which exporters a job's nodes have, how often they scrape, and what reaches the window.

Clusters differ: dcgm-exporter runs with DEV fields only (no profiling), its shipped counters file
(DEV plus the default PROF fields) or a full custom file; kube-state-metrics or the sidecar may be
absent; a node may lack the PSI collector (kernel before 4.20 or collector off) or the sidecar (an
injection that failed on one node); RDMA port counters exist only where there is an RDMA fabric.
Scrape intervals range from 5 to 60 s, and dcgm-exporter caches its own collection (30 s default).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.signals import SIGNALS, Family, Kind
from bottleneck_operator_dev.familym.observe import counter_of, held, rate_of, restart_masks
from bottleneck_operator_dev.familym.plans import Plan

Array = npt.NDArray[np.float64]


def present_families(rng: np.random.Generator, plan: Plan) -> tuple[set[Family], str]:
    """The families the job's cluster exports (before per-node gaps), and the DCGM field set's name."""
    field_set = str(rng.choice(["dev-only", "default", "full"], p=[0.25, 0.45, 0.3]))
    fams = {Family.DCGM_DEV, Family.CADVISOR, Family.NODE}
    if field_set != "dev-only":
        fams.add(Family.DCGM_PROF)
    if field_set == "full":
        fams |= {Family.DCGM_PROF_SM, Family.DCGM_PROF_PIPES, Family.DCGM_POWER_CLOCKS}
        if plan.board.nvlink_bps > 0:
            fams.add(Family.DCGM_PROF_NVLINK)
    elif field_set == "default" and rng.random() < 0.4:
        fams.add(Family.DCGM_POWER_CLOCKS)
    if plan.cpu_limit is not None:
        fams.add(Family.CADVISOR_CFS)
    if rng.random() < 0.9:
        fams.add(Family.KSM)
    if rng.random() < 0.9:
        fams.add(Family.NODE_PSI)
    if plan.fabric is not None and plan.fabric.kind == "ib" and rng.random() < 0.85:
        fams.add(Family.NODE_IB)
    if rng.random() < 0.75:
        fams.add(Family.SIDECAR)
    if rng.random() < 0.04:
        fams.discard(Family.NODE)
        fams.discard(Family.NODE_PSI)
        fams.discard(Family.NODE_IB)
    return fams, field_set


def node_gaps(rng: np.random.Generator, pods: int) -> dict[Family, npt.NDArray[np.bool_]]:
    """Per pod: families missing on that pod's node only (one node without the sidecar or PSI)."""
    out = {}
    for fam, chance in ((Family.SIDECAR, 0.12), (Family.NODE_PSI, 0.1)):
        miss = rng.random(pods) < chance
        out[fam] = miss if pods > 1 else np.zeros(pods, dtype=bool)
    return out


def observe(
    rng: np.random.Generator,
    truth: dict[str, Array],
    families: set[Family],
    step: float,
    scrape: dict[str, float],
) -> dict[str, Array]:
    """The signals as a range query over the exporters' samples would give them, for present families.

    Args:
        rng: the job's generator.
        truth: signal name -> true values (pods, T); names starting with "_" are internal.
        families: families present.
        step: grid step, seconds.
        scrape: exporter short name -> seconds between its samples.
    """
    pods, length = next(iter(truth.values())).shape
    restarts = {e: restart_masks(rng, pods, length, 0.08) for e in scrape}
    out = {}
    for name, values in truth.items():
        spec = SIGNALS.get(name)
        if spec is None or spec.family not in families:
            continue
        exporter = spec.family.exporter_name
        interval = scrape[exporter]
        gap, reset = restarts[exporter]
        if spec.kind is Kind.COUNTER:
            window = max(1, math.ceil(max(step, 2.0 * interval) / step))
            seen = rate_of(counter_of(values, step, reset, rng), step, window)
        else:
            seen = held(values, max(1, round(interval / step)), 0).copy()
        seen[gap] = np.nan
        out[name] = seen
    return out
