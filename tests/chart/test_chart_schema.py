"""values.schema.json: bad values fail the install before anything reaches the cluster."""

from __future__ import annotations

import json
from typing import Any

import helm_python as helm
import pytest
import yaml

from ._helpers import CHART, NAMESPACE, RELEASE, render

BAD_VALUES: dict[str, dict[str, Any]] = {
    "unknown top-level key": {"replicas": 2},
    "misspelt nested key": {"webhook": {"timeout": 5}},
    "webhook timeout above 10 s": {"webhook": {"timeoutSeconds": 30}},
    "webhook timeout zero": {"webhook": {"timeoutSeconds": 0}},
    "image tag latest": {"image": {"tag": "latest"}},
    "sidecar image latest": {"sidecar": {"image": "ghcr.io/x/y:latest"}},
    "digest not sha256": {"image": {"digest": "md5:abc"}},
    "pull policy": {"image": {"pullPolicy": "Sometimes"}},
    "namespace not a DNS label": {"watchNamespaces": ["ML_Team"]},
    "namespace listed twice": {"watchNamespaces": ["ml", "ml"]},
    "port out of range": {"metrics": {"port": 70000}},
    "interval below the operator's minimum": {"analysis": {"interval": 1}},
    "probability above 1": {"analysis": {"abstainThreshold": 1.5}},
    "retention negative": {"reports": {"retention": -1}},
    "retries as text": {"prometheus": {"retries": "two"}},
    "prometheus url without scheme": {"prometheus": {"url": "prometheus:9090"}},
    "CA from both a ConfigMap and a Secret": {"prometheus": {"tls": {"ca": {"configMap": "a", "secret": "b"}}}},
    "writable root filesystem": {"securityContext": {"readOnlyRootFilesystem": False}},
    "privilege escalation": {"securityContext": {"allowPrivilegeEscalation": True}},
    "root allowed": {"podSecurityContext": {"runAsNonRoot": False}},
    "root user": {"podSecurityContext": {"runAsUser": 0}},
    "bad cpu quantity": {"resources": {"limits": {"cpu": "lots"}}},
    "bad scrape interval": {"metrics": {"serviceMonitor": {"interval": "often"}}},
    "issuer kind": {"webhook": {"certManager": {"issuerRef": {"kind": "Vault", "name": "x"}}}},
    "label name for PromQL": {"labelMapping": {"dcgmPodLabel": "pod-name"}},
    "network policy port out of range": {"networkPolicy": {"prometheus": {"ports": [70000]}}},
    "network policy without API server ports": {"networkPolicy": {"apiServer": {"ports": []}}},
    "alert duration not a duration": {"prometheusRule": {"downFor": "soon"}},
    "certificate expiry zero days": {"prometheusRule": {"certificateExpiryDays": 0}},
    "supplied CA not base64": {"webhook": {"existingCertificate": {"caBundle": "-----BEGIN"}}},
    "aggregated roles as text": {"rbac": {"aggregateClusterRoles": "yes"}},
    "readiness period zero": {"health": {"readinessProbe": {"periodSeconds": 0}}},
}

GOOD_VALUES: dict[str, dict[str, Any]] = {
    "digest": {"image": {"digest": "sha256:" + "0" * 64}},
    "CA from a Secret": {"prometheus": {"tls": {"ca": {"secret": "prom-ca"}}}},
    "https Thanos": {"prometheus": {"url": "https://thanos-query.monitoring.svc:10902"}},
    "whole CPU": {"resources": {"limits": {"cpu": 2}}},
    "cluster issuer": {
        "webhook": {"certManager": {"enabled": True, "issuerRef": {"kind": "ClusterIssuer", "name": "x"}}}
    },
    "newer dcgm label": {"labelMapping": {"dcgmHostnameLabel": "hostname"}},
    "timeout 10": {"webhook": {"timeoutSeconds": 10}},
    "Thanos port in the network policy": {"networkPolicy": {"enabled": True, "prometheus": {"ports": [10902]}}},
    "alerts with routing labels": {
        "prometheusRule": {"enabled": True, "alertLabels": {"team": "ml"}, "downFor": "10m"}
    },
    "no PodMonitor": {"sidecar": {"podMonitor": {"enabled": False}}},
}


@pytest.mark.parametrize("values", BAD_VALUES.values(), ids=list(BAD_VALUES))
def test_bad_values_fail_the_render(chart: Any, values: dict[str, Any]) -> None:
    with pytest.raises(helm.HelmValuesError):
        chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)


@pytest.mark.parametrize("values", GOOD_VALUES.values(), ids=list(GOOD_VALUES))
def test_good_values_pass(chart: Any, values: dict[str, Any]) -> None:
    chart.validate_schema(chart.merge_values(values))
    assert render(chart, values)


def test_lint_reports_bad_values() -> None:
    report = helm.lint(CHART, BAD_VALUES["webhook timeout above 10 s"], namespace=NAMESPACE)
    assert any("timeoutSeconds" in m["error"] for m in report["messages"] if m["severity"] == 3)


def test_schema_describes_every_default() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    values = yaml.safe_load((CHART / "values.yaml").read_text())

    def walk(node: dict[str, Any], value: Any, path: str) -> None:
        if node.get("type") != "object" or "properties" not in node or not isinstance(value, dict):
            return
        for key, child in value.items():
            assert key in node["properties"] or node.get("additionalProperties") is not False, f"{path}{key}"
            if key in node["properties"]:
                walk(node["properties"][key], child, f"{path}{key}.")

    walk(schema, values, "")
    assert set(schema["properties"]) - {"global"} == set(values)
