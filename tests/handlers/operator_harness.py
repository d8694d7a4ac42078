"""The operator under test: kmock's Kubernetes emulator on a local port, kopf run through KopfRunner.

``kopf run`` reaches the emulator through a kubeconfig that points at it (``KUBECONFIG``), exactly
as it would reach a real API server. Reports, Events and Jobs are then read back over HTTP.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import kopf
import pytest
from kopf.testing import KopfRunner

from bottleneck_operator.handlers import register_handlers
from bottleneck_operator.settings import Settings
from bottleneck_operator_dev.demo.cluster import EVENTS, REPORTS, LocalCluster


def fast_settings(prometheus_url: str, **overrides: Any) -> Settings:
    """Settings for a fast operator: 1-second passes, no metrics port, no webhook."""
    values: dict[str, Any] = {
        "prometheus_url": prometheus_url,
        "interval": 5.0,
        "metrics_port": 0,
        "liveness_endpoint": "",
        "webhook_enabled": False,
        "prometheus_retries": 0,
        "prometheus_timeout": 5.0,
    }
    values.update({k: v for k, v in overrides.items() if k != "interval"})
    settings = Settings(**values)
    # Settings wants interval >= 5 s (sane on a cluster); tests go faster on purpose.
    settings.analysis = settings.analysis.model_copy(update={"interval": float(overrides.get("interval", 1.0))})
    return settings


@contextlib.contextmanager
def run_operator(settings: Settings, **kwargs: Any) -> Iterator[KopfRunner]:
    """kopf run (standalone, cluster-wide) with the operator's handlers in a fresh registry."""
    registry = kopf.OperatorRegistry()
    register_handlers(registry, settings, **kwargs)
    with KopfRunner(
        ["run", "--standalone", "--all-namespaces", "--verbose"],
        registry=registry,
        settings=kopf.OperatorSettings(),
        timeout=60,
    ) as runner:
        yield runner


def wait_for(what: str, predicate: Callable[[], Any], timeout: float = 30.0) -> Any:
    """Poll until ``predicate()`` is truthy; fail with ``what`` when it never is."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)


def reports(cluster: LocalCluster, namespace: str | None = None) -> dict[str, dict[str, Any]]:
    """Reports by name."""
    return {r["metadata"]["name"]: r for r in cluster.list(REPORTS, namespace)}


def events_for(cluster: LocalCluster, job: str, namespace: str | None = None) -> list[dict[str, Any]]:
    """Events whose involvedObject is the Job ``job``."""
    return [
        e
        for e in cluster.list(EVENTS, namespace)
        if (e.get("involvedObject") or {}).get("name") == job and (e.get("involvedObject") or {}).get("kind") == "Job"
    ]
