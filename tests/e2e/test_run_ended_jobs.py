"""Jobs that had ended before `bottleneck-operator run` started: every one is finalised, and the log stays small.

The first pass may run while the reports are still being created and finalise none of them; the
Jobs' events wake the loop again, and a later pass finalises each over its whole run. The log at the
default verbosity holds the settings, Events and pass summaries, not a line per HTTP request: a
pass of a few Jobs sends dozens of requests, and a log that grows with them fills whatever reads it
(a 64 KiB pipe filled within one pass, and the operator then waited on its own log writes).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bottleneck_operator_dev.demo.cluster import JOBS, REPORTS, LocalCluster, job_body

ENDED = 4


def _phase(cluster: LocalCluster, namespace: str, name: str) -> str | None:
    status: dict[str, Any] = (cluster.get(REPORTS, namespace, name) or {}).get("status") or {}
    return status.get("phase")


def test_jobs_ended_before_start_are_all_finalised(tmp_path: Path, sim_dataset: Any) -> None:
    jobs = sim_dataset.jobs[:ENDED]
    namespaces = sorted({j.namespace for j in jobs})
    log = tmp_path / "operator.log"
    with LocalCluster() as cluster:
        cluster.write_kubeconfig(tmp_path / "kubeconfig")
        for job in jobs:
            cluster.create(JOBS, job.namespace, job_body(job.namespace, job.name, start=job.start, end=job.end))
        # The log goes to a file, as a container runtime drains it: a pipe nobody reads would stop
        # the operator at its first write past the pipe's buffer, whatever the operator does.
        with log.open("w") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "bottleneck_operator", "run", "--prometheus-url", sim_dataset.prom.url,
                 *(a for ns in namespaces for a in ("--namespace", ns)), "--metrics-port", "0",
                 "--liveness", "", "--no-webhook", "--report-retention", "0"],
                env={**os.environ, "KUBECONFIG": str(tmp_path / "kubeconfig")},
                stdout=out, stderr=subprocess.STDOUT, text=True,
            )  # fmt: skip
            try:
                phases = _wait_final(cluster, jobs, proc)
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=60)
    text = log.read_text()
    assert proc.returncode == 0, text[-3000:]
    assert phases == {j.name: "Completed" for j in jobs}, text[-3000:]
    finalised = sum(int(n) for n in re.findall(r"pass: jobs=\d+ finalised=(\d+) ", text))
    assert finalised == ENDED, text[-3000:]
    assert text.count("ReportFinalised") == ENDED
    assert "HTTP Request:" not in text, "a line per HTTP request at the default verbosity"


def _wait_final(cluster: LocalCluster, jobs: list[Any], proc: subprocess.Popen[str]) -> dict[str, str | None]:
    deadline = time.monotonic() + 60.0
    while True:
        phases = {j.name: _phase(cluster, j.namespace, j.name) for j in jobs}
        if all(p == "Completed" for p in phases.values()) or time.monotonic() > deadline:
            return phases
        if proc.poll() is not None:
            pytest.fail(f"the operator exited ({proc.returncode}) before finalising the Jobs")
        time.sleep(0.2)
