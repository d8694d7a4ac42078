"""The webhook inside a running operator: kopf run against the emulated API server, serving HTTPS.

Here kopf itself discovers batch/v1 jobs from the (emulated) API server and starts its webhook
server as ``bottleneck-operator run`` configures it; the AdmissionReview then takes the same path a
kube-apiserver's request would.
"""

from __future__ import annotations

import base64
import json
import ssl
from pathlib import Path
from typing import Any

import kopf
from _webhook_support import admission_review, apply, make_job, running_operator, wait_for_review

from bottleneck_operator.settings import Settings
from bottleneck_operator.webhook import handlers
from bottleneck_operator.webhook.server import configure_admission
from bottleneck_operator_dev.simulation.localprom import free_port


def test_running_operator_serves_the_injection(cluster: Any, tls_pair: tuple[Path, Path], cert_dir: Path) -> None:
    cert, _ = tls_pair
    port = free_port()
    settings = Settings(webhook_port=port, webhook_cert_dir=cert_dir, sidecar_image="registry.example/bn:test")

    registry = kopf.OperatorRegistry()
    handlers.register(registry)

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> Any:
        return kopf.login_with_kubeconfig(**kwargs)

    @kopf.on.startup(registry=registry)
    def startup(settings: kopf.OperatorSettings, **_: Any) -> None:
        configure_admission(settings, operator_settings.injection)  # what the operator does at start-up

    operator_settings = settings
    ctx = ssl.create_default_context(cafile=str(cert))
    url = f"https://127.0.0.1:{port}/inject-sidecar"
    job = make_job({"bottleneck.dev/profile": "true"})

    with running_operator(registry):
        _, body = wait_for_review(
            url, admission_review(job), ctx, until=lambda status, _: status == 200, what="the webhook was never served"
        )
    response = body["response"]
    assert response["allowed"] is True
    mutated = apply(job, json.loads(base64.b64decode(response["patch"])))
    collector = mutated["spec"]["template"]["spec"]["initContainers"][0]
    assert collector["name"] == "bottleneck-collector"
    assert collector["image"] == "registry.example/bn:test"  # the operator's settings, not the defaults
