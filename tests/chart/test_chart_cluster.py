"""What the chart ships for cluster-wide insight: the summary's RBAC, the cluster alerts (evaluated by
promtool's rule unit tests on series with explicit times), the kube-state-metrics config checked
against the CRDs, and the cluster dashboard's queries run by a real Prometheus on both label layouts.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from ._helpers import CHART, ROOT, Manifest, find, one, render_docs

DASHBOARD = ROOT / "dashboards" / "bottleneck-cluster.json"
KSM_CONFIG = CHART / "files" / "kube-state-metrics-bottleneck.yaml"
ALERTS = {"clusterAlerts": {"enabled": True, "alertLabels": {"team": "ml"}, "minGpuHoursLost": 4}}
needs_promtool = pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")


def _cluster_rule(docs: list[Manifest]) -> Manifest:
    return next(r for r in find(docs, "PrometheusRule") if r["metadata"]["name"].endswith("-cluster"))


def test_cluster_alerts_are_off_by_default(rendered: dict[str, list[Manifest]]) -> None:
    assert not [r for r in find(rendered["default"], "PrometheusRule") if r["metadata"]["name"].endswith("-cluster")]


@pytest.mark.parametrize("scenario", ["default", "namespaced"])
def test_the_operator_may_write_the_one_summary_and_nothing_else(
    rendered: dict[str, list[Manifest]], scenario: str
) -> None:
    rules = one(rendered[scenario], "ClusterRole", "bn-bottleneck-operator")["rules"]
    summary = [r for r in rules if any(res.startswith("clusterbottlenecksummaries") for res in r["resources"])]
    assert summary == [
        {
            "apiGroups": ["bottleneck.dev"],
            "resources": ["clusterbottlenecksummaries"],
            "verbs": ["create"],
        },
        {
            "apiGroups": ["bottleneck.dev"],
            "resources": ["clusterbottlenecksummaries/status"],
            "verbs": ["patch"],
        },
    ]


def _promtool(tmp_path: Path, docs: list[Manifest], tests: list[dict[str, Any]]) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": _cluster_rule(docs)["spec"]["groups"]}))
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({"rule_files": [rules.name], "evaluation_interval": "1m", "tests": tests}))
    result = subprocess.run(["promtool", "test", "rules", str(suite)], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def _expected(docs: list[Manifest], alert: str, labels: dict[str, str], value: str) -> dict[str, Any]:
    rule = next(r for r in _cluster_rule(docs)["spec"]["groups"][0]["rules"] if r.get("alert") == alert)

    def fill(text: str) -> str:
        text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m[1]], text)
        return re.sub(r"\{\{ \$value[^}]*\}\}", value, text)

    return {"exp_labels": labels, "exp_annotations": {k: fill(v) for k, v in rule["annotations"].items()}}


@needs_promtool
@pytest.mark.parametrize("layout", ["own", "exported"])
def test_a_job_io_bound_for_half_an_hour_with_gpu_hours_lost_fires(chart: Any, tmp_path: Path, layout: str) -> None:
    docs = render_docs(chart, ALERTS)
    where = 'namespace="ml"' if layout == "own" else 'namespace="kube-system", exported_namespace="ml"'
    big, small = f'{where}, report="big", workload_kind="PyTorchJob"', f'{where}, report="small", workload_kind="Job"'
    series = [
        # 16 GPUs at 25 %: 12 idle; IO-bound from minute 0: the subquery's 31 one-minute samples of the last
        # 30 minutes (both ends included) make 12 x 31 / 60 = 6.2 GPU-hours
        {"series": f"bottleneck_report_gpus{{{big}}}", "values": "16x90"},
        {"series": f"bottleneck_report_gpu_active{{{big}}}", "values": "0.25x90"},
        {"series": f'bottleneck_report_info{{{big}, bottleneck="IO", phase="Running"}}', "values": "1x90"},
        # 2 GPUs: IO-bound as long, but 0.75 GPU-hours lost: under the threshold
        {"series": f"bottleneck_report_gpus{{{small}}}", "values": "2x90"},
        {"series": f"bottleneck_report_gpu_active{{{small}}}", "values": "0.25x90"},
        {"series": f'bottleneck_report_info{{{small}, bottleneck="IO", phase="Running"}}', "values": "1x90"},
    ]
    labels = {"job_namespace": "ml", "report": "big", "severity": "warning", "team": "ml"}
    tests = [
        {
            "interval": "1m",
            "input_series": series,
            "alert_rule_test": [
                {"eval_time": "20m", "alertname": "BottleneckJobIOBound", "exp_alerts": []},
                {
                    "eval_time": "70m",
                    "alertname": "BottleneckJobIOBound",
                    "exp_alerts": [_expected(docs, "BottleneckJobIOBound", labels, "6.2")],
                },
            ],
        }
    ]
    _promtool(tmp_path, docs, tests)


@needs_promtool
def test_a_hot_spot_named_for_an_hour_fires(chart: Any, tmp_path: Path) -> None:
    docs = render_docs(chart, ALERTS)
    spot = 'dimension="node", location="gpu-node-7", symptom="IO"'
    tests = [
        {
            "interval": "1m",
            "input_series": [
                {"series": f"bottleneck_summary_hotspot_jobs{{{spot}}}", "values": "9x120"},
                {
                    "series": 'bottleneck_summary_hotspot_jobs{dimension="rack", location="r2", symptom="IO"}',
                    "values": "2x120",
                },  # fewer than hotSpotMinJobs
            ],
            "alert_rule_test": [
                {"eval_time": "30m", "alertname": "BottleneckHotSpot", "exp_alerts": []},
                {
                    "eval_time": "90m",
                    "alertname": "BottleneckHotSpot",
                    "exp_alerts": [
                        _expected(
                            docs,
                            "BottleneckHotSpot",
                            {
                                "dimension": "node",
                                "location": "gpu-node-7",
                                "symptom": "IO",
                                "severity": "warning",
                                "team": "ml",
                            },
                            "9",
                        )
                    ],
                },
            ],
        }
    ]
    _promtool(tmp_path, docs, tests)


def _crd_paths(crd_file: str) -> set[tuple[str, ...]]:
    schema = yaml.safe_load((ROOT / "crds" / crd_file).read_text())["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    paths: set[tuple[str, ...]] = set()

    def walk(node: dict[str, Any], path: tuple[str, ...]) -> None:
        paths.add(path)
        for key, child in (node.get("properties") or {}).items():
            walk(child, (*path, key))
        if "items" in node:
            walk(node["items"], (*path, "[]"))

    walk(schema, ())
    return paths | {("metadata", "namespace"), ("metadata", "name")}


def test_every_path_the_kube_state_metrics_config_reads_is_in_the_crds() -> None:
    config = yaml.safe_load(KSM_CONFIG.read_text())
    files = {"BottleneckReport": "bottleneckreports.bottleneck.dev.yaml",
             "ClusterBottleneckSummary": "clusterbottlenecksummaries.bottleneck.dev.yaml"}  # fmt: skip
    checked = 0
    for resource in config["spec"]["resources"]:
        known = _crd_paths(files[resource["groupVersionKind"]["kind"]])
        for path in resource.get("labelsFromPath", {}).values():
            assert tuple(path) in known, path
            checked += 1
        for metric in resource["metrics"]:
            each = metric["each"]
            spec = each[each["type"].lower()]
            base = tuple(spec.get("path", []))
            if base and (*base, "[]") in known:
                base = (*base, "[]")  # an array: one series per item, paths relative to it
            for path in [spec.get("valueFrom", []), *spec.get("labelsFromPath", {}).values()]:
                assert (*base, *path) in known, (metric["name"], path)
                checked += 1
    assert checked > 20


def _openmetrics(t0: float) -> str:
    """The operator's gauges and kube-state-metrics' series in both layouts: cluster a as the project's own
    ServiceMonitor stores them, cluster b with the targets' namespace kept (exported_namespace)."""
    families: dict[str, list[tuple[str, float]]] = {}
    for cluster, where in (("a", 'namespace="{ns}"'), ("b", 'namespace="monitoring", exported_namespace="{ns}"')):
        for ns, cls, jobs, lost in (("ml", "IO", 4, 12.5), ("ml", "GPU", 9, 1.0), ("vision", "CPU", 2, 3.0)):
            labels = f'cluster="{cluster}", {where.format(ns=ns)}, bottleneck="{cls}"'
            families.setdefault("bottleneck_operator_cluster_jobs", []).append((labels, jobs))
            families.setdefault("bottleneck_operator_cluster_gpu_hours_lost", []).append((labels, lost))
        report = f'cluster="{cluster}", {where.format(ns="ml")}, report="r1", workload="r1", workload_kind="PyTorchJob"'
        families.setdefault("bottleneck_report_info", []).append((f'{report}, bottleneck="IO", phase="Running"', 1))
        families.setdefault("bottleneck_report_gpus", []).append((report, 8))
        families.setdefault("bottleneck_report_gpu_active", []).append((report, 0.25))
        families.setdefault("bottleneck_operator_cluster_hotspots", []).append(
            (f'cluster="{cluster}", namespace="monitoring", dimension="node", symptom="IO"', 1)
        )
        families.setdefault("bottleneck_operator_cluster_stragglers", []).append(
            (f'cluster="{cluster}", {where.format(ns="ml")}', 2)
        )
    lines = []
    for name, samples in families.items():
        lines.append(f"# TYPE {name} gauge")
        for labels, value in samples:
            lines += [f"{name}{{{labels.replace(', ', ',')}}} {value} {t0 + k * 60:.0f}" for k in range(10)]
    return "\n".join([*lines, "# EOF", ""])


def _query(url: str, expr: str, at: float) -> list[tuple[tuple[tuple[str, str], ...], float]]:
    args = urllib.parse.urlencode({"query": expr, "time": f"{at:.0f}"})
    with urllib.request.urlopen(f"{url}/api/v1/query?{args}", timeout=10) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    return sorted((tuple(sorted(r["metric"].items())), float(r["value"][1])) for r in body["data"]["result"])


@pytest.mark.prometheus
def test_the_dashboard_reads_both_label_layouts(start_prometheus: Any) -> None:
    t0 = float(int(time.time()) - 1800)  # the last half hour, so the blocks sit beside Prometheus's head
    prom = start_prometheus(_openmetrics(t0))
    at = t0 + 9 * 60
    dashboard = json.loads(DASHBOARD.read_text())
    kinds = next(v for v in dashboard["templating"]["list"] if v["name"] == "kind")
    assert kinds["query"].split(",") == ["Job", "PyTorchJob", "MPIJob", "JobSet", "TrainJob"]
    compared = 0
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            if "bottleneck_summary_" in target["expr"] or "rate(" in target["expr"]:
                continue  # series this test does not hold
            results = {}
            for cluster in ("a", "b"):
                expr = target["expr"].replace("$cluster", cluster).replace("$namespace", "ml").replace("$kind", ".*")
                results[cluster] = [(tuple(kv for kv in labels if kv[0] != "cluster"), v)
                                    for labels, v in _query(prom.url, expr, at)]  # fmt: skip
            assert results["a"], (panel["title"], "no data")
            assert results["a"] == results["b"], panel["title"]
            compared += 1
    assert compared >= 8
    # Only ml's Jobs: the namespace filter holds in both layouts.
    jobs = next(p for p in dashboard["panels"] if p["title"] == "Jobs by namespace and bottleneck")["targets"][0]
    got = _query(prom.url, jobs["expr"].replace("$cluster", "b").replace("$namespace", "ml"), at)
    assert {dict(labels)["job_namespace"] for labels, _ in got} == {"ml"}


def test_the_chart_carries_the_cluster_dashboard(chart: Any) -> None:
    assert (CHART / "files" / DASHBOARD.name).read_bytes() == DASHBOARD.read_bytes(), "run `make chart-sync`"
    docs = render_docs(chart, {"grafanaDashboard": {"enabled": True}})
    config = one(docs, "ConfigMap", "bn-bottleneck-operator-dashboard")
    assert json.loads(config["data"][DASHBOARD.name]) == json.loads(DASHBOARD.read_text())
