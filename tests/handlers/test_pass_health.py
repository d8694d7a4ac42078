"""A stuck pass fails the liveness probe; one that ends again passes it. kopf's own health endpoint, served
by the operator under KopfRunner against the emulator; the analyzer is a stand-in that can be made to hang.
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

import kopf
import pytest
from kopf.testing import KopfRunner
from operator_harness import fast_settings, wait_for

from bottleneck_operator.controller import health
from bottleneck_operator.controller.health import PassHealth
from bottleneck_operator.handlers import register_handlers
from bottleneck_operator.reports import ReportStatus
from bottleneck_operator_dev.demo.cluster import JOBS, LocalCluster, job_body
from bottleneck_operator_dev.simulation.localprom import free_port


@dataclass
class _Result:
    request: Any
    status: ReportStatus


class HangingAnalyzer:
    """Answers GPU for every Job, but hangs (as a wedged decoder would) until ``release`` is set."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        self.queries_issued = 0

    def analyze_jobs(self, requests: Any, *, phase: str = "Running", step: float | None = None) -> list[_Result]:
        self.entered.set()
        self.release.wait(timeout=120)
        return [_Result(r, ReportStatus(phase=phase, bottleneck="GPU", confidence=0.9)) for r in requests]


def _probe(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


def test_a_stuck_pass_fails_liveness_and_passes_again_once_it_ends(
    cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(health, "GRACE", 1.0)
    analyzer = HangingAnalyzer()
    settings = fast_settings("http://127.0.0.1:9")
    # Settings asks for >= 10 s (sane on a cluster); tests go faster on purpose
    settings.analysis = settings.analysis.model_copy(update={"pass_deadline": 2.0})
    url = f"http://127.0.0.1:{free_port()}/healthz"
    registry = kopf.OperatorRegistry()
    register_handlers(registry, settings, analyzer_factory=lambda: analyzer)
    args = ["run", "--standalone", "--all-namespaces", f"--liveness={url}"]
    with KopfRunner(args, registry=registry, settings=kopf.OperatorSettings(), timeout=90) as runner:
        wait_for("a healthy probe", lambda: _probe(url) == 200)
        cluster.create(JOBS, "ml", job_body("ml", "wedged", start=time.time() - 600))
        assert analyzer.entered.wait(timeout=30)
        # The pass is cancelled at its deadline, but its thread hangs on: past deadline + grace it is stuck.
        wait_for("the probe to fail", lambda: _probe(url) == 500, timeout=40)
        analyzer.release.set()
        wait_for("the probe to pass again", lambda: _probe(url) == 200, timeout=40)
    assert "ran past its 2s deadline" in runner.output


def test_health_tells_a_slow_pass_from_a_stuck_one() -> None:
    now = [100.0]
    beat = PassHealth(deadline=10.0, clock=lambda: now[0])
    assert beat.stuck() is None and beat.summary()["lastCompletedAgo"] is None
    beat.started()
    now[0] += 10.0 + health.GRACE - 1  # past the deadline, within the grace: cancellation may still land
    assert beat.stuck() is None
    now[0] += 2
    assert "past its 10s deadline" in (beat.stuck() or "")
    beat.ended(completed=False)
    assert beat.stuck() is None and beat.last_completed is None
    with beat.working():
        now[0] += 10.0 + health.GRACE + 1
        assert "analysis thread" in (beat.stuck() or "")
    assert beat.stuck() is None
    beat.started()
    beat.ended(completed=True)
    assert beat.last_completed is not None and beat.summary()["runningFor"] is None
