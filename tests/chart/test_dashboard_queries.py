"""Every query of the Grafana dashboard, its variables substituted, run against a real Prometheus.

The Prometheus holds three simulated Jobs, each in another label layout: the project's own
(``namespace``/``pod`` on GPU series), kube-prometheus-stack's (dcgm-exporter behind a ServiceMonitor:
the workload in ``exported_namespace``/``exported_pod``), and two clusters behind one Thanos
(``cluster``); beside them the operator's own metrics, written by its real registry over the same
minutes, and one owner of every workload kind the kind variable offers.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry import PrometheusClient
from bottleneck_operator_dev.simulation import generate_jobs
from bottleneck_operator_dev.simulation.layouts import layout_series
from bottleneck_operator_dev.simulation.openmetrics import format_labels, format_timestamps, write_series

from ._helpers import ROOT

pytestmark = pytest.mark.prometheus
DASHBOARD = ROOT / "dashboards" / "bottleneck-overview.json"
START = 1767225600.0  # fixed: every run backfills the same blocks
DURATION = 900.0
STEP = 15.0
LAYOUTS = {"project": "", "kube-prometheus-stack": "", "multi-cluster": "a"}  # layout -> the cluster picked


def _dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())  # type: ignore[no-any-return]


def _variables() -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in _dashboard()["templating"]["list"]}


def _kinds() -> list[tuple[str, str]]:
    return [(o["text"], o["value"]) for o in _variables()["kind"]["options"]]


@pytest.fixture(scope="module")
def jobs() -> dict[str, Any]:
    drawn = generate_jobs(
        5, 40, start=START, duration=DURATION, classes=[Bottleneck.IO, Bottleneck.GPU], dcgm_fieldset="full"
    )
    # with the collector, kube-state-metrics, a CPU limit and every profiling field: each panel has data to show
    usable = [j for j in drawn if j.params.env.sidecar and j.params.env.ksm and _complete(j)]
    assert len(usable) >= len(LAYOUTS)
    return dict(zip(LAYOUTS, usable, strict=False))


NEEDED = {
    "bottleneck_sidecar_cpu_periods_total",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "DCGM_FI_PROF_SM_ACTIVE",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    "DCGM_FI_PROF_DRAM_ACTIVE",
}


def _complete(job: Any) -> bool:
    return {s.name for s in layout_series(job, "project")} >= NEEDED


def _operator_metrics(path: Path) -> None:
    """The operator's registry driven through passes, each sample written at its pass's time.

    Written twice: as one Prometheus stores it, and with ``cluster="a"`` as Thanos shows it beside another cluster.
    """
    from prometheus_client.parser import text_string_to_metric_families

    from bottleneck_operator.controller.metrics import OperatorMetrics

    metrics = OperatorMetrics()
    samples: dict[str, list[str]] = {}
    for i, t in enumerate(np.arange(START, START + DURATION + 1, STEP)):
        cls = (Bottleneck.IO, Bottleneck.GPU)[i % 2].value
        metrics.passes.labels("periodic").inc()
        metrics.pass_duration.observe(0.2 + 0.05 * (i % 7))
        metrics.queries.inc(6)
        metrics.verdicts.labels(cls).inc()
        metrics.wasted_gpu_seconds.labels(cls).inc(120.0)
        metrics.reports_by_class.labels(cls).set(1 + i % 3)
        metrics.jobs.labels("running").set(2)
        metrics.errors.labels("prometheus").inc(i % 2)
        for family in text_string_to_metric_families(metrics.render().decode()):
            for s in family.samples:
                if not s.name.endswith("_created"):
                    for extra in ({}, {"cluster": "a"}):
                        line = f"{s.name}{format_labels({**s.labels, **extra})} {s.value!r} {t:.3f}\n"
                        samples.setdefault(s.name, []).append(line)
    with path.open("a") as out:
        for name, lines in samples.items():  # "unknown": OpenMetrics then takes every sample name as is
            out.write(f"# TYPE {name} unknown\n")
            out.writelines(lines)
        out.write("# EOF\n")


def _owners(path: Path) -> None:
    """One workload of each kind the kind variable offers, as kube-state-metrics shows its owner."""
    times = np.arange(START, START + DURATION + 1, STEP)
    lines: dict[str, list[str]] = {"kube_pod_info": [], "kube_job_owner": []}
    for _, value in _kinds():
        name = f"wl-{value.lower()}"
        if value in ("JobSet", "RayJob"):  # these own Jobs, not pods
            labels = {"namespace": "kinds", "job_name": f"{name}-0", "owner_kind": value, "owner_name": name}
            metric = "kube_job_owner"
        else:
            labels = {"namespace": "kinds", "pod": f"{name}-0", "created_by_kind": value, "created_by_name": name}
            metric = "kube_pod_info"
        lines[metric] += [f"{metric}{format_labels(labels)} 1.0 {t:.3f}\n" for t in times]
    with path.open("a") as out:
        for metric, rows in lines.items():
            out.write(f"# TYPE {metric} gauge\n")
            out.writelines(rows)


@pytest.fixture(scope="module")
def prometheus(jobs: dict[str, Any], start_prometheus: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("dashboard") / "metrics.om"
    pairs = []
    for layout, job in jobs.items():
        stamps = {e: format_timestamps(job.state.times(e)) for e in job.state.offsets}
        pairs += [(s, stamps[s.exporter]) for s in layout_series(job, layout, extra_pods=False)]
    with path.open("w") as out:
        write_series(pairs, out)
    text = path.read_text()
    assert text.endswith("# EOF\n")
    path.write_text(text[: -len("# EOF\n")])
    _owners(path)
    _operator_metrics(path)
    return start_prometheus(path)


def _substitute(expr: str, values: dict[str, str]) -> str:
    for name in sorted(values, key=len, reverse=True):  # $__rate_interval before a shorter name
        expr = expr.replace(f"${name}", values[name])
    assert "$" not in expr.replace("$1", ""), expr
    return expr


def _targets() -> list[tuple[str, str, str]]:
    """(panel title, legend, expression) of every query of every panel."""
    return [
        (p["title"], t.get("legendFormat", ""), t["expr"]) for p in _dashboard()["panels"] for t in p.get("targets", [])
    ]


def _run(client: PrometheusClient, expr: str) -> list[Any]:
    return client.query_range(expr, START + 120.0, START + DURATION, 30.0)


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_every_panel_query_returns_series_in_each_layout(prometheus: Any, jobs: dict[str, Any], layout: str) -> None:
    job = jobs[layout]
    values = {
        "cluster": LAYOUTS[layout] or ".*",  # "All" is the regex .*, which also matches no cluster label
        "namespace": job.namespace,
        "job": job.name,
        "kind": "Job",
        "__rate_interval": "1m",
        "__range": "15m",
    }
    client = PrometheusClient(Settings(prometheus_url=prometheus.url))
    empty = []
    for title, legend, expr in _targets():
        if not _run(client, _substitute(expr, values)):
            empty.append(f"{title} / {legend}")
    assert not empty, f"panels with no data on the {layout} layout: {empty}"


def test_gpu_queries_see_only_the_chosen_workload(prometheus: Any, jobs: dict[str, Any]) -> None:
    """Each GPU query reads the workload's own GPUs: a workload without pods gets nothing (the control)."""
    client = PrometheusClient(Settings(prometheus_url=prometheus.url))
    job = jobs["kube-prometheus-stack"]
    values = {"cluster": ".*", "namespace": job.namespace, "job": "no-such-workload", "kind": "Job"}
    values |= {"__rate_interval": "1m", "__range": "15m"}
    gpu = [(t, expr) for t, _, expr in _targets() if "DCGM_FI_" in expr]
    assert len(gpu) >= 5
    for title, expr in gpu:
        assert not _run(client, _substitute(expr, values)), title


def test_cluster_variable_lists_the_clusters(prometheus: Any) -> None:
    client = PrometheusClient(Settings(prometheus_url=prometheus.url))
    query = _variables()["cluster"]["query"]["query"]
    m = re.fullmatch(r"label_values\((.+), (\w+)\)", query)
    assert m, query
    found = {row["metric"].get(m[2]) for row in client.query(f"group by ({m[2]}) ({m[1]})", START + DURATION)}
    assert found == {"a", "b", None}  # the multi-cluster Jobs' two clusters, and the others without the label
    assert _variables()["cluster"]["allValue"] == ".*"


def test_workload_variable_lists_every_kind(prometheus: Any, jobs: dict[str, Any]) -> None:
    variable = _variables()["job"]
    inner = re.fullmatch(r"query_result\((.+)\)", variable["query"]["query"])
    assert inner, variable["query"]
    pattern = re.compile(variable["regex"].strip("/"))
    client = PrometheusClient(Settings(prometheus_url=prometheus.url))
    shown = {text for text, _ in _kinds()}
    for wanted in ("batch Job", "PyTorchJob", "MPIJob", "TrainJob", "JobSet", "RayJob", "LeaderWorkerSet"):
        assert wanted in shown, wanted
    for text, kind in _kinds():
        namespace = "kinds"
        values = {"cluster": ".*", "namespace": namespace, "kind": kind, "__range": "15m"}
        rows = client.query(_substitute(inner[1], values), START + DURATION)
        # Grafana matches the regex against each series as it prints it: {name="..."}
        names = {pattern.search(json.dumps(row["metric"]).replace('": "', '="'))[1] for row in rows}  # type: ignore[index]
        assert names == {f"wl-{kind.lower()}"}, (text, names)
    job = jobs["project"]
    values = {"cluster": ".*", "namespace": job.namespace, "kind": "Job", "__range": "15m"}
    rows = client.query(_substitute(inner[1], values), START + DURATION)
    assert job.name in {row["metric"]["name"] for row in rows}
