"""`bottleneck-operator run` as a user runs it: a process, a kubeconfig, a real Prometheus."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from bottleneck_operator_dev.demo.cluster import JOBS, REPORTS, LocalCluster, job_body
from bottleneck_operator_dev.simulation.localprom import free_port


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status, resp.read().decode()
    except OSError:
        return 0, ""


def _wait(what: str, predicate: Any, proc: subprocess.Popen[str], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(
                f"the operator exited ({proc.returncode}) while waiting for {what}:\n{proc.stdout.read() if proc.stdout else ''}"
            )
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


@pytest.fixture()
def cluster(tmp_path: Path) -> Any:
    with LocalCluster() as c:
        c.write_kubeconfig(tmp_path / "kubeconfig")
        yield c


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "KUBECONFIG": str(tmp_path / "kubeconfig"),
        "BOTTLENECK_PROMETHEUS_PASSWORD": "s3cret",
        **extra,
    }


def test_bad_model_file_is_one_clear_line(cluster: LocalCluster, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bottleneck_operator", "run", "--prometheus-url", "http://127.0.0.1:9",
         "--metrics-port", "0", "--liveness", "", "--no-webhook"],
        env=_env(tmp_path, BOTTLENECK_MODEL_PATH=str(tmp_path / "missing.skops")),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("bottleneck-operator run: error:") and "missing.skops" in last
    assert "s3cret" not in proc.stderr


@pytest.mark.prometheus
def test_run_serves_metrics_liveness_and_reports(cluster: LocalCluster, tmp_path: Path, sim_dataset: Any) -> None:
    job = sim_dataset.jobs[0]
    cluster.create(JOBS, job.namespace, job_body(job.namespace, job.name, start=job.start, end=job.end))
    metrics, health = free_port(), free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "bottleneck_operator", "run", "--prometheus-url", sim_dataset.prom.url,
         "--namespace", job.namespace, "--metrics-port", str(metrics),
         "--liveness", f"http://127.0.0.1:{health}/healthz", "--no-webhook", "--report-retention", "0"],
        env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        _wait("liveness", lambda: _get(f"http://127.0.0.1:{health}/healthz")[0] == 200, proc)
        _wait(
            "the final report",
            lambda: (cluster.get(REPORTS, job.namespace, job.name) or {}).get("status", {}).get("phase") == "Completed",
            proc,
        )
        text = _wait("the metrics", lambda: _get(f"http://127.0.0.1:{metrics}/metrics")[1], proc)
        assert "bottleneck_operator_passes_total" in text
        assert "bottleneck_operator_pass_duration_seconds_count" in text
        assert 'bottleneck_operator_errors_total{kind="prometheus"} 0.0' in text
        assert "bottleneck_operator_prometheus_queries_total" in text
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out[-3000:]
    assert out.count("bottleneck-operator settings:") == 1
    assert "s3cret" not in out and '"prometheus_password": "***"' in out
    assert "pass: jobs=" in out


def test_run_serves_the_admission_webhook(cluster: LocalCluster, tmp_path: Path) -> None:
    import json
    import shutil
    import ssl

    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make the test certificate")
    certs = tmp_path / "certs"
    certs.mkdir()
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(certs / "tls.key"),
         "-out", str(certs / "tls.crt"), "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "bottleneck_operator", "run", "--prometheus-url", "http://127.0.0.1:9",
         "--metrics-port", "0", "--liveness", ""],
        env=_env(tmp_path, BOTTLENECK_WEBHOOK_PORT=str(port), BOTTLENECK_WEBHOOK_CERT_DIR=str(certs)),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "r1",
            "operation": "CREATE",
            "kind": {"group": "batch", "version": "v1", "kind": "Job"},
            "resource": {"group": "batch", "version": "v1", "resource": "jobs"},
            "namespace": "ml",
            "userInfo": {"username": "someone"},
            "object": job_body("ml", "train", start=None),
        },
    }
    ctx = ssl.create_default_context(cafile=str(certs / "tls.crt"))

    def post() -> dict[str, Any] | None:
        req = urllib.request.Request(
            f"https://127.0.0.1:{port}/inject-sidecar",
            data=json.dumps(review).encode(),
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=5) as resp:
                answer: dict[str, Any] = json.loads(resp.read())
                return answer
        except OSError:
            return None

    try:
        answer = _wait("the webhook", post, proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert answer["response"]["uid"] == "r1" and answer["response"]["allowed"] is True
    assert answer["response"].get("patch"), answer
    assert proc.returncode == 0, out[-2000:]
