"""The kubelet's pod PSI (``container_pressure_*``) preferred over the collector's, read from a real Prometheus.

Four pods of one Job, each stalled on CPU at a steady rate the test sets, with the kubelet's and
the collector's counters apart so the answer shows which was read:

- ``train-both``: the kubelet's pod-level cgroup at 0.30, the collector at 0.10, and the kubelet's
  series stopping halfway (its last half is the collector's);
- ``train-collector``: the collector alone (a cluster older than Kubernetes 1.34);
- ``train-kubelet``: the kubelet alone (no collector injected);
- ``train-containers``: the kubelet's containers only (the pod-level cgroup dropped by relabelling):
  the most pressured workload container, never the collector's own container.

The data are written relative to the time the test runs.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import pytest

from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry import PrometheusClient, WindowRequest, fetch_windows

pytestmark = pytest.mark.prometheus

NOW = float(math.floor(time.time() / 60) * 60)
START = NOW - 1800
SCRAPE = 15
STEP = 30.0
HALF = START + 900

KUBELET = "container_pressure_cpu_waiting_seconds_total"
COLLECTOR = "bottleneck_sidecar_pressure_waiting_seconds_total"
# (pod, container, rate, until): the kubelet's cgroups of each pod.
KUBELET_SERIES = [
    ("train-both", "", 0.30, HALF),
    ("train-both", "trainer", 0.25, HALF),
    ("train-kubelet", "", 0.40, NOW),
    ("train-containers", "trainer", 0.20, NOW),
    ("train-containers", "loader", 0.50, NOW),
    ("train-containers", "bottleneck-collector", 0.90, NOW),
]
# (pod, rate): the collector's pod cgroup.
COLLECTOR_SERIES = [("train-both", 0.10), ("train-collector", 0.15)]
PODS = ["train-both", "train-collector", "train-containers", "train-kubelet"]


def _openmetrics() -> str:
    times = range(int(START), int(NOW) + 1, SCRAPE)
    out = ["# TYPE kube_pod_info gauge"]
    for pod in PODS:
        labels = f'namespace="ml",pod="{pod}",node="n1",created_by_kind="Job",created_by_name="train",job="kube-state-metrics"'
        out += [f"kube_pod_info{{{labels}}} 1 {t}" for t in times]
    out.append(f"# TYPE {KUBELET.removesuffix('_total')} counter")
    for pod, container, rate, until in KUBELET_SERIES:
        labels = f'namespace="ml",pod="{pod}",container="{container}",job="kubelet"'
        out += [f"{KUBELET}{{{labels}}} {(t - START) * rate:.3f} {t}" for t in times if t <= until]
    out.append(f"# TYPE {COLLECTOR.removesuffix('_total')} counter")
    for pod, rate in COLLECTOR_SERIES:
        labels = f'namespace="ml",pod="{pod}",node="n1",resource="cpu",job="bottleneck-collector"'
        out += [f"{COLLECTOR}{{{labels}}} {(t - START) * rate:.3f} {t}" for t in times]
    out.append("# EOF")
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def window(start_prometheus: Any) -> Any:
    prom = start_prometheus(_openmetrics())
    settings = Settings(prometheus_url=prom.url, prometheus_retries=0, step=STEP)
    request = WindowRequest("ml", "train", START + 300, NOW - 60)
    return fetch_windows(
        PrometheusClient(settings.prometheus), [request], settings.labels, step=settings.analysis.step
    )[("ml", "train")]


def _psi(window: Any, pod: str) -> tuple[np.ndarray, np.ndarray]:
    found = {p.pod: p for p in window.pods}[pod]
    return window.timestamps, found.signals["sc_psi_cpu_some"]


def test_the_kubelets_pod_cgroup_is_preferred_and_the_collector_fills_its_gaps(window: Any) -> None:
    ts, psi = _psi(window, "train-both")
    kubelet = ts < HALF - 120  # clear of the rate range that straddles the kubelet's last sample
    collector = ts > HALF + 360  # past the lookback in which its last samples still count
    assert kubelet.sum() >= 10 and collector.sum() >= 10
    np.testing.assert_allclose(psi[kubelet], 0.30, atol=0.01)
    np.testing.assert_allclose(psi[collector], 0.10, atol=0.01)
    assert any("from the kubelet" in note for note in window.quality.notes)


def test_either_source_alone_gives_the_signal(window: Any) -> None:
    _, collector_only = _psi(window, "train-collector")
    np.testing.assert_allclose(collector_only, 0.15, atol=0.01)
    _, kubelet_only = _psi(window, "train-kubelet")
    np.testing.assert_allclose(kubelet_only, 0.40, atol=0.01)


def test_without_the_pod_cgroup_the_busiest_workload_container_stands_in(window: Any) -> None:
    _, psi = _psi(window, "train-containers")
    np.testing.assert_allclose(psi, 0.50, atol=0.01)  # the loader; not the collector's own 0.90


def test_the_kubelets_entries_are_not_signals_of_their_own(window: Any) -> None:
    for pod in window.pods:
        assert not any(name.startswith("_") for name in pod.signals), pod.pod
