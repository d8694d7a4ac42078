"""A pass is bounded and its faults stay local: the pass loop's own bookkeeping, with an echoing analyzer.

Long windows go out at a coarser step in smaller batches; a batch that fails for one Job's data is
split until that Job alone carries the fault; refusals of the credentials are not split; finished
Jobs leave the cache once final. The real pipeline and API are in test_faults_local.py.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from bottleneck_operator.controller import passes
from bottleneck_operator.controller.batches import plan
from bottleneck_operator.controller.state import BoundedDict, OperatorState, TrackedJob
from bottleneck_operator.reports import AnalysisWindow, ReportStatus, rfc3339
from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry.errors import QueryRejected, QueryTimeout
from bottleneck_operator.telemetry.plan.grid import SERIES_POINTS

DAY = 86400.0


class _Result:
    def __init__(self, request: Any, status: ReportStatus) -> None:
        self.request, self.status = request, status


class _Analyzer:
    """Echoes an IO verdict per request; raises ``fault`` for any batch holding a Job named in ``poisoned``."""

    def __init__(self, fault: Exception | None = None, poisoned: tuple[str, ...] = ()) -> None:
        self.fault, self.poisoned = fault, poisoned
        self.calls: list[tuple[list[str], float | None]] = []
        self.queries_issued = 0
        self._lock = threading.Lock()

    def analyze_jobs(self, requests: Any, *, phase: str = "Running", step: float | None = None) -> list[_Result]:
        with self._lock:
            self.calls.append(([r.job for r in requests], step))
        if self.fault is not None and (not self.poisoned or any(r.job in self.poisoned for r in requests)):
            raise self.fault
        window = AnalysisWindow(start=rfc3339(0), end=rfc3339(600), seconds=600)
        return [_Result(r, ReportStatus(phase=phase, bottleneck="IO", confidence=0.9, window=window)) for r in requests]


class _Api:
    def __init__(self) -> None:
        self.patched: list[tuple[str, dict[str, Any]]] = []

    async def patch_status(self, namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        self.patched.append((name, patch))
        return {}


def _state(analyzer: _Analyzer) -> OperatorState:
    return OperatorState(
        settings=Settings(prometheus_url="http://prometheus:9090"),
        api=_Api(),  # type: ignore[arg-type]
        analyzer_factory=lambda: analyzer,
    )


def _job(state: OperatorState, name: str, *, ran: float, finished: bool = False) -> TrackedJob:
    now = time.time()
    job = TrackedJob(namespace="ml", name=name, uid=f"uid-{name}", start=now - ran, phase="Running")
    if finished:
        job.phase, job.end = "Completed", now - 60
    job.report_ready = True
    job.status = ReportStatus(bottleneck="GPU", confidence=0.8, phase="Running")
    state.jobs[job.key] = job
    return job


def _metrics(job: TrackedJob) -> Any:
    return next(c for c in (job.status or ReportStatus()).conditions or [] if c.type == "MetricsAvailable")


def test_long_windows_are_read_coarser_in_smaller_batches() -> None:
    state = _state(_Analyzer())
    running = [_job(state, f"run-{i}", ran=3600) for i in range(200)]
    finals = [_job(state, f"long-{i}", ran=4 * DAY, finished=True) for i in range(40)]
    now = time.time()
    base, window = state.analysis.step, state.analysis.window
    budget = passes.PASS_BATCH * window / base  # the points of a full batch of running Jobs

    run_batches = plan(state, running, "Running", now, passes.PASS_BATCH)
    assert [len(b.jobs) for b in run_batches] == [150, 50] and {b.step for b in run_batches} == {base}

    final_batches = plan(state, finals, "Completed", now, passes.PASS_BATCH)
    steps = {b.step for b in final_batches}
    assert len(steps) == 1
    (step,) = steps
    span = 4 * DAY - 60
    assert step > base and span / step <= SERIES_POINTS < 2 * span / step  # the smallest doubling that fits
    assert sorted(j.name for b in final_batches for j in b.jobs) == sorted(j.name for j in finals)
    for batch in final_batches:
        assert len(batch.jobs) * span / step <= budget


def test_the_final_analysis_gets_the_coarser_step() -> None:
    analyzer = _Analyzer()
    state = _state(analyzer)
    _job(state, "short", ran=600, finished=True)
    _job(state, "long", ran=4 * DAY, finished=True)
    asyncio.run(passes.run_pass(state, running=False))
    steps = {tuple(names): step for names, step in analyzer.calls}
    assert steps[("short",)] is None  # the base step: nothing passed
    long_step = steps[("long",)]
    assert long_step is not None and (4 * DAY - 60) / long_step <= SERIES_POINTS


def test_one_jobs_bad_data_is_pinned_on_it_and_the_others_get_verdicts() -> None:
    analyzer = _Analyzer(TypeError("float() argument must be a string or a real number, not 'dict'"), ("job-5",))
    state = _state(analyzer)
    jobs = [_job(state, f"job-{i}", ran=600) for i in range(8)]
    verdicts = asyncio.run(passes._analyse(state, analyzer, jobs, phase="Running"))
    assert verdicts == {"IO": 7}
    for job in jobs:
        metrics = _metrics(job)
        if job.name == "job-5":
            assert (metrics.status, metrics.reason) == ("False", "DataInvalid")
            assert "TypeError" in metrics.message
            assert (job.status or ReportStatus()).bottleneck == "GPU"  # the last verdict stays
        else:
            assert (job.status or ReportStatus()).bottleneck == "IO", job.name
    # 8 -> 4 + 4 -> (2 + 2) -> (1 + 1): the halves without job-5 are analysed once each
    assert len(analyzer.calls) == 7
    assert state.metrics.errors.labels("analysis")._value.get() == 4


def test_a_refusal_of_the_credentials_is_not_split() -> None:
    analyzer = _Analyzer(QueryRejected("Prometheus refused the credentials (HTTP 403): forbidden", status=403))
    state = _state(analyzer)
    jobs = [_job(state, f"job-{i}", ran=600) for i in range(8)]
    assert asyncio.run(passes._analyse(state, analyzer, jobs, phase="Running")) == {}
    assert len(analyzer.calls) == 1
    for job in jobs:
        metrics = _metrics(job)
        assert metrics.reason == "PrometheusForbidden" and "HTTP 403" in metrics.message


def test_a_deadline_breach_marks_the_remaining_reports(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(passes, "PASS_BATCH", 3)
    analyzer = _Analyzer(QueryTimeout("no whole answer within the 30s deadline"), ("job-4",))
    state = _state(analyzer)
    jobs = [_job(state, f"job-{i}", ran=600) for i in range(8)]
    assert asyncio.run(passes._analyse(state, analyzer, jobs, phase="Running")) == {"IO": 3}
    reasons = {j.name: _metrics(j).reason for j in jobs if j.name != "job-0" and j.name not in ("job-1", "job-2")}
    assert set(reasons.values()) == {"QueryDeadlineExceeded"}
    assert len(reasons) == 5


def test_a_failed_final_analysis_is_retried_and_then_the_job_leaves_the_cache() -> None:
    analyzer = _Analyzer(TypeError("odd"), ("done",))
    state = _state(analyzer)
    _job(state, "running", ran=600)
    done = _job(state, "done", ran=3600, finished=True)
    asyncio.run(passes.run_pass(state))
    ready = next(c for c in (done.status or ReportStatus()).conditions or [] if c.type == "Ready")
    assert ready.reason == "FinalAnalysisPending" and done.key in state.jobs
    analyzer.fault = None  # the data is fixed: the next pass finalises the Job, which then leaves the cache
    asyncio.run(passes.run_pass(state, running=False))
    assert (done.status or ReportStatus()).phase == "Completed"
    asyncio.run(passes.run_pass(state, running=False))
    assert [j.name for j in state.jobs.values()] == ["running"]


def test_warned_forgets_its_oldest_entries() -> None:
    warned = BoundedDict(limit=3)
    for i in range(5):
        warned[f"uid-{i}"] = "maybe"
    warned["uid-3"] = "perhaps"  # written again: the newest
    assert list(warned) == ["uid-2", "uid-4", "uid-3"]
    assert _state(_Analyzer()).warned.limit > 0


class _Slow(_Analyzer):
    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def analyze_jobs(self, requests: Any, *, phase: str = "Running", step: float | None = None) -> list[_Result]:
        time.sleep(self.seconds)
        return super().analyze_jobs(requests, phase=phase, step=step)


def test_a_pass_past_its_deadline_is_cancelled_and_counted_and_a_completed_one_is_stamped() -> None:
    analyzer = _Slow(1.0)
    state = _state(analyzer)
    state.analysis = state.analysis.model_copy(update={"pass_deadline": 0.3})
    _job(state, "job-0", ran=600)
    stamp = state.metrics.last_pass_completed
    before = stamp._value.get()
    asyncio.run(passes._bounded_pass(state, running=True))
    assert state.metrics.errors.labels("deadline")._value.get() == 1
    assert stamp._value.get() == before and state.health.last_completed is None
    analyzer.seconds = 0.0
    asyncio.run(passes._bounded_pass(state, running=True))
    assert state.metrics.errors.labels("deadline")._value.get() == 1
    assert state.health.last_completed is not None and stamp._value.get() == state.health.last_completed >= before


def test_a_workload_suspended_during_its_analysis_keeps_its_suspended_report() -> None:
    """The pass read the window while the workload ran; it was suspended before the write: the
    report stays Suspended rather than being put back to Running by that analysis."""
    analyzer = _Analyzer()
    state = _state(analyzer)
    running = _job(state, "still-running", ran=600.0)
    paused = _job(state, "paused", ran=600.0)

    class _Suspending(_Analyzer):
        def analyze_jobs(self, requests: Any, *, phase: str = "Running", step: float | None = None) -> list[_Result]:
            paused.phase = "Suspended"  # the watch saw the suspension meanwhile
            return super().analyze_jobs(requests, phase=phase, step=step)

    state.analyzer_factory = lambda: _Suspending()
    asyncio.run(passes.run_pass(state))
    written = [name for name, _ in state.api.patched]  # type: ignore[attr-defined]
    assert running.report in written and paused.report not in written


class _Cycle:
    """A reference cycle: freed only by the cyclic collector."""

    def __init__(self) -> None:
        self.me = self


def test_the_heap_is_frozen_after_the_first_pass_and_again_as_the_jobs_grow() -> None:
    import gc
    import weakref

    state = _state(_Analyzer())
    for i in range(10):
        _job(state, f"run-{i}", ran=3600)
    garbage = _Cycle()
    dead = weakref.ref(garbage)
    del garbage
    frozen = gc.get_freeze_count()
    asyncio.run(passes.run_pass(state))
    assert state.frozen_at_jobs == 10  # the first pass froze what it left alive...
    assert gc.get_freeze_count() > frozen
    assert dead() is None  # ...after a full collection: no garbage is kept frozen
    for i in range(10, 10 + passes.FREEZE_STEP - 1):
        _job(state, f"run-{i}", ran=3600)
    assert not passes.settle_heap(state)  # grown by less than a step: no new freeze
    _job(state, "one-more", ran=3600)
    assert passes.settle_heap(state) and state.frozen_at_jobs == 10 + passes.FREEZE_STEP
    for i in range(1000):
        _job(state, f"wave-{i}", ran=3600)
    assert passes.settle_heap(state) and state.frozen_at_jobs == 1074
    for i in range(1000, 1000 + 1074 // 4 - 1):
        _job(state, f"wave-{i}", ran=3600)
    assert not passes.settle_heap(state)  # a quarter more is needed past the step
    _job(state, "last", ran=3600)
    assert passes.settle_heap(state)
