"""How one pass splits its Jobs into batches: every Job written once, batches overlapped up to
IN_FLIGHT, and a Prometheus outage in the middle leaving every remaining report its last verdict.

The analyzer here echoes a verdict per Job and the reports API records what would be PATCHed: the
loop's own bookkeeping is under test (the real pipeline and API are in test_verdicts.py).
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from bottleneck_operator.controller import passes
from bottleneck_operator.controller.state import OperatorState, TrackedJob
from bottleneck_operator.reports import AnalysisWindow, ReportStatus, rfc3339
from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry.errors import PrometheusUnavailable


class _Result:
    def __init__(self, request: Any, status: ReportStatus) -> None:
        self.request, self.status = request, status


class _Analyzer:
    def __init__(self, fail_on_call: int | None = None) -> None:
        self.fail_on_call = fail_on_call
        self.calls: list[int] = []
        self.queries_issued = 0
        self.running = self.most_at_once = 0
        self._lock = threading.Lock()

    def analyze_jobs(self, requests: Any, *, phase: str = "Running") -> list[_Result]:
        with self._lock:
            self.calls.append(len(requests))
            call = len(self.calls)
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        try:
            time.sleep(0.05)  # long enough for a second batch to start when it may
            if call == self.fail_on_call:
                raise PrometheusUnavailable("cannot connect to Prometheus at http://prometheus:9090")
            window = AnalysisWindow(start=rfc3339(0), end=rfc3339(600), seconds=600)
            return [
                _Result(r, ReportStatus(phase=phase, bottleneck="IO", confidence=0.9, window=window)) for r in requests
            ]
        finally:
            with self._lock:
                self.running -= 1


class _Api:
    def __init__(self) -> None:
        self.patched: list[tuple[str, dict[str, Any]]] = []

    async def patch_status(self, namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        self.patched.append((name, patch))
        return {}


def _state(analyzer: _Analyzer, n: int) -> tuple[OperatorState, list[TrackedJob]]:
    state = OperatorState(
        settings=Settings(prometheus_url="http://prometheus:9090"),
        api=_Api(),  # type: ignore[arg-type]
        analyzer_factory=lambda: analyzer,
    )
    jobs = []
    for i in range(n):
        job = TrackedJob(namespace="ml", name=f"job-{i}", uid=f"uid-{i}", start=time.time() - 600, phase="Running")
        job.report_ready = True
        job.status = ReportStatus(bottleneck="GPU", confidence=0.8, phase="Running")
        state.jobs[job.key] = job
        jobs.append(job)
    return state, jobs


@pytest.mark.parametrize("in_flight", [1, 2])
def test_every_job_is_analysed_and_written_once(monkeypatch: pytest.MonkeyPatch, in_flight: int) -> None:
    monkeypatch.setattr(passes, "PASS_BATCH", 2)
    monkeypatch.setattr(passes, "IN_FLIGHT", in_flight)
    analyzer = _Analyzer()
    state, jobs = _state(analyzer, 5)
    verdicts = asyncio.run(passes._analyse(state, analyzer, jobs, phase="Running"))
    assert analyzer.calls == [2, 2, 1]
    assert analyzer.most_at_once == in_flight
    assert verdicts == {"IO": 5}
    written = sorted(name for name, _ in state.api.patched)  # type: ignore[attr-defined]
    assert written == [f"job-{i}" for i in range(5)]
    assert all(j.status and j.status.bottleneck == "IO" for j in jobs)


@pytest.mark.parametrize("in_flight", [1, 2])
def test_an_outage_mid_pass_keeps_the_remaining_verdicts(monkeypatch: pytest.MonkeyPatch, in_flight: int) -> None:
    monkeypatch.setattr(passes, "PASS_BATCH", 2)
    monkeypatch.setattr(passes, "IN_FLIGHT", in_flight)
    analyzer = _Analyzer(fail_on_call=2)
    state, jobs = _state(analyzer, 5)
    verdicts = asyncio.run(passes._analyse(state, analyzer, jobs, phase="Running"))
    assert verdicts == {"IO": 2}
    assert analyzer.calls[:2] == [2, 2] and len(analyzer.calls) <= 2 + (in_flight - 1)
    by_job = {j.name: j.status or ReportStatus() for j in jobs}
    assert by_job["job-0"].bottleneck == "IO" and by_job["job-1"].bottleneck == "IO"
    for name in ("job-2", "job-3", "job-4"):  # the failed batch and the ones after it
        status = by_job[name]
        assert status.bottleneck == "GPU", name  # the last verdict stays
        metrics = next(c for c in status.conditions or [] if c.type == "MetricsAvailable")
        assert metrics.status == "False" and "cannot connect" in metrics.message
    assert sorted(name for name, _ in state.api.patched) == [f"job-{i}" for i in range(5)]  # type: ignore[attr-defined]
