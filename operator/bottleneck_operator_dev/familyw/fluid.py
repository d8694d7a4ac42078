"""The time-stepped fluid integration: storage -> read-ahead -> decode -> prefetch queue -> PCIe -> devices.

Every run (one Job, one variant) contributes one lane per pod; all lanes of a batch advance
together, tick by tick, with element-wise arithmetic only (so a lane's numbers never depend on
which other lanes share its batch). In each tick a stage moves what its capacity allows, no more
than its input buffer holds and no more than its output buffer has room for: full buffers block
producers, empty ones starve consumers. The devices of a Job's pods then meet at the gradient
exchange: no pod may run more than one step ahead of the slowest (the step barrier), so the
slowest rank sets the pace.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyw.model import TICK, TICKS_PER_CELL, TICKS_PER_RES, FloatArray, JobPlan, Rates

# What the exporters need of a recorded run, per pod, summed over each second (TICKS_PER_RES ticks).
RECORDED = ("io", "dec", "dec_cap", "copy", "steps", "want")


@dataclass
class Run:
    """One Job under one variant: the inputs of a lane group and, after :func:`integrate`, its outcome."""

    plan: JobPlan
    rates: Rates
    record: bool = False
    steps_per_s: float = 0.0
    trace: dict[str, FloatArray] | None = None  # name -> (pods, seconds), only when recorded


def integrate(runs: list[Run]) -> None:
    """Advance every run over its pre-window and window; fill ``steps_per_s`` (and ``trace`` where recorded).

    Runs are integrated in batches of equal pod count, each a (pods, runs) array per state
    variable, so the step barrier is a minimum down a column.
    """
    # Single-pod Jobs in one batch, multi-pod ones in another (or everything together when few):
    # a Job with fewer pods than its batch is padded with copies of its first pod, which follow
    # that pod's trajectory exactly and so never change the barrier.
    single = [r for r in runs if r.plan.nodes == 1]
    multi = [r for r in runs if r.plan.nodes > 1]
    batches = [runs] if len(runs) < 400 else [single, multi]
    for batch in batches:
        if batch:
            _integrate_batch(sorted(batch, key=lambda r: not r.record))  # recorded runs first


def _matrix(runs: list[Run], get: str, pods: int, n_cells: int) -> FloatArray:
    """One stage's capacity as (cells, pods, runs); short runs hold their last cell, missing pods copy pod 0."""
    out = np.empty((n_cells, pods, len(runs)))
    for j, run in enumerate(runs):
        rows = getattr(run.rates, get)
        rows = rows[np.minimum(np.arange(pods), rows.shape[0] - 1) * (np.arange(pods) < rows.shape[0])]
        out[: rows.shape[1], :, j] = rows.T
        out[rows.shape[1] :, :, j] = rows[:, -1]
    return out


def _per_run(runs: list[Run], get: str) -> FloatArray:
    return np.array([float(getattr(r.plan, get)) for r in runs])


def _integrate_batch(runs: list[Run]) -> None:
    pods = max(r.plan.nodes for r in runs)
    n_runs = len(runs)
    n_rec = sum(r.record for r in runs)
    n_cells = max(r.plan.n_cells for r in runs)
    n_ticks = n_cells * TICKS_PER_CELL

    spb = _per_run(runs, "samples_per_step")
    io_dt, dec_dt, cp_dt = (_matrix(runs, k, pods, n_cells) * TICK for k in ("io", "dec", "copy"))
    gpot_dt = _matrix(runs, "gpu", pods, n_cells) * TICK / spb
    raw_cap, pf_cap, dev_cap = (_per_run(runs, k) for k in ("raw_cap", "pf_cap", "dev_cap"))
    # Buffers start half full: the pre-window lets them settle before anything is sampled.
    raw = np.tile(raw_cap / 2, (pods, 1))
    pf = np.tile(pf_cap / 2, (pods, 1))
    dev = np.tile(dev_cap / 2, (pods, 1))
    prog = np.zeros((pods, n_runs))
    snap_start = np.zeros((pods, n_runs))
    snap_end = np.zeros((pods, n_runs))
    marks: dict[int, list[tuple[int, bool]]] = {}
    for j, run in enumerate(runs):
        p = run.plan
        marks.setdefault(round(p.pre / TICK), []).append((j, True))
        marks.setdefault(round((p.pre + p.duration) / TICK), []).append((j, False))
    rec = np.empty((n_ticks, len(RECORDED), pods, n_rec), dtype=np.float32) if n_rec else None

    for k in range(n_ticks):
        c = k // TICKS_PER_CELL
        a = np.minimum(io_dt[c], raw_cap - raw)
        raw += a
        d_cap = np.minimum(dec_dt[c], pf_cap - pf)
        d = np.minimum(d_cap, raw)
        raw -= d
        pf += d
        x = np.minimum(np.minimum(cp_dt[c], pf), dev_cap - dev)
        pf -= x
        dev += x
        want = np.minimum(gpot_dt[c], dev / spb)
        # the step barrier: no pod runs more than one step ahead of the Job's slowest
        reach = prog + want
        got = np.minimum(reach, reach.min(axis=0) + 1.0) - prog
        prog += got
        dev -= got * spb
        if rec is not None:
            for s, v in enumerate((a, d, d_cap, x, got, want)):
                rec[k, s] = v[:, :n_rec]
        for j, is_start in marks.get(k + 1, ()):
            (snap_start if is_start else snap_end)[:, j] = prog[:, j]

    _finish(runs, rec, snap_start, snap_end)


def _finish(runs: list[Run], rec: npt.NDArray[np.float32] | None, snap_start: FloatArray, snap_end: FloatArray) -> None:
    """Steps per second over each run's window, and the recorded runs' traces per second."""
    # A Job's progress is its slowest pod's.
    done = snap_end.min(axis=0) - snap_start.min(axis=0)
    traces = None
    if rec is not None:
        secs = rec.reshape(rec.shape[0] // TICKS_PER_RES, TICKS_PER_RES, *rec.shape[1:]).sum(axis=1, dtype=np.float64)
        traces = np.ascontiguousarray(secs.transpose(3, 1, 2, 0))
    for j, run in enumerate(runs):
        run.steps_per_s = float(done[j]) / run.plan.duration
        if run.record and traces is not None:
            n_sec, n_pods = run.plan.n_cells * TICKS_PER_CELL // TICKS_PER_RES, run.plan.nodes
            run.trace = {name: traces[j, s, :n_pods, :n_sec] for s, name in enumerate(RECORDED)}
