"""Faults stay local, end to end: the operator on the emulator, a misbehaving proxy in front of the real Prometheus.

One Job whose series carry a label value no Prometheus writes gets ``DataInvalid`` naming the series,
and every other Job of the same pass gets its verdict. Refusals, a deadline and a byte cap each give
the report a condition of their own (with the HTTP status where there was one), the last verdict
kept; once the fault clears the report recovers.
"""

from __future__ import annotations

from typing import Any

import pytest
from operator_harness import fast_settings, reports, run_operator, wait_for

from bottleneck_operator_dev.demo.cluster import JOBS, LocalCluster, job_body
from prom_proxy import PromProxy

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]


def _status(cluster: LocalCluster, name: str) -> dict[str, Any]:
    return dict(reports(cluster).get(name, {}).get("status") or {})


def _metrics(cluster: LocalCluster, name: str) -> dict[str, Any]:
    conditions = {c["type"]: c for c in _status(cluster, name).get("conditions") or []}
    return dict(conditions.get("MetricsAvailable") or {})


def test_one_jobs_malformed_series_leaves_every_other_job_its_verdict(cluster: LocalCluster, sim_dataset: Any) -> None:
    jobs = sim_dataset.jobs[:6]
    bad = jobs[2]
    prefix = f"{bad.name}-"
    assert not any(p.pod.startswith(prefix) for j in sim_dataset.jobs if j is not bad for p in j.pods)
    end = max(j.end for j in jobs)
    with PromProxy(sim_dataset.prom.url) as proxy:
        proxy.odd_pod = prefix
        settings = fast_settings(proxy.url, window=600.0)
        for j in jobs:
            cluster.create(JOBS, j.namespace, job_body(j.namespace, j.name, start=j.start))
        with run_operator(settings, clock=lambda: end - 5):
            good = [j for j in jobs if j is not bad]
            wait_for(
                "verdicts for the good Jobs and DataInvalid for the bad one",
                lambda: (
                    all(_metrics(cluster, j.name).get("status") == "True" for j in good)
                    and _metrics(cluster, bad.name).get("reason") == "DataInvalid"
                ),
                timeout=90,
            )
            for j in good:
                status = _status(cluster, j.name)
                assert status["bottleneck"] not in (None, "Unknown"), (j.name, status.get("reason"))
                assert status["dataQuality"]["pods"] == len(j.pods)
            cond = _metrics(cluster, bad.name)
            assert cond["status"] == "False"
            assert "odd=7" in cond["message"] and any(f'"{p.pod}"' in cond["message"] for p in bad.pods), cond
            assert _status(cluster, bad.name).get("bottleneck") in (None, "Unknown")


def test_refusals_deadline_and_caps_each_say_which_and_clear(cluster: LocalCluster, sim_dataset: Any) -> None:
    job = sim_dataset.jobs[0]
    with PromProxy(sim_dataset.prom.url) as proxy:
        settings = fast_settings(proxy.url, window=600.0, prometheus_timeout=2.0, max_answer_bytes=1 << 20)
        cluster.create(JOBS, job.namespace, job_body(job.namespace, job.name, start=job.start))
        with run_operator(settings, clock=lambda: job.end - 5):
            verdict = wait_for("a verdict", lambda: _status(cluster, job.name).get("bottleneck"))
            for fault, reason, text in [
                ("403", "PrometheusForbidden", "HTTP 403"),
                ("401", "PrometheusUnauthorized", "HTTP 401"),
                ("html", "NotPrometheus", "HTTP 200"),
                ("slow", "QueryDeadlineExceeded", "deadline"),
                ("padded", "AnswerBytesExceeded", "max_answer_bytes"),
            ]:
                proxy.fault, proxy.delay, proxy.pad = fault, 3.0, 2 << 20
                wait_for(f"{reason} on the report", lambda r=reason: _metrics(cluster, job.name).get("reason") == r)
                cond = _metrics(cluster, job.name)
                assert cond["status"] == "False" and text in cond["message"], cond
                assert _status(cluster, job.name)["bottleneck"] == verdict  # the last verdict stays
            proxy.fault = None
            wait_for("recovery", lambda: _metrics(cluster, job.name).get("status") == "True")
            assert _status(cluster, job.name)["bottleneck"] == verdict
