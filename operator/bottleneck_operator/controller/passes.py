"""The one analysis loop: every ``interval``, all running profiled Jobs in one batched pass.

Not a timer per Job: one pass builds one window request per Job and hands them to
``pipeline.Analyzer`` in batches (:mod:`.batches`: up to :data:`PASS_BATCH` Jobs, fewer where their
windows are long; each batch a fixed number of PromQL queries whatever its number of Jobs), in a
thread so kopf's event loop keeps serving the watch streams. Jobs that ended are finalised by the same
loop as soon as they are seen (the loop is woken early), over their whole run.

Every pass runs under ``pass_deadline`` and reports to :class:`.health.PassHealth` (the liveness
probe's view); a completed pass sets ``bottleneck_operator_last_pass_completed_timestamp_seconds``,
which the chart's ``BottleneckOperatorPassesStalled`` alert watches.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections import Counter, deque
from collections.abc import Sequence
from typing import Any

from bottleneck_operator.aio import stop_task
from bottleneck_operator.controller import retention, summary
from bottleneck_operator.controller.batches import BatchUnavailable, Outcome, analyse_batch, plan, trim_heap
from bottleneck_operator.controller.digest_mirror import note_finalised
from bottleneck_operator.controller.jobs import ensure_report
from bottleneck_operator.controller.metrics import OperatorMetrics
from bottleneck_operator.controller.state import AnalyzerLike, OperatorState, TrackedJob, logger
from bottleneck_operator.controller.status import fault_status, merge_patch, needs_final
from bottleneck_operator.kube.errors import KubeError, NotFound
from bottleneck_operator.reports import Phase, ReportStatus

# A short pause after being woken, so Jobs ending together are finalised in one batch.
_BATCH_DELAY = 0.2
# Jobs per batched fetch. One fetch's query count does not depend on its number of Jobs, but its
# memory does (every pod's signals, then the classifier's features). Each batch's Prometheus work is
# proportional to its Jobs (every query is narrowed to the batch's pods and nodes), so batches cost
# little beyond their queries' round trips. 150 was the best trade of pass time against peak memory
# in bench_operator (fewer Jobs per batch: more round trips; more: a larger peak, slower passes).
PASS_BATCH = 150
# Batches analysed at once (see _analyse). Two overlap one batch's Python work with the next one's
# queries, which pays on a Prometheus with cores to spare; next to a small Prometheus the gain did
# not pay for the extra peak memory (bench_operator), so one it is.
IN_FLIGHT = 1
# Report PATCHes in flight at once.
_WRITE_CONCURRENCY = 16


async def run_loop(state: OperatorState) -> None:
    """Run passes forever (until cancelled): on schedule, and early when woken."""
    interval = state.analysis.interval
    next_running = time.monotonic()
    next_sweep = time.monotonic() + min(interval, 30.0)
    while True:
        timeout = max(0.0, next_running - time.monotonic())
        try:
            async with asyncio.timeout(timeout):
                await state.wake.wait()
            await asyncio.sleep(_BATCH_DELAY)
        except TimeoutError:
            pass
        state.wake.clear()
        due = time.monotonic() >= next_running
        await _bounded_pass(state, running=due)
        if due:
            next_running = time.monotonic() + interval
        if time.monotonic() >= next_sweep:
            try:
                await retention.sweep(state)
            except KubeError as exc:
                state.metrics.errors.labels("kubernetes").inc()
                logger.warning("retention sweep failed: %s", exc)
            except Exception:  # a bug in the sweep must not end the loop (the passes would stop with it)
                state.metrics.errors.labels("kubernetes").inc()
                logger.exception("retention sweep failed")
            next_sweep = time.monotonic() + retention.sweep_period(state.analysis, state.operation)


async def _bounded_pass(state: OperatorState, *, running: bool) -> None:
    """One pass under the deadline; its end (or its failure) recorded for the probe and the alert."""
    deadline = state.analysis.pass_deadline
    state.health.started()
    completed = False
    bound = asyncio.timeout(deadline)
    try:
        async with bound:
            await run_pass(state, running=running)
        completed = True
    except Exception:  # a bug must not stop the loop: log it, count it, go on next time
        if bound.expired():
            state.metrics.errors.labels("deadline").inc()
            logger.error("analysis pass cancelled: it ran past its %gs deadline (pass_deadline)", deadline)
        else:
            state.metrics.errors.labels("analysis").inc()
            logger.exception("analysis pass failed")
    finally:
        state.health.ended(completed=completed)
    if completed:
        state.metrics.last_pass_completed.set(state.health.last_completed or time.time())


def _analyzer(state: OperatorState) -> AnalyzerLike:
    if state.analyzer is None:
        state.analyzer = state.analyzer_factory()
        freeze_long_lived()
    return state.analyzer


def freeze_long_lived() -> None:
    """Take everything alive now (libraries, the model) out of the cyclic garbage collector's sight.

    scikit-learn, SciPy and the model are about a million objects that live as long as the process;
    frozen, each full collection during a pass (a few per batch) costs milliseconds instead of a
    third of a second. Call it once the analyzer is built.
    """
    gc.collect()
    gc.freeze()
    trim_heap()  # what loading the model used and freed


# Growth of the tracked Jobs since the last freeze that freezes again: a quarter more, and at least these.
FREEZE_STEP = 64


def settle_heap(state: OperatorState) -> bool:
    """Freeze the heap after the first pass, and again after a pass once the tracked Jobs have grown by a quarter.

    What is alive after a pass lives long: the modules the first pass imported, kopf's memory of
    every watched object, the tracked Jobs and their reports, the cluster book. Left in the
    collector's sight, each full collection walks all of it (tens of milliseconds for a thousand
    Jobs, with the interpreter lock held, so the event loop waits whichever thread collects); frozen,
    a full collection walks only what came since. An object frozen is still freed when its last
    reference goes; only a reference cycle among frozen objects would never be, so freezes are
    few: after the first pass, then as the start-up burst or the cluster's profiled Jobs grow
    (a logarithmic number of times).

    Returns:
        Whether it froze now.
    """
    tracked = len(state.jobs)
    last = state.frozen_at_jobs
    if last is not None and tracked < last + max(FREEZE_STEP, last // 4):
        return False
    freeze_long_lived()
    state.frozen_at_jobs = tracked
    return True


async def _ensure_reports(state: OperatorState) -> None:
    """A report for every Job that has none yet (one that cannot be created is tried again next pass)."""
    for job in [j for j in state.jobs.values() if not j.report_ready and not j.deleted]:
        try:
            await ensure_report(state, job)
        except KubeError as exc:
            state.metrics.errors.labels("kubernetes").inc()
            logger.warning("%s/%s: cannot create the report yet: %s", job.namespace, job.name, exc)


async def _finalise(state: OperatorState, analyzer: AnalyzerLike, finals: list[TrackedJob]) -> Counter[str]:
    """The final analysis of ended Jobs, by the phase they ended in."""
    verdicts: Counter[str] = Counter()
    final_phases: tuple[Phase, ...] = ("Completed", "Failed")
    for phase in final_phases:
        batch = [j for j in finals if j.phase == phase]
        if batch:
            verdicts += await _analyse(state, analyzer, batch, phase=phase)
    return verdicts


async def run_pass(state: OperatorState, *, running: bool = True) -> Counter[str]:
    """One pass: ensure missing reports, finalise ended Jobs, re-analyse running ones.

    Args:
        state: the operator's state.
        running: analyse every running Job (False: only final analyses and Jobs never analysed).

    Returns:
        Verdicts written in this pass, by class.
    """
    t0 = time.monotonic()
    analyzer = _analyzer(state)
    queries0 = analyzer.queries_issued
    verdicts: Counter[str] = Counter()

    await _ensure_reports(state)
    finals = [j for j in state.jobs.values() if j.report_ready and j.finished and needs_final(j.status)]
    verdicts += await _finalise(state, analyzer, finals)
    for job in finals:
        if job.status is not None and not needs_final(job.status):
            note_finalised(state, job.key, job.namespace, job.report)
    # Deleted and finished Jobs leave the cache once finalised: the cache then holds only Jobs with
    # work left, however many have run. A later event of a finished Job costs one read of its
    # report, which says it is final.
    for job in [j for j in state.jobs.values() if (j.deleted or j.finished) and j.report_ready]:
        if not needs_final(job.status) and not job.lock.locked():
            state.forget(job)

    # Between scheduled passes, Jobs never analysed yet (new reports) get their first verdict now.
    jobs = state.running_jobs()
    if not running:
        jobs = [j for j in jobs if not _analysed_once(j)]
    if jobs:
        verdicts += await _analyse(state, analyzer, jobs, phase="Running")

    settle_heap(state)
    trim_heap()  # the pass's report writes
    if running or finals or jobs:
        await summary.refresh(state)
    seconds = time.monotonic() - t0
    queries = analyzer.queries_issued - queries0
    state.metrics.queries.inc(queries)
    _update_gauges(state)
    if running or finals or jobs:
        state.metrics.passes.labels("running" if running else "final").inc()
        state.metrics.pass_duration.observe(seconds)
        by_class = " ".join(f"{k}={v}" for k, v in sorted(verdicts.items())) or "none"
        logger.info(
            "pass: jobs=%d finalised=%d verdicts: %s queries=%d seconds=%.2f",
            len(jobs),
            len(finals),
            by_class,
            queries,
            seconds,
        )
    return verdicts


def _update_gauges(state: OperatorState) -> None:
    m = state.metrics
    running = sum(1 for j in state.jobs.values() if not j.finished)
    m.jobs.labels("running").set(running)
    m.jobs.labels("finished").set(len(state.jobs) - running)
    current: Counter[str] = Counter(_current_class(j) for j in state.jobs.values())
    for label in ("IO", "CPU", "Interconnect", "GPU", "Memory", "Unknown", "None"):
        m.reports_by_class.labels(label).set(current.get(label, 0))


def _analysed_once(job: TrackedJob) -> bool:
    return job.analysed_once


def _current_class(job: TrackedJob) -> str:
    return job.current_class or "None"


async def _analyse(
    state: OperatorState, analyzer: AnalyzerLike, jobs: Sequence[TrackedJob], *, phase: Phase
) -> Counter[str]:
    verdicts: Counter[str] = Counter()
    batches = plan(state, jobs, phase, state.clock(), PASS_BATCH)
    # Up to IN_FLIGHT batches are analysed at once, each in a thread: while one is assembled and
    # classified (Python, one core), the next one's queries keep Prometheus busy (another core).
    # Batch k's reports are written while later batches are analysed.
    pending: deque[asyncio.Task[Outcome]] = deque()
    writing: asyncio.Task[None] | None = None
    launched = done = 0
    try:
        while done < len(batches):
            while launched < len(batches) and len(pending) < IN_FLIGHT:
                pending.append(
                    asyncio.create_task(
                        analyse_batch(state, analyzer, batches[launched], phase=phase, observe=summary.observe)
                    )
                )
                launched += 1
            try:
                outcome = await pending.popleft()
            except BatchUnavailable as down:
                # Prometheus is down or too slow: the remaining batches would only wait for the same.
                await _cancel_all(pending)
                rest = [j for b in batches[done:] for j in b.jobs]
                logger.warning("Prometheus unavailable, %d report(s) keep their last verdict: %s", len(rest), down)
                now = state.clock()
                updates = [(j, fault_status(j.status, down.reason, down.message, now=now, phase=j.phase)) for j in rest]
                if writing is not None:
                    await writing
                writing = None
                await _write_all(state, updates, phase)
                break
            done += 1
            counted: Counter[str] = Counter(new.bottleneck or "Unknown" for new in outcome.verdicts)
            for label, n in counted.items():
                state.metrics.verdicts.labels(label).inc(n)
            if phase == "Running":
                count_idle_gpu_time(state.metrics, outcome.verdicts, state.analysis.interval)
            verdicts += counted
            if writing is not None:
                await writing
            writing = asyncio.create_task(_write_all(state, outcome.updates, phase))
        if writing is not None:
            await writing
    except BaseException:  # cancelled (shutdown) or a bug: leave no analysis or write task behind
        await _cancel_all(pending)
        await stop_task(writing)
        raise
    return verdicts


async def _cancel_all(tasks: deque[asyncio.Task[Any]]) -> None:
    """Cancel and reap tasks (a thread already running finishes on its own; its result is dropped)."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    tasks.clear()


def count_idle_gpu_time(metrics: OperatorMetrics, statuses: Sequence[ReportStatus], seconds: float) -> None:
    """Charge each running Job's idle GPU time over one interval to its current verdict.

    The dashboard's "wasted GPU-hours by bottleneck" reads this counter: (1 - mean GPU activity) x
    GPUs x the time one pass stands for. Jobs without a GPU activity figure are not charged.
    """
    for status in statuses:
        active = status.gpu_active
        gpus = status.data_quality.gpus if status.data_quality else 0
        if active is None or not gpus:
            continue
        idle = max(0.0, 1.0 - active) * gpus * seconds
        metrics.wasted_gpu_seconds.labels(status.bottleneck or "Unknown").inc(idle)


async def _write_all(state: OperatorState, updates: Sequence[tuple[TrackedJob, ReportStatus]], phase: str) -> None:
    # A bounded number of PATCHes in flight: a batch's hundreds of requests at once would hold
    # their bodies and connections together while the next batch is being analysed.
    limit = asyncio.Semaphore(_WRITE_CONCURRENCY)

    async def one(job: TrackedJob, new: ReportStatus) -> None:
        async with limit:
            await _write(state, job, new, phase)

    await asyncio.gather(*(one(job, new) for job, new in updates))


async def _write(state: OperatorState, job: TrackedJob, new: ReportStatus, phase: str) -> None:
    old = job.status
    if old == new:
        return
    if phase == "Running" and job.phase == "Suspended":
        # suspended while its window was being analysed: the report says Suspended, not this
        return
    try:
        await state.api.patch_status(job.namespace, job.report, merge_patch(old, new))
    except NotFound:
        # Someone deleted the report: create it again on the next pass (the cache starts over).
        job.report_ready, job.status = False, None
        state.metrics.errors.labels("kubernetes").inc()
        logger.warning("%s/%s: the report vanished; it will be created again", job.namespace, job.name)
        return
    except KubeError as exc:
        state.metrics.errors.labels("kubernetes").inc()
        logger.warning("%s/%s: cannot write the report: %s", job.namespace, job.name, exc)
        return
    job.status = new
    _post_verdict_events(state, job, old, new, phase)


def _post_verdict_events(
    state: OperatorState, job: TrackedJob, old: ReportStatus | None, new: ReportStatus, phase: str
) -> None:
    before, after = (old.bottleneck if old else None), new.bottleneck
    confidence = float(new.confidence or 0.0)
    # A final analysis still pending (Prometheus down when the Job ended) is announced once it is done.
    final_now = phase != "Running" and not needs_final(new) and (old is None or old.phase != phase or needs_final(old))
    if final_now and after:
        state.post_event(
            job,
            "Normal",
            "ReportFinalised",
            f"Job {phase.lower()}: bottleneck {after} ({confidence:.0%}) over the whole run{_hint(new)}",
        )
    elif after and after != before:
        what = f"bottleneck {after} ({confidence:.0%})"
        message = (
            f"{what}{_hint(new)}"
            if before is None
            else f"bottleneck changed from {before} to {after} ({confidence:.0%}){_hint(new)}"
        )
        state.post_event(job, "Normal", "BottleneckChanged", message)


def _hint(status: ReportStatus) -> str:
    if status.recommendations:
        return f"; try: {status.recommendations[0].action}"
    return f"; {status.reason}" if status.reason else ""
