"""`doctor` on a real Prometheus: each label layout, and a Prometheus missing each family in turn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bottleneck_operator.cli import main
from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry import PrometheusClient
from bottleneck_operator.telemetry.doctor import Diagnosis, check
from bottleneck_operator_dev.simulation import generate_jobs
from bottleneck_operator_dev.simulation.layouts import layout_series, write_layout
from bottleneck_operator_dev.simulation.openmetrics import format_timestamps, write_series

pytestmark = pytest.mark.prometheus
START = 1767225600.0  # fixed: every run backfills the same blocks
AT = START + 600.0
FAMILY_OF = {
    "dcgm": "dcgm-exporter",
    "ksm": "kube-state-metrics",
    "cadvisor": "cadvisor",
    "node": "node-exporter",
    "sidecar": "collector",
}


@pytest.fixture(scope="module")
def jobs() -> list[Any]:
    # full DCGM fields and a collector in every pod: every family is there to be taken away
    drawn = generate_jobs(
        7, 6, start=START, duration=600.0, classes=[Bottleneck.GPU, Bottleneck.IO], dcgm_fieldset="full"
    )
    return [j for j in drawn if j.params.env.sidecar and j.params.env.ksm][:2]


def _write(jobs: list[Any], path: Path, layout: str = "project", without: str = "") -> Path:
    with path.open("w") as out:
        if not without:
            write_layout(jobs, out, layout)
        else:
            pairs = []
            for job in jobs:
                stamps = {e: format_timestamps(job.state.times(e)) for e in job.state.offsets}
                pairs += [(s, stamps[s.exporter]) for s in layout_series(job, layout) if s.exporter != without]
            write_series(pairs, out)
    return path


def _diagnose(url: str, **settings: Any) -> Diagnosis:
    s = Settings(prometheus_url=url, **settings)
    return check(PrometheusClient(s), s.labels, AT)


def _by_family(d: Diagnosis) -> dict[str, Any]:
    return {f.family: f for f in d.findings}


@pytest.mark.parametrize("layout", ["project", "kube-prometheus-stack", "multi-cluster"])
def test_doctor_on_each_layout(
    layout: str, jobs: list[Any], start_prometheus: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert len(jobs) == 2
    prom = start_prometheus(_write(jobs, tmp_path / "m.om", layout))
    d = _diagnose(prom.url)
    f = _by_family(d)
    assert d.verdict_possible
    assert "fields: full" in f["dcgm-exporter"].found
    if layout == "kube-prometheus-stack":
        assert d.layout.describe() == {"dcgm": "exported-labels", "node": "pod-join", "cadvisor": "no-spec"}
        assert "host label hostname" in f["dcgm-exporter"].found
        assert "/metrics/resource" in f["cadvisor"].found
        assert "pod PSI" in f["cadvisor"].found and "pressure" in f["cadvisor"].can  # the kubelet's (>= 1.34)
    else:
        assert d.layout.describe() == {"dcgm": "pod-labels", "node": "uname-join", "cadvisor": "with-spec"}
        assert "pod PSI" not in f["cadvisor"].found
    assert all(x.status == "ok" for x in d.findings if x.family != "kube-state-metrics")
    if layout == "multi-cluster":
        assert f["kube-state-metrics"].status == "degraded"
        assert "selectorMatchers" in f["kube-state-metrics"].fix and "clusters a, b" in f["kube-state-metrics"].found
        one = _by_family(_diagnose(prom.url, selector_matchers=['cluster="a"']))
        assert one["kube-state-metrics"].status == "ok"
    else:
        assert f["kube-state-metrics"].status == "ok"
    # the command: same content as JSON, exit 0
    code = main(["doctor", "--prometheus-url", prom.url, "--at", str(AT), "--output", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["verdictPossible"] is True and out["layout"] == d.layout.describe()


@pytest.mark.parametrize("exporter", sorted(FAMILY_OF))
def test_doctor_on_a_prometheus_missing_one_family(
    exporter: str, jobs: list[Any], start_prometheus: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prom = start_prometheus(_write(jobs, tmp_path / "m.om", without=exporter))
    d = _diagnose(prom.url)
    f = _by_family(d)
    gone = f[FAMILY_OF[exporter]]
    assert gone.status in ("missing", "degraded") and gone.fix and gone.cannot
    assert all(x.status == "ok" for x in d.findings if x.family != gone.family)
    code = main(["doctor", "--prometheus-url", prom.url, "--at", str(AT)])
    table = capsys.readouterr().out
    assert gone.fix in table and "To fix:" in table
    if exporter == "dcgm":
        assert gone.status == "missing" and not d.verdict_possible and code == 3
        assert "Verdicts possible: NO" in table
    else:
        assert gone.status == "degraded" and d.verdict_possible and code == 0


def test_unmapped_gpus_and_a_failing_node_join_are_told_apart(
    jobs: list[Any], start_prometheus: Any, tmp_path: Path
) -> None:
    # GPUs without pod labels (pod mapping off) and node-exporter whose host names are not node
    # names with no exporter pod in kube_pod_info: both named, with the change that fixes them.
    pairs = []
    for job in jobs:
        stamps = {e: format_timestamps(job.state.times(e)) for e in job.state.offsets}
        for s in layout_series(job, "kube-prometheus-stack"):
            if s.exporter == "dcgm":
                s.labels = {k: v for k, v in s.labels.items() if not k.startswith("exported_")}
            if s.name == "kube_pod_info" and s.labels.get("namespace") == "monitoring":
                continue
            pairs.append((s, stamps[s.exporter]))
    path = tmp_path / "m.om"
    with path.open("w") as out:
        write_series(pairs, out)
    d = _diagnose(start_prometheus(path).url)
    f = _by_family(d)
    assert d.layout.dcgm == "unmapped" and f["dcgm-exporter"].status == "missing"
    # pod mapping is dcgm-exporter's --kubernetes; kubernetes.enablePodLabels only copies pods' own labels
    fix = f["dcgm-exporter"].fix
    assert "--kubernetes" in fix and "DCGM_EXPORTER_KUBERNETES=true" in fix and "pod-resources" in fix
    assert "enablePodLabels=true" not in fix
    assert d.layout.node == "no-join" and f["node-exporter"].status == "degraded"
    assert "__meta_kubernetes_pod_node_name" in f["node-exporter"].fix
    assert not d.verdict_possible


def test_the_operator_logs_and_exports_the_same_check_at_start(
    jobs: list[Any], start_prometheus: Any, tmp_path: Path
) -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from bottleneck_operator.telemetry.doctor import export

    prom = start_prometheus(_write(jobs, tmp_path / "m.om", without="sidecar"))
    registry = CollectorRegistry()
    d = _diagnose(prom.url)
    export(d, registry)
    text = generate_latest(registry).decode()
    assert 'bottleneck_monitoring_family{family="collector",required="false",status="degraded"} 1.0' in text
    assert 'bottleneck_monitoring_family{family="dcgm-exporter",required="true",status="ok"} 1.0' in text
    assert "collector: degraded (no bottleneck_sidecar_* series); fix: annotate the Job" in d.summary()


def test_doctor_on_an_unreachable_prometheus_exits_4(bad_server: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["doctor", "--prometheus-url", bad_server.refused_url, "--at", str(AT)])
    assert code == 4
    err = capsys.readouterr().err
    assert "error" in err and "Traceback" not in err
