"""`doctor` on a real Prometheus: series younger than its window, and collectors or exporters not scraped.

The ``up`` series and kube-state-metrics' container info are written beside the simulated exporters'
series as Prometheus itself would have recorded them; the scrape pool is a real one, configured in
the test Prometheus under the name prometheus-operator gives a PodMonitor's pool.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bottleneck_operator.cli import main
from bottleneck_operator.contract.names import COLLECTOR_CONTAINER
from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry import PrometheusClient
from bottleneck_operator.telemetry.doctor import Diagnosis, check
from bottleneck_operator_dev.simulation import generate_jobs
from bottleneck_operator_dev.simulation.layouts import layout_series
from bottleneck_operator_dev.simulation.openmetrics import format_timestamps, write_series
from bottleneck_operator_dev.simulation.series import Series

pytestmark = pytest.mark.prometheus
START = 1767225600.0  # fixed: every run backfills the same blocks
POOL = "podMonitor/bottleneck-system/bn-bottleneck-operator-collectors/0"
ORPHAN = ("ml", "orphan-worker-0")  # a pod with a collector that no PodMonitor reaches
DOWN_EXPORTER = "node"


@pytest.fixture(scope="module")
def jobs() -> list[Any]:
    # Jobs whose exporters missed no scrape: their series' sample rate is their scrape interval.
    drawn = generate_jobs(11, 16, start=START, duration=600.0, classes=[Bottleneck.GPU], dcgm_fieldset="full")
    # one Job: the median over its series is then its exporters' one scrape interval
    whole = [j for j in drawn if j.params.env.sidecar and j.params.env.ksm and _no_gaps(j)][:1]
    assert whole and len(whole[0].pods) > 1
    return whole


def _no_gaps(job: Any) -> bool:
    return all(bool(s.up.all()) for s in layout_series(job, "project"))


def _series(name: str, labels: dict[str, str], values: Any, exporter: str) -> Series:
    values = np.asarray(values, dtype=np.float64)
    return Series(name, "gauge", name, labels, values, exporter, np.ones(values.size, dtype=bool), {})


def _write(jobs: list[Any], path: Path, *, up: bool) -> Path:
    """The jobs' series; with ``up``, what Prometheus records of its scrapes and ksm of the collectors."""
    pairs: list[tuple[Series, Any]] = []
    targets: dict[tuple[str, str], tuple[str, Any]] = {}
    for job in jobs:
        stamps = {e: format_timestamps(job.state.times(e)) for e in job.state.offsets}
        for s in layout_series(job, "project"):
            pairs.append((s, stamps[s.exporter]))
            if s.scrape.get("job"):
                targets[(s.scrape["job"], s.scrape.get("instance", ""))] = (s.exporter, job.state.times(s.exporter))
    if not up:
        return _dump(pairs, path)
    times = jobs[0].state.times("ksm")
    pods = {(job.namespace, p) for job in jobs for p in (sp.pod for sp in job.pods)} | {ORPHAN}
    for ns, pod in sorted(pods):
        info = {"namespace": ns, "pod": pod, "container": COLLECTOR_CONTAINER, "job": "kube-state-metrics"}
        pairs.append((_series("kube_pod_init_container_info", info, np.ones(times.size), "ksm"), times))
        scraped = (ns, pod) != ORPHAN
        target = {"namespace": ns, "pod": pod, "container": COLLECTOR_CONTAINER, "job": POOL.split("/0")[0]}
        pairs.append(
            (_series("up", {**target, "instance": f"{pod}:9105"}, np.full(times.size, float(scraped)), "up"), times)
        )
    for (job_label, instance), (exporter, t) in targets.items():
        value = 0.0 if exporter == DOWN_EXPORTER and instance == min(i for j, i in targets if j == job_label) else 1.0
        pairs.append((_series("up", {"job": job_label, "instance": instance}, np.full(t.size, value), "up"), t))
    return _dump(pairs, path)


def _dump(pairs: list[tuple[Series, Any]], path: Path) -> Path:
    with path.open("w") as out:
        write_series(pairs, out)
    return path


def _diagnose(url: str, at: float) -> Diagnosis:
    s = Settings(prometheus_url=url)
    return check(PrometheusClient(s), s.labels, at)


def _by_family(d: Diagnosis) -> dict[str, Any]:
    return {f.family: f for f in d.findings}


def _wait_for_pool(url: str, timeout: float = 30.0) -> None:
    """Prometheus creates a scrape pool once its target discovery has run (a few seconds after start)."""
    client = PrometheusClient(Settings(prometheus_url=url))
    deadline = time.monotonic() + timeout
    while POOL not in client.scrape_pools():
        assert time.monotonic() < deadline, "Prometheus never created the configured scrape pool"
        time.sleep(0.5)


def _seconds(found: str) -> float:
    m = re.search(r"~(\d+)s scrape interval", found)
    assert m, found
    return float(m[1])


def test_interval_of_series_younger_than_the_window(jobs: list[Any], start_prometheus: Any, tmp_path: Path) -> None:
    prom = start_prometheus(_write(jobs, tmp_path / "m.om", up=False))
    at = START + 150.0  # the Jobs started 2.5 minutes ago: their series are a quarter of the window old
    f = _by_family(_diagnose(prom.url, at))
    for family, exporter in (("dcgm-exporter", "dcgm"), ("cadvisor", "cadvisor"), ("node-exporter", "node")):
        t = jobs[0].state.times(exporter)
        truth = float(np.median(np.diff(t)))
        samples = int(np.count_nonzero(t <= at))
        estimate = _seconds(f[family].found)
        assert abs(estimate - truth) <= 2.0, (family, estimate, truth)
        # what dividing the whole window by the samples would have read: far off, so this test can fail
        assert 600.0 / samples > 2 * truth, (family, samples)
    # and a series older than the window still reads its own interval
    late = _by_family(_diagnose(prom.url, START + 600.0))
    truth = float(np.median(np.diff(jobs[0].state.times("dcgm"))))
    assert abs(_seconds(late["dcgm-exporter"].found) - truth) <= 2.0


def test_unscraped_collectors_and_a_down_exporter_are_named(
    jobs: list[Any], start_prometheus: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a real scrape pool under the PodMonitor's name (its one target refuses: only the pool matters here)
    prom = start_prometheus(_write(jobs, tmp_path / "m.om", up=True), scrape_targets={POOL: ["127.0.0.1:9"]})
    _wait_for_pool(prom.url)
    at = START + 600.0
    d = _diagnose(prom.url, at)
    scrape = _by_family(d)["scrape"]
    pods = len({(job.namespace, p) for job in jobs for p in (sp.pod for sp in job.pods)}) + 1
    assert scrape.status == "degraded"
    assert f"collectors in {pods} pods, {pods - 1} scraped" in scrape.found
    assert f"{pods} collector targets, 1 down" in scrape.found
    assert f"not scraped: {ORPHAN[0]}/{ORPHAN[1]}" in scrape.found
    assert f"PodMonitor pool {POOL}" in scrape.found
    node = re.search(r"node-exporter (\d+)/(\d+) up", scrape.found)
    assert node and int(node[1]) == int(node[2]) - 1, scrape.found
    assert re.search(r"dcgm-exporter (\d+)/\1 up", scrape.found), scrape.found
    assert "bn-metrics" in scrape.fix and "node-exporter: 1 of" in scrape.fix
    assert "no PodMonitor of the collectors" not in scrape.fix  # the pool is there: the targets fail
    assert d.verdict_possible  # unscraped collectors cost signals, not the verdict
    code = main(["doctor", "--prometheus-url", prom.url, "--at", str(at)])
    table = capsys.readouterr().out
    assert code == 0 and "scrape" in table and scrape.fix in table


def test_without_the_pod_monitors_pool_the_fix_names_its_labels(
    jobs: list[Any], start_prometheus: Any, tmp_path: Path
) -> None:
    prom = start_prometheus(_write(jobs, tmp_path / "m.om", up=True))
    scrape = _by_family(_diagnose(prom.url, START + 600.0))["scrape"]
    assert "no PodMonitor pool for the collectors" in scrape.found
    assert "monitoring.labels.release" in scrape.fix and "podMonitorSelectorNilUsesHelmValues" in scrape.fix


def test_all_scraped_is_ok(jobs: list[Any], start_prometheus: Any, tmp_path: Path) -> None:
    prom = start_prometheus(_write(jobs, tmp_path / "m.om", up=False))
    scrape = _by_family(_diagnose(prom.url, START + 600.0))["scrape"]
    assert scrape.status == "ok" and not scrape.fix, scrape
