"""The webhook inside a running operator: kopf run against the emulated API server, serving HTTPS.

Here kopf itself discovers batch/v1 jobs from the (emulated) API server and starts its webhook
server as ``bottleneck-operator run`` configures it; the AdmissionReview then takes the same path a
kube-apiserver's request would.
"""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kopf
import pytest
from _webhook_support import admission_review, apply, make_job
from kopf.testing import KopfRunner

from bottleneck_operator.demo import cluster as cluster_mod
from bottleneck_operator.settings import Settings
from bottleneck_operator.simulation.localprom import free_port
from bottleneck_operator.webhook import handlers
from bottleneck_operator.webhook.server import configure_admission


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with cluster_mod.LocalCluster() as c:
        monkeypatch.setenv("KUBECONFIG", str(c.write_kubeconfig(tmp_path / "kubeconfig")))
        yield c


def _post(url: str, payload: dict[str, Any], ctx: ssl.SSLContext) -> tuple[int, Any]:
    request = urllib.request.Request(
        url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, context=ctx, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_running_operator_serves_the_injection(cluster: Any, tls_pair: tuple[Path, Path], tmp_path: Path) -> None:
    cert, key = tls_pair
    cert_dir = tmp_path / "certs"
    cert_dir.mkdir()
    shutil.copy(cert, cert_dir / "tls.crt")
    shutil.copy(key, cert_dir / "tls.key")
    port = free_port()
    settings = Settings(webhook_port=port, webhook_cert_dir=cert_dir, sidecar_image="registry.example/bn:test")

    registry = kopf.OperatorRegistry()
    handlers.register(registry)

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> Any:
        return kopf.login_with_kubeconfig(**kwargs)

    @kopf.on.startup(registry=registry)
    def startup(settings: kopf.OperatorSettings, **_: Any) -> None:
        configure_admission(settings, operator_settings)  # what the operator does at start-up

    operator_settings = settings
    ctx = ssl.create_default_context(cafile=str(cert))
    url = f"https://127.0.0.1:{port}/inject-sidecar"
    job = make_job({"bottleneck.dev/profile": "true"})

    with KopfRunner(
        ["run", "--standalone", "--all-namespaces"], registry=registry, settings=kopf.OperatorSettings(), timeout=60
    ) as runner:
        deadline = time.monotonic() + 45
        while True:
            try:
                status, body = _post(url, admission_review(job), ctx)
                if status == 200:
                    break
            except OSError:
                pass  # not listening yet: kopf starts the server once it has discovered the resources
            assert time.monotonic() < deadline, "the operator never served the webhook"
            time.sleep(0.2)
    assert runner.exception is None, runner.output
    response = body["response"]
    assert response["allowed"] is True
    mutated = apply(job, json.loads(base64.b64decode(response["patch"])))
    collector = mutated["spec"]["template"]["spec"]["initContainers"][0]
    assert collector["name"] == "bottleneck-collector"
    assert collector["image"] == "registry.example/bn:test"  # the operator's settings, not the defaults
