"""Turning one physical knob of a drafted job until the intended stage bounds it, by a drawn margin.

Each class has a knob with a physical reading: more bytes per sample or a smaller share of the
storage (IO), costlier augmentation (CPU), more bytes to exchange (Interconnect), more math per
sample (GPU), more bandwidth-bound kernels or deeper reclaim (Memory). A drafted job is first
given the class's preconditions (a CPU limit for a throttled job, few loader workers, a memory
limit below the working set, ...), optionally a second stage close behind (a mixed job), and
then the knob is bisected until the step model's margin reaches the drawn one. The result is
checked against the hardware's capacities; a job that would need impossible hardware is redrawn.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyh.draft import Draft, labelled
from bottleneck_operator_dev.familyh.stepmodel import LABELLED, Stages, speedups

Rng = np.random.Generator


def _scaled(d: Draft, cls: Bottleneck, mech: Mechanism, lam: float) -> Draft:
    """The draft with ``cls``'s knob multiplied by ``lam`` (stage times and the bytes they move)."""
    s = d.stages
    if cls is Bottleneck.IO:
        if d.storage.local:
            # more bytes per sample over the same device: time and bytes grow together
            return replace(
                d,
                batch_bytes=d.batch_bytes * lam,
                stages=replace(s, read_s=s.read_s * lam, storage_s=s.storage_s * lam),
            )
        # a smaller share of a remote store (throttling, contention): same bytes, longer reads
        return replace(d, stages=replace(s, read_s=s.read_s * lam, storage_s=s.storage_s * lam))
    if cls is Bottleneck.CPU:
        return replace(d, stages=replace(s, decode_s=s.decode_s * lam))
    if cls is Bottleneck.INTERCONNECT:
        if mech is Mechanism.PCIE and s.comm_scope != "pcie":
            return replace(d, h2d_bytes=d.h2d_bytes * lam, stages=replace(s, h2d_s=s.h2d_s * lam))
        total = d.comm_total_s * lam
        exposed = max(0.0, total - d.comm_hidden_s) / d.accum
        return replace(
            d,
            comm_total_s=total,
            link_bytes=d.link_bytes * lam,
            nvlink_bytes=d.nvlink_bytes * lam,
            stages=replace(s, comm_s=exposed),
        )
    if cls is Bottleneck.GPU:
        return replace(d, stages=replace(s, tensor_s=s.tensor_s * lam))
    if mech is Mechanism.HOST_MEMORY_PRESSURE:
        return replace(d, stages=replace(s, main_stall_s=s.main_stall_s * lam, worker_stall_s=s.worker_stall_s * lam))
    return replace(d, stages=replace(s, hbm_s=s.hbm_s * lam))


def _ratio(stages: Stages, cls: Bottleneck) -> float:
    sp = speedups(stages)
    return sp[cls] / max(v for k, v in sp.items() if k is not cls)


def _bisect(d: Draft, cls: Bottleneck, mech: Mechanism, goal: float, measure: str) -> Draft:
    """The draft scaled so that ``measure`` ("ratio" over the runner-up, or "speedup") of ``cls`` hits ``goal``."""
    lo, hi = math.log(1e-4), math.log(1e4)
    for _ in range(26):
        mid = (lo + hi) / 2
        st = _scaled(d, cls, mech, math.exp(mid)).stages
        value = _ratio(st, cls) if measure == "ratio" else speedups(st)[cls]
        if value < goal:
            lo = mid
        else:
            hi = mid
    return _scaled(d, cls, mech, math.exp(hi))


def _prepare(rng: Rng, d: Draft, cls: Bottleneck, mech: Mechanism) -> Draft:
    """The class's preconditions: what must be true of the set-up for its mechanism to be the one."""
    s = d.stages
    if mech is Mechanism.THROTTLED:
        limit = d.cpu_limit or d.gpus * float(rng.uniform(2, 8))
        cores = max(0.5, limit / d.gpus - d.main_cores)
        workers = max(int(rng.integers(6, 17)), math.ceil(cores * rng.uniform(1.3, 2.5)))
        return replace(d, cpu_limit=limit, stages=replace(s, cores=cores, cores_from_limit=True, workers=workers))
    if mech is Mechanism.SATURATED:
        # no limit, but a node shared with CPU-hungry neighbours (or a small node for its GPUs)
        cores = max(0.5, d.node_cpus * float(rng.uniform(0.15, 0.6)) / d.gpus - d.main_cores)
        workers = max(int(rng.integers(8, 25)), math.ceil(cores * rng.uniform(1.3, 2.5)))
        return replace(d, cpu_limit=None, stages=replace(s, cores=cores, cores_from_limit=False, workers=workers))
    if mech is Mechanism.TOO_FEW_WORKERS:
        return replace(d, stages=replace(s, workers=int(rng.choice((1, 1, 2, 2, 3)))))
    if mech is Mechanism.HOST_MEMORY_PRESSURE:
        limit = d.host_ws * float(rng.uniform(0.82, 0.97))
        return replace(
            d,
            mem_limit=limit if rng.random() < 0.7 else None,
            stages=replace(
                s,
                hbm_s=min(s.hbm_s, 0.5 * s.tensor_s),
                main_stall_s=0.05 * s.kernels_s + 1e-4,
                worker_stall_s=0.3 * s.decode_s + 1e-4,
            ),
        )
    if cls is Bottleneck.MEMORY:
        return replace(d, stages=replace(s, hbm_s=max(s.hbm_s, s.tensor_s * 1.2)))
    return d


def _feasible(d: Draft) -> bool:
    """Whether the tuned job fits its hardware: no stage moves bytes faster than its link or device."""
    s = d.stages
    step = s.step_s
    if not 0.005 <= step <= 40.0:
        return False
    # the pod's ranks share one device (or one client's share of a remote store)
    if d.batch_bytes * d.gpus / step > d.storage.bw_bps * 1.05:
        return False
    if d.h2d_bytes / max(step, 1e-9) > d.board.pcie_bps:
        return False
    if d.fabric is not None and d.link_bytes * d.gpus / d.accum / step > d.fabric.bw_bps:
        return False
    if s.decode_s / (d.workload.batch[1] * 1.0) > d.workload.decode_s[1] * 6:
        return False
    return s.main_stall_s + s.worker_stall_s / max(s.workers, 1) < 0.9 * step


def _margin(rng: Rng) -> float:
    """How clearly the label's stage leads: borderline, moderate or clear."""
    kind = rng.random()
    if kind < 0.2:
        return float(rng.uniform(1.01, 1.06))
    if kind < 0.7:
        return float(rng.uniform(1.06, 1.4))
    return float(rng.uniform(1.4, 3.0))


def tune(rng: Rng, d: Draft, cls: Bottleneck, mech: Mechanism) -> tuple[Draft, tuple[str, ...]] | None:
    """The draft tuned so ``cls`` bounds it, with its hard-case tags; None when it cannot be done physically."""
    d = _prepare(rng, d, cls, mech)
    tags: list[str] = []
    if rng.random() < 0.3:
        others = [c for c in LABELLED if c is not cls]
        second = others[int(rng.integers(len(others)))]
        d = _bisect(d, second, Mechanism.COMPUTE, float(rng.uniform(1.1, 1.5)), "speedup")
        if speedups(d.stages)[second] > 1.08:
            tags.append(f"mixed-with-{second.value.lower()}")
    goal = _margin(rng)
    d = labelled(_bisect(d, cls, mech, goal, "ratio"))
    if d.label is not cls or not _feasible(d):
        return None
    if d.margin < 1.06:
        tags.append("borderline")
    elif d.margin > 1.4:
        tags.append("clear")
    else:
        tags.append("moderate")
    return d, tuple(tags)
