"""One pass's Jobs in batches, and one batch's analysis: bounded in memory, its faults kept to itself.

Each Job's window is read at the step that keeps its series to a fixed number of points
(:mod:`bottleneck_operator.telemetry.plan.grid`): a running Job's sliding window at the base step,
a long finished run coarser. Jobs are grouped by step (one batched fetch reads one grid), and a
batch holds as many Jobs as keep its points within what a batch of running Jobs holds, so a batch
of final analyses of four-day runs weighs what a batch of fifteen-minute windows does.

A batch that fails for its own data (see :mod:`.faults`) is split in halves, and halves of halves,
until the fault is pinned on the Jobs whose telemetry causes it: they get a condition that says
what, and every other Job of the pass gets its verdict.
"""

from __future__ import annotations

import asyncio
import ctypes
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bottleneck_operator.controller.faults import describe, error_kind, local
from bottleneck_operator.controller.health import PassHealth
from bottleneck_operator.controller.jobs import annotate_status
from bottleneck_operator.controller.state import AnalyzerLike, OperatorState, TrackedJob, logger
from bottleneck_operator.controller.status import analysed_status, fault_status
from bottleneck_operator.errors import BottleneckError, Unavailable
from bottleneck_operator.reports import Phase, ReportStatus
from bottleneck_operator.telemetry.plan.grid import SERIES_POINTS, bounded_step

if TYPE_CHECKING:
    from bottleneck_operator.pipeline import JobRequest, JobResult

__all__ = ["Batch", "BatchUnavailable", "Outcome", "analyse_batch", "plan", "trim_heap", "window"]

Update = tuple[TrackedJob, ReportStatus]


@dataclass
class Outcome:
    """A batch's result: every status to write, and which of them are new verdicts (not faults)."""

    updates: list[Update]
    verdicts: list[ReportStatus]

    def __add__(self, other: Outcome) -> Outcome:
        return Outcome(self.updates + other.updates, self.verdicts + other.verdicts)


@dataclass(frozen=True)
class Batch:
    """Jobs analysed in one batched fetch, on one grid step (seconds)."""

    step: float
    jobs: Sequence[TrackedJob]


class BatchUnavailable(Exception):
    """A batch found Prometheus unavailable: the condition reason and message for the remaining Jobs."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def window(state: OperatorState, job: TrackedJob, phase: str, now: float) -> tuple[float, float]:
    """The Job's analysis window: the sliding window of a running Job, the whole run of a finished one."""
    if phase == "Running":
        end = now
        start = max(job.start or now, now - state.analysis.window)
    else:
        end = job.end or now
        start = job.start if job.start is not None else end - state.analysis.window
    return start, max(end, start)


def plan(state: OperatorState, jobs: Sequence[TrackedJob], phase: str, now: float, batch_size: int) -> list[Batch]:
    """The pass's batches: Jobs grouped by step, each batch within the points of ``batch_size`` running Jobs.

    Args:
        state: the operator's state (the windows and the base step).
        jobs: the Jobs to analyse.
        phase: the phase they are analysed for.
        now: the pass's time.
        batch_size: Jobs per batch at the points of a running Job's window.
    """
    base = state.analysis.step
    per_job = max(1.0, min(float(SERIES_POINTS), state.analysis.window / base))
    by_step: dict[float, list[tuple[TrackedJob, float]]] = {}
    for job in jobs:
        start, end = window(state, job, phase, now)
        step = bounded_step(start, end, base)
        by_step.setdefault(step, []).append((job, max(1.0, (end - start) / step)))
    batches: list[Batch] = []
    for step in sorted(by_step):
        group = by_step[step]
        points = max(p for _, p in group)
        size = max(1, min(batch_size, int(batch_size * per_job / points)))
        for i in range(0, len(group), size):
            batches.append(Batch(step, [j for j, _ in group[i : i + size]]))
    return batches


# Told each batch's results before their statuses are built (the cluster summary's digests and the
# Jobs' stragglers): (state, results, the Job of each request by id).
Observe = Callable[[OperatorState, Sequence["JobResult"], Mapping[int, TrackedJob]], None]


async def analyse_batch(
    state: OperatorState, analyzer: AnalyzerLike, batch: Batch, *, phase: Phase, observe: Observe | None = None
) -> Outcome:
    """Analyse one batch; returns the new status of each Job (not written yet).

    Raises:
        BatchUnavailable: Prometheus is unavailable (the remaining batches would fare no better).
    """
    from bottleneck_operator.pipeline import JobRequest

    now = state.clock()
    jobs = batch.jobs
    requests = [JobRequest(j.namespace, j.name, *window(state, j, phase, now)) for j in jobs]
    step = batch.step if batch.step != state.analysis.step else None
    try:
        updates = await asyncio.to_thread(
            _analyse_in_thread, state, analyzer, jobs, requests, (phase, step, now), observe
        )
    except Unavailable as exc:
        state.metrics.errors.labels("prometheus").inc()
        raise BatchUnavailable(*describe(exc)) from exc
    except Exception as exc:  # a fault of this batch's data stays with this batch
        return await _fault(state, analyzer, batch, exc, phase=phase, now=now, observe=observe)
    return Outcome(updates, [new for _, new in updates])


def _analyse_in_thread(
    state: OperatorState,
    analyzer: AnalyzerLike,
    jobs: Sequence[TrackedJob],
    requests: Sequence[JobRequest],
    how: tuple[Phase, float | None, float],
    observe: Observe | None = None,
) -> list[Update]:
    """The batch's analysis and its new statuses, built off the event loop (a status is many models)."""
    phase, step, now = how
    results = _analyse_then_trim(state.health, analyzer, requests, phase, step)
    # By request, not by name: a Job and a PyTorchJob of one name may share a batch.
    by_request = {id(r): j for r, j in zip(requests, jobs, strict=True)}
    if observe is not None:
        observe(state, results, by_request)
    updates: list[Update] = []
    for res in results:
        job = by_request.get(id(res.request))
        if job is None:
            continue
        new = analysed_status(
            job.status, res.status, phase=phase, now=now, timeline_length=state.operation.timeline_length
        )
        updates.append((job, annotate_status(new, job, now)))
    return updates


async def _fault(
    state: OperatorState,
    analyzer: AnalyzerLike,
    batch: Batch,
    exc: Exception,
    *,
    phase: Phase,
    now: float,
    observe: Observe | None = None,
) -> Outcome:
    """The updates for a batch whose analysis raised ``exc``: split it when the fault may be some Jobs' alone."""
    state.metrics.errors.labels(error_kind(exc)).inc()
    jobs = batch.jobs
    if len(jobs) > 1 and local(exc):
        logger.warning("a batch of %d job(s) failed (%s); analysing it in halves", len(jobs), _first_line(exc))
        half = len(jobs) // 2
        first = await analyse_batch(state, analyzer, Batch(batch.step, jobs[:half]), phase=phase, observe=observe)
        rest = await analyse_batch(state, analyzer, Batch(batch.step, jobs[half:]), phase=phase, observe=observe)
        return first + rest
    reason, message = describe(exc)
    names = ", ".join(f"{j.namespace}/{j.name}" for j in jobs[:5]) + (" ..." if len(jobs) > 5 else "")
    logger.error("%s for %d job(s) (%s): %s", reason, len(jobs), names, message, exc_info=_unexpected(exc))
    return Outcome([(j, fault_status(j.status, reason, message, now=now, phase=j.phase)) for j in jobs], [])


def _unexpected(exc: Exception) -> bool:
    return not isinstance(exc, BottleneckError)


def _first_line(exc: Exception) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


def _analyse_then_trim(
    health: PassHealth, analyzer: AnalyzerLike, requests: Sequence[JobRequest], phase: Phase, step: float | None
) -> list[JobResult]:
    with health.working():
        try:
            if step is None:
                return analyzer.analyze_jobs(requests, phase=phase)
            return analyzer.analyze_jobs(requests, phase=phase, step=step)
        finally:
            # A batch frees tens of MB of small objects; glibc keeps such memory for the process unless
            # asked, and the next batch's peak would then start from a higher resident size.
            trim_heap()


def trim_heap() -> None:
    """Give the heap's free memory back to the system (glibc only; elsewhere nothing to do)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def _find_malloc_trim() -> Callable[[int], int] | None:
    try:
        return ctypes.CDLL(None).malloc_trim  # type: ignore[no-any-return]
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to trim
        return None


_MALLOC_TRIM = _find_malloc_trim()
