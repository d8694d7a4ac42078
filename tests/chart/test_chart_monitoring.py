"""The monitors' labels, the PodMonitor's `auto`, the counters file, the dashboard and the metric names they use."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml

from bottleneck_operator.contract.signals import SIGNALS

from ._helpers import CHART, NAMESPACE, PROMETHEUS_OPERATOR_APIS, ROOT, Manifest, find, one, render, render_docs

COUNTERS = CHART / "files" / "dcgm-counters.csv"
# dcgm-exporter's own shipped counters files, vendored unchanged (see data/dcgm-exporter/README.md).
UPSTREAM_COUNTERS = Path(__file__).parent / "data" / "dcgm-exporter"
DASHBOARD = ROOT / "dashboards" / "bottleneck-overview.json"

# DESIGN.md's dcgm-exporter contract: every field the analysis reads, and its Prometheus type.
DESIGN_FIELDS = {
    "DCGM_FI_DEV_GPU_UTIL": "gauge",
    "DCGM_FI_DEV_MEM_COPY_UTIL": "gauge",
    "DCGM_FI_DEV_FB_USED": "gauge",
    "DCGM_FI_DEV_FB_FREE": "gauge",
    "DCGM_FI_DEV_POWER_USAGE": "gauge",
    "DCGM_FI_DEV_SM_CLOCK": "gauge",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": "counter",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "gauge",
    "DCGM_FI_PROF_SM_ACTIVE": "gauge",
    "DCGM_FI_PROF_SM_OCCUPANCY": "gauge",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": "gauge",
    "DCGM_FI_PROF_DRAM_ACTIVE": "gauge",
    "DCGM_FI_PROF_PCIE_TX_BYTES": "gauge",
    "DCGM_FI_PROF_PCIE_RX_BYTES": "gauge",
    "DCGM_FI_PROF_NVLINK_TX_BYTES": "gauge",
    "DCGM_FI_PROF_NVLINK_RX_BYTES": "gauge",
}

# The collector's fixed metric names (the sidecar contract), with their exposition suffixes.
SIDECAR_METRICS = {
    "bottleneck_sidecar_cpu_usage_seconds_total",
    "bottleneck_sidecar_cpu_periods_total",
    "bottleneck_sidecar_cpu_throttled_periods_total",
    "bottleneck_sidecar_cpu_throttled_seconds_total",
    "bottleneck_sidecar_pressure_waiting_seconds_total",
    "bottleneck_sidecar_pressure_stalled_seconds_total",
    "bottleneck_sidecar_io_read_bytes_total",
    "bottleneck_sidecar_io_write_bytes_total",
    "bottleneck_sidecar_io_reads_total",
    "bottleneck_sidecar_memory_current_bytes",
    "bottleneck_sidecar_memory_max_bytes",
    "bottleneck_sidecar_memory_major_faults_total",
    "bottleneck_sidecar_memory_swapins_total",
    "bottleneck_sidecar_memory_oom_kills_total",
    "bottleneck_sidecar_processes",
    "bottleneck_sidecar_info",
}

# Operator metrics the dashboard reads that the operator does not export yet (asked for; the panel
# shows "No data" until then).
PENDING_OPERATOR_METRICS = {"bottleneck_operator_wasted_gpu_seconds_total"}


MONITOR_KINDS = ("PodMonitor", "ServiceMonitor", "PrometheusRule")
MONITORS_ON: dict[str, Any] = {
    "metrics": {"serviceMonitor": {"enabled": True}},
    "prometheusRule": {"enabled": True},
}


def _notes(rendered: dict[str, str]) -> str:
    return next(text for path, text in rendered.items() if path.endswith("NOTES.txt"))


def _docs(rendered: dict[str, str]) -> list[Manifest]:
    return [
        d for path, text in rendered.items() if not path.endswith("NOTES.txt") for d in yaml.safe_load_all(text) if d
    ]


def test_default_values_render_and_lint_without_the_prometheus_operator(chart: Any) -> None:
    # `helm template` with no --api-versions, as chart-testing and GitOps tools run it
    out = render(chart, {}, api_versions=[])
    docs = _docs(out)
    assert not find(docs, "PodMonitor")
    assert one(docs, "MutatingWebhookConfiguration")  # the collectors are still injected ...
    notes = _notes(out)
    assert "THE COLLECTORS ARE NOT SCRAPED" in notes  # ... and the user is told nobody reads them
    assert "sidecar.podMonitor.enabled=auto" in notes and "bottleneck-operator doctor" in notes
    # `helm template` as helm-python-sdk runs it: no API versions at all
    assert "kind: PodMonitor" not in "".join(chart.render(values={}, namespace=NAMESPACE).values())
    report = helm.lint(CHART, {}, strict=True, namespace=NAMESPACE, kube_version="v1.29.0")
    assert not report["errors"] and not [m for m in report["messages"] if m["severity"] >= 2], report


def test_default_values_create_the_pod_monitor_where_the_kind_is_served(chart: Any) -> None:
    out = render(chart, {}, api_versions=PROMETHEUS_OPERATOR_APIS)
    assert one(_docs(out), "PodMonitor")["metadata"]["name"] == "bn-bottleneck-operator-collectors"
    assert "NOT SCRAPED" not in _notes(out)


def test_no_notes_warning_without_injection(chart: Any) -> None:
    assert "NOT SCRAPED" not in _notes(render(chart, {"webhook": {"enabled": False}}, api_versions=[]))


def test_every_monitor_takes_the_shared_labels_and_its_own_over_them(chart: Any) -> None:
    values = {
        **MONITORS_ON,
        "monitoring": {"labels": {"release": "kube-prometheus-stack", "team": "ml"}},
        "sidecar": {"podMonitor": {"labels": {"team": "gpu"}}},
    }
    docs = render_docs(chart, values)
    for kind in MONITOR_KINDS:
        labels = one(docs, kind)["metadata"]["labels"]
        assert labels["release"] == "kube-prometheus-stack", kind
        assert labels["team"] == ("gpu" if kind == "PodMonitor" else "ml"), kind
        assert labels["app.kubernetes.io/name"] == "bottleneck-operator", kind  # the chart's own stay
    # the shared default is empty: no release label unless asked for
    for kind in MONITOR_KINDS:
        assert "release" not in one(render_docs(chart, MONITORS_ON), kind)["metadata"]["labels"]


def test_pod_monitor_setting_rejects_other_words() -> None:
    report = helm.lint(CHART, {"sidecar": {"podMonitor": {"enabled": "yes"}}}, namespace=NAMESPACE)
    assert report["errors"] or any(m["severity"] >= 3 for m in report["messages"]), report


def parse_counters(text: str) -> dict[str, str]:
    """dcgm-exporter's counters format: `FIELD, type, help`, '#' comments; help may hold no comma."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = [p.strip() for p in line.split(",")]
        assert len(parts) == 3, f"not 'field, type, help': {line!r}"
        name, kind, help_text = parts
        assert re.fullmatch(r"DCGM_FI_[A-Z0-9_]+", name), name
        # label: static information dcgm-exporter attaches as a label to every metric (driver version)
        assert kind in {"gauge", "counter", "label"}, line
        assert help_text, line
        assert name not in fields, f"{name} twice"
        fields[name] = kind
    return fields


def test_counters_turn_on_every_field_the_analysis_uses() -> None:
    fields = parse_counters(COUNTERS.read_text())
    for name, kind in DESIGN_FIELDS.items():
        assert fields.get(name) == kind, (name, fields.get(name))
    # and whatever the signal catalogue reads, with counters where it takes a rate
    for spec in SIGNALS.values():
        for name in re.findall(r"DCGM_FI_[A-Z0-9_]+", spec.description):
            assert name in fields, (spec.name, name)
            if spec.description.startswith("rate of"):
                assert fields[name] == "counter", name


@pytest.mark.parametrize("shipped", ["default-counters.csv", "dcp-metrics-included.csv"])
def test_counters_are_a_superset_of_dcgm_exporters_shipped_files(shipped: str) -> None:
    # Pointing another release's dcgm-exporter at our file must not take away a series that its
    # dashboards or alerts read: every field it ships, with the same type.
    ours = parse_counters(COUNTERS.read_text())
    theirs = parse_counters((UPSTREAM_COUNTERS / shipped).read_text())
    assert len(theirs) >= 20, "the vendored file did not parse"
    missing = {name: kind for name, kind in theirs.items() if ours.get(name) != kind}
    assert not missing, f"fields of dcgm-exporter's {shipped} missing or of another type: {missing}"


def test_counters_keep_the_health_and_media_fields() -> None:
    # the fields an earlier version of our file dropped, named so a trimmed copy fails here too
    fields = parse_counters(COUNTERS.read_text())
    for name in (
        "DCGM_FI_DEV_ENC_UTIL",
        "DCGM_FI_DEV_DEC_UTIL",
        "DCGM_FI_DEV_FB_RESERVED",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "DCGM_FI_DRIVER_VERSION",
    ):
        assert name in fields, name
    assert fields["DCGM_FI_DRIVER_VERSION"] == "label"


def test_counter_parser_catches_mistakes() -> None:
    with pytest.raises(AssertionError):
        parse_counters("DCGM_FI_DEV_GPU_UTIL, gauge, utilisation, in percent\n")
    with pytest.raises(AssertionError):
        parse_counters("DCGM_FI_DEV_GPU_UTIL, histogram, utilisation\n")


def test_counters_config_map(rendered: dict[str, list[Manifest]]) -> None:
    config = one(rendered["full"], "ConfigMap", "bottleneck-dcgm-counters")
    assert config["metadata"]["namespace"] == "gpu-monitoring"
    # another release's dcgm-exporter mounts it: uninstalling this chart must not pull it from under it
    assert config["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    text = COUNTERS.read_text().rstrip("\n")
    # one key for dcgm-exporter's chart (-f), one for the GPU Operator
    assert config["data"] == {"custom-counters.csv": text, "dcgm-metrics.csv": text}


def test_dashboard_config_map(rendered: dict[str, list[Manifest]]) -> None:
    config = next(c for c in find(rendered["full"], "ConfigMap") if c["metadata"]["name"].endswith("-dashboard"))
    assert config["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert config["metadata"]["annotations"] == {"grafana_folder": "GPU"}
    assert config["metadata"]["namespace"] == "monitoring"
    assert json.loads(config["data"]["bottleneck-overview.json"]) == json.loads(DASHBOARD.read_text())


def _dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())  # type: ignore[no-any-return]


def _exprs(dashboard: dict[str, Any]) -> list[str]:
    return [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]


def test_dashboard_has_the_views_it_promises() -> None:
    dashboard = _dashboard()
    assert dashboard["uid"] == "bottleneck-overview"
    titles = {p["title"] for p in dashboard["panels"]}
    for wanted in (
        "Jobs by bottleneck (now)",
        "Jobs by bottleneck over time",
        "Verdicts written by class",
        "GPU activity vs input pipeline",
        "GPU activity vs interconnect",
        "Wasted GPU-hours by bottleneck",
    ):
        assert wanted in titles
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    assert variables == {"datasource", "cluster", "namespace", "kind", "job"}
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}"


def _metric_names(expr: str) -> set[str]:
    return set(re.findall(r"\b((?:DCGM_FI|bottleneck_operator|bottleneck_sidecar)_[A-Za-z0-9_]+)", expr))


def test_dashboard_reads_metrics_that_exist() -> None:
    declared = set(
        re.findall(
            r'"(bottleneck_operator_[a-z_]+)"',
            (ROOT / "operator/bottleneck_operator/controller/metrics.py").read_text(),
        )
    )
    exposed = declared | {f"{n}{s}" for n in declared for s in ("_bucket", "_sum", "_count")}
    counters = parse_counters(COUNTERS.read_text())
    seen: set[str] = set()
    for expr in _exprs(_dashboard()):
        for name in _metric_names(expr):
            seen.add(name)
            if name.startswith("DCGM_FI"):
                assert name in counters, name
            elif name.startswith("bottleneck_sidecar"):
                assert name in SIDECAR_METRICS, name
            else:
                assert name in exposed or name in PENDING_OPERATOR_METRICS, name
    assert {"bottleneck_operator_verdicts_total", "bottleneck_operator_reports"} <= seen


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed: run `make test`")
def test_dashboard_queries_are_valid_promql(tmp_path: Path) -> None:
    # promtool parses every expression as a recording rule; Grafana's variables become plain values.
    substitutions = {
        "$__rate_interval": "5m",
        "$__range": "6h",
        "$cluster": ".*",
        "$namespace": "ml",
        "$kind": "Job",
        "$job": "train",
    }
    rules = []
    for i, expr in enumerate(_exprs(_dashboard())):
        for var, value in substitutions.items():
            expr = expr.replace(var, value)
        assert "$" not in expr, expr
        rules.append({"record": f"dashboard:expr_{i}", "expr": expr})
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
