"""The PrometheusRule for the operator's own health: valid rules that fire when, and only when, they should.

Each alert is evaluated by promtool's rule unit tests (Prometheus's own engine) on series given with
explicit times, never by reading the expressions.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from ._helpers import NAMESPACE, Manifest, find, one, render_docs

JOB = 'job="bn-bottleneck-operator-metrics", namespace="bottleneck-system"'
NOT_AFTER = "bottleneck.dev/certificate-not-after"

needs_promtool = pytest.mark.skipif(
    shutil.which("promtool") is None, reason="promtool is not installed: run `make test`"
)


def _rules(docs: list[Manifest]) -> dict[str, dict[str, Any]]:
    rule = one(docs, "PrometheusRule")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    (group,) = rule["spec"]["groups"]
    return {r["alert"]: r for r in group["rules"]}


def _promtool_test(tmp_path: Path, docs: list[Manifest], tests: list[dict[str, Any]], interval: str = "1m") -> None:
    """Write the rendered rules and the unit tests side by side and run `promtool test rules`."""
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": one(docs, "PrometheusRule")["spec"]["groups"]}))
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({"rule_files": [rules.name], "evaluation_interval": interval, "tests": tests}))
    result = subprocess.run(["promtool", "test", "rules", str(suite)], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def _fires(docs: list[Manifest], alert: str, labels: dict[str, str]) -> dict[str, Any]:
    """One expected firing alert: its labels, and its annotations with the alert's labels filled in."""
    annotations = {
        key: re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m[1]], text)
        for key, text in _rules(docs)[alert]["annotations"].items()
    }
    return {"exp_labels": labels, "exp_annotations": annotations}


def test_alerts_are_off_by_default(rendered: dict[str, list[Manifest]]) -> None:
    assert not find(rendered["default"], "PrometheusRule")


def test_rule_names_labels_and_severity(rendered: dict[str, list[Manifest]]) -> None:
    docs = rendered["full"]
    rule = one(docs, "PrometheusRule")
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    alerts = _rules(docs)
    assert set(alerts) == {
        "BottleneckOperatorDown",
        "BottleneckOperatorPassErrors",
        "BottleneckOperatorPassesStalled",
        "BottleneckWebhookFailingOpen",
        "BottleneckWebhookCertificateExpiring",
    }
    for alert in alerts.values():
        assert alert["labels"]["team"] == "ml"
        assert alert["labels"]["severity"] in {"info", "warning", "critical"}
        assert alert["annotations"]["summary"] and alert["annotations"]["description"]
    # the job label a ServiceMonitor gives the operator's metrics: the metrics Service's name
    service = next(s for s in find(docs, "Service") if s["metadata"]["name"].endswith("-metrics"))
    assert f'job="{service["metadata"]["name"]}"' in alerts["BottleneckOperatorDown"]["expr"]


@needs_promtool
def test_down_fires_when_scrapes_fail_or_the_target_is_gone(
    rendered: dict[str, list[Manifest]], tmp_path: Path
) -> None:
    fires = _fires(rendered["full"], "BottleneckOperatorDown", {"severity": "warning", "team": "ml"})
    series = [
        # up for 10 minutes, down for 10, then gone
        {"series": f"up{{{JOB}}}", "values": "1x10 0x10 _x20"},
        # another release's operator being up does not hide this one
        {"series": 'up{job="bn-bottleneck-operator-metrics", namespace="elsewhere"}', "values": "1x40"},
    ]
    tests = [
        {
            "interval": "1m",
            "input_series": series,
            "alert_rule_test": [
                {"eval_time": "9m", "alertname": "BottleneckOperatorDown", "exp_alerts": []},
                # down since minute 11: pending for 5 minutes first
                {"eval_time": "14m", "alertname": "BottleneckOperatorDown", "exp_alerts": []},
                {"eval_time": "17m", "alertname": "BottleneckOperatorDown", "exp_alerts": [fires]},
                # no series at all (after Prometheus's 5 minutes of staleness) still fires
                {"eval_time": "38m", "alertname": "BottleneckOperatorDown", "exp_alerts": [fires]},
            ],
        }
    ]
    _promtool_test(tmp_path, rendered["full"], tests)


@needs_promtool
def test_pass_errors_fire_only_when_errors_keep_coming(rendered: dict[str, list[Manifest]], tmp_path: Path) -> None:
    tests = [
        {
            "interval": "1m",
            "input_series": [
                # one prometheus error at minute 5, then none: no alert
                {"series": f'bottleneck_operator_errors_total{{{JOB}, kind="prometheus"}}', "values": "0x4 1x60"},
                # a kubernetes error every minute from minute 10 on (RBAC broken, say)
                {"series": f'bottleneck_operator_errors_total{{{JOB}, kind="kubernetes"}}', "values": "0x9 1+1x50"},
            ],
            "alert_rule_test": [
                {"eval_time": "20m", "alertname": "BottleneckOperatorPassErrors", "exp_alerts": []},
                {
                    "eval_time": "30m",
                    "alertname": "BottleneckOperatorPassErrors",
                    "exp_alerts": [
                        _fires(
                            rendered["full"],
                            "BottleneckOperatorPassErrors",
                            {"severity": "warning", "team": "ml", "kind": "kubernetes", "namespace": NAMESPACE},
                        )
                    ],
                },
            ],
        }
    ]
    _promtool_test(tmp_path, rendered["full"], tests)


@needs_promtool
def test_failing_open_fires_when_jobs_were_admitted_without_the_collector(
    rendered: dict[str, list[Manifest]], tmp_path: Path
) -> None:
    # the unsupported-kind notice failing open costs an Event, not a collector: not part of the alert
    webhooks = one(rendered["full"], "MutatingWebhookConfiguration")["webhooks"]
    hooks = [h["name"] for h in webhooks if h["name"] != "notice-unsupported.bottleneck.dev"]
    assert hooks == [
        "inject-sidecar.bottleneck.dev",
        "mark-workloads.bottleneck.dev",
        "inject-workload-pods.bottleneck.dev",
    ]
    tests = []
    # Each of the three webhooks failing open fires the alert on its own.
    for hook in hooks:
        tests.append(
            {
                "interval": "1m",
                "input_series": [
                    {
                        "series": f'apiserver_admission_webhook_fail_open_count{{name="{hook}", type="admit"}}',
                        "values": "0x20 3x20",
                    },
                    # another webhook failing open is not ours
                    {
                        "series": 'apiserver_admission_webhook_fail_open_count{name="other.example.com", type="admit"}',
                        "values": "0+1x40",
                    },
                    {
                        "series": 'apiserver_admission_webhook_fail_open_count{name="bottleneck.dev.example.com", type="admit"}',
                        "values": "0+1x40",
                    },
                ],
                "alert_rule_test": [
                    {"eval_time": "15m", "alertname": "BottleneckWebhookFailingOpen", "exp_alerts": []},
                    {
                        "eval_time": "25m",
                        "alertname": "BottleneckWebhookFailingOpen",
                        "exp_alerts": [
                            _fires(rendered["full"], "BottleneckWebhookFailingOpen", {"severity": "info", "team": "ml"})
                        ],
                    },
                    # 15 minutes after the last failure it clears
                    {"eval_time": "40m", "alertname": "BottleneckWebhookFailingOpen", "exp_alerts": []},
                ],
            }
        )
    _promtool_test(tmp_path, rendered["full"], tests)


@needs_promtool
def test_cert_manager_expiry_reads_cert_managers_metric(rendered: dict[str, list[Manifest]], tmp_path: Path) -> None:
    docs = rendered["cert-manager"]
    metric = 'certmanager_certificate_expiration_timestamp_seconds{name="bn-bottleneck-operator-webhook", namespace="bottleneck-system"}'
    day = 86400
    tests = [
        {
            "interval": "1d",
            # expires on day 30 (from the Unix epoch, promtool's time zero); renewed on day 12 to day 90
            "input_series": [{"series": metric, "values": f"{30 * day}x11 {90 * day}x10"}],
            "alert_rule_test": [
                {"eval_time": "5d", "alertname": "BottleneckWebhookCertificateExpiring", "exp_alerts": []},
                {
                    "eval_time": "10d",
                    "alertname": "BottleneckWebhookCertificateExpiring",
                    "exp_alerts": [
                        _fires(
                            docs,
                            "BottleneckWebhookCertificateExpiring",
                            {"severity": "warning", "name": "bn-bottleneck-operator-webhook", "namespace": NAMESPACE},
                        )
                    ],
                },
                {"eval_time": "15d", "alertname": "BottleneckWebhookCertificateExpiring", "exp_alerts": []},
            ],
        }
    ]
    _promtool_test(tmp_path, docs, tests, interval="1d")


@needs_promtool
def test_self_signed_expiry_is_the_date_recorded_on_the_secret(
    rendered: dict[str, list[Manifest]], tmp_path: Path
) -> None:
    docs = rendered["full"]
    recorded = one(docs, "Secret", "bn-bottleneck-operator-webhook-tls")["metadata"]["annotations"][NOT_AFTER]
    not_after = datetime.strptime(recorded, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    # the chart's validity (3650 days) from the render, give or take the test's own run time
    assert abs(not_after - (datetime.now(UTC) + timedelta(days=3650))) < timedelta(hours=1)
    expr = _rules(docs)["BottleneckWebhookCertificateExpiring"]["expr"]
    constant = re.search(r"vector\((\d+)\)", expr)
    assert constant is not None, expr
    assert int(constant[1]) == int(not_after.timestamp())
    days = int(not_after.timestamp()) // 86400
    fires = _fires(docs, "BottleneckWebhookCertificateExpiring", {"severity": "warning", "team": "ml"})
    tests = [
        {
            "interval": "10d",
            "input_series": [],
            "alert_rule_test": [
                {"eval_time": f"{days - 30}d", "alertname": "BottleneckWebhookCertificateExpiring", "exp_alerts": []},
                {
                    "eval_time": f"{days - 10}d",
                    "alertname": "BottleneckWebhookCertificateExpiring",
                    "exp_alerts": [fires],
                },
            ],
        }
    ]
    _promtool_test(tmp_path, docs, tests, interval="10d")


def test_no_expiry_alert_for_a_certificate_the_user_supplies(chart: Any) -> None:
    values = {
        "prometheusRule": {"enabled": True},
        "webhook": {"existingCertificate": {"secretName": "corp-webhook-tls", "caBundle": "Q0E="}},
    }
    alerts = _rules(render_docs(chart, values))
    assert "BottleneckWebhookCertificateExpiring" not in alerts
    assert "BottleneckWebhookFailingOpen" in alerts


def test_no_webhook_alerts_without_the_webhook(chart: Any) -> None:
    alerts = _rules(render_docs(chart, {"prometheusRule": {"enabled": True}, "webhook": {"enabled": False}}))
    assert set(alerts) == {"BottleneckOperatorDown", "BottleneckOperatorPassErrors", "BottleneckOperatorPassesStalled"}


@needs_promtool
def test_rules_are_valid_for_prometheus(rendered: dict[str, list[Manifest]], tmp_path: Path) -> None:
    for scenario in ("full", "cert-manager"):
        path = tmp_path / f"{scenario}.yaml"
        path.write_text(yaml.safe_dump({"groups": one(rendered[scenario], "PrometheusRule")["spec"]["groups"]}))
        result = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr
