"""A Job that ends while Prometheus is down gets one ``ReportFinalised`` Event: when its final analysis is done.

Until then its report is marked ``FinalAnalysisPending`` and keeps the last running verdict, which is
not a verdict over the whole run; an Event saying so would be wrong, and the real one would follow
as a second Event for the same change (the soak benchmark found it).
"""

from __future__ import annotations

import asyncio
from typing import Any

from test_pass_bounds import _Analyzer, _job, _state

from bottleneck_operator.controller import passes
from bottleneck_operator.reports import ReportStatus
from bottleneck_operator.telemetry.errors import PrometheusUnavailable


def test_a_job_that_ends_during_an_outage_is_finalised_once() -> None:
    analyzer = _Analyzer(PrometheusUnavailable("Prometheus is unreachable: connection refused"))
    state = _state(analyzer)
    posted: list[tuple[str, str]] = []

    def poster(body: Any, type_: str, reason: str, message: str) -> None:
        posted.append((reason, message))

    state.poster = poster
    done = _job(state, "done", ran=3600, finished=True)
    asyncio.run(passes.run_pass(state))
    ready = next(c for c in (done.status or ReportStatus()).conditions or [] if c.type == "Ready")
    assert ready.reason == "FinalAnalysisPending" and (done.status or ReportStatus()).phase == "Completed"
    assert [r for r, _ in posted if r == "ReportFinalised"] == []

    analyzer.fault = None  # Prometheus is back: the final analysis runs, and is announced once
    asyncio.run(passes.run_pass(state, running=False))
    finalised = [m for r, m in posted if r == "ReportFinalised"]
    assert len(finalised) == 1 and "bottleneck IO" in finalised[0] and "over the whole run" in finalised[0]
    asyncio.run(passes.run_pass(state, running=False))
    assert len([r for r, _ in posted if r == "ReportFinalised"]) == 1
