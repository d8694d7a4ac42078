"""The chart renders and lints with Helm's own engine, and every object is valid Kubernetes (>= 1.29)."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from bottleneck_operator.settings import Settings

from ._helpers import CHART, CUSTOM_KINDS, NAMESPACE, RELEASE, SCENARIOS, WATCHED, Manifest, find, one, render

# The oldest Kubernetes the chart supports (native sidecars) and the newest kubernetes-validate knows.
KUBE_VERSIONS = ("1.29.0", kubernetes_validate.utils.latest_version() + ".0")

EXPECTED_KINDS = {
    "default": {
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "Deployment",
        "Service",
        "Secret",
        "MutatingWebhookConfiguration",
        "PodMonitor",
    },
    "full": {
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "Deployment",
        "Service",
        "Secret",
        "MutatingWebhookConfiguration",
        "ServiceMonitor",
        "PodMonitor",
        "PrometheusRule",
        "NetworkPolicy",
    },
    "namespaced": {
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "ConfigMap",
        "Deployment",
        "Service",
        "Secret",
        "MutatingWebhookConfiguration",
        "PodMonitor",
    },
    "cert-manager": {
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "Deployment",
        "Service",
        "MutatingWebhookConfiguration",
        "Certificate",
        "Issuer",
        "PodMonitor",
        "PrometheusRule",
    },
}


def test_chart_metadata() -> None:
    meta = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert meta["apiVersion"] == "v2"
    assert meta["name"] == "bottleneck-operator"
    assert meta["kubeVersion"] == ">=1.29.0-0"
    assert meta["version"] and meta["appVersion"]


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_lint_is_clean(scenario: str) -> None:
    report = helm.lint(CHART, SCENARIOS[scenario], strict=True, namespace=NAMESPACE, kube_version="v1.29.0")
    problems = [m for m in report["messages"] if m["severity"] >= 2]  # 2 warning, 3 error
    assert not problems, problems
    assert not report["errors"]


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_renders_the_expected_kinds(rendered: dict[str, list[Manifest]], scenario: str) -> None:
    # The Lease's Role and binding; a disruption budget where there are two replicas (all but "full").
    leader = {"Role", "RoleBinding"} | (set() if scenario == "full" else {"PodDisruptionBudget"})
    assert {d["kind"] for d in rendered[scenario]} == EXPECTED_KINDS[scenario] | leader


@pytest.mark.parametrize("version", KUBE_VERSIONS)
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_every_manifest_is_valid_kubernetes(rendered: dict[str, list[Manifest]], scenario: str, version: str) -> None:
    checked = 0
    for doc in rendered[scenario]:
        if doc["kind"] in CUSTOM_KINDS:
            continue  # no schema in kubernetes-validate: see the shape tests below
        # strict: unknown fields are errors too, so a misspelt key cannot pass silently
        kubernetes_validate.validate(doc, version, strict=True)
        checked += 1
    assert checked >= 8


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_objects_are_labelled_and_namespaced(rendered: dict[str, list[Manifest]], scenario: str) -> None:
    cluster_scoped = {"ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration"}
    elsewhere = {("ConfigMap", "monitoring"), ("ConfigMap", "gpu-monitoring")}
    for doc in rendered[scenario]:
        meta = doc["metadata"]
        assert meta["labels"]["app.kubernetes.io/instance"] == RELEASE
        assert meta["labels"]["app.kubernetes.io/name"] == "bottleneck-operator"
        if doc["kind"] in cluster_scoped:
            assert "namespace" not in meta
        elif doc["kind"] in {"Role", "RoleBinding"}:
            assert meta["namespace"] in [*WATCHED, NAMESPACE]  # the watched ones, and the Lease's
        elif (doc["kind"], meta["namespace"]) not in elsewhere:
            assert meta["namespace"] == NAMESPACE, (doc["kind"], meta["name"])


@pytest.mark.parametrize(
    "long_release",
    ["a-very-long-release-name-for-the-bottleneck-operator", "r" * 53],  # Helm allows 53 characters
)
def test_names_fit_a_long_release_name(chart: Any, long_release: str) -> None:
    values = {**SCENARIOS["full"], **SCENARIOS["cert-manager"]}
    rendered = render(chart, values, name=long_release)
    for path, text in rendered.items():
        if path.endswith("NOTES.txt"):
            continue
        for doc in yaml.safe_load_all(text):
            if isinstance(doc, dict):
                assert len(doc["metadata"]["name"]) <= 63, doc["metadata"]["name"]


def test_service_monitor_shape(rendered: dict[str, list[Manifest]]) -> None:
    docs = rendered["full"]
    monitor = one(docs, "ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    service = next(s for s in find(docs, "Service") if s["metadata"]["name"].endswith("-metrics"))
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert endpoint["path"] == "/metrics"


def test_pod_monitor_shape(rendered: dict[str, list[Manifest]], chart: Any) -> None:
    from bottleneck_operator.webhook.inject import COLLECTOR_LABEL, PORT_NAME

    monitor = one(rendered["full"], "PodMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    # the port name the webhook gives the injected collector's port
    assert endpoint["port"] == PORT_NAME == "bn-metrics"
    # The target's namespace/pod/node from service discovery win over any the pod writes itself.
    assert endpoint["honorLabels"] is False
    relabelled = {r["targetLabel"]: r.get("sourceLabels") for r in endpoint["relabelings"]}
    assert relabelled["namespace"] == ["__meta_kubernetes_namespace"]
    assert relabelled["pod"] == ["__meta_kubernetes_pod_name"]
    assert relabelled["node"] == ["__meta_kubernetes_pod_node_name"]
    # The job the operator reads the collector's series from.
    job = next(r["replacement"] for r in endpoint["relabelings"] if r["targetLabel"] == "job")
    assert job in dict(Settings().labels.scrape_jobs)["sidecar"]
    assert endpoint["path"] == "/metrics"
    assert monitor["spec"]["namespaceSelector"] == {"any": True}
    # the label the webhook puts on the pods it injected the collector into
    assert monitor["spec"]["selector"] == {"matchLabels": {COLLECTOR_LABEL: "true"}}
    namespaced = one(
        _render(chart, {**SCENARIOS["namespaced"], "sidecar": {"podMonitor": {"enabled": True}}}), "PodMonitor"
    )
    assert namespaced["spec"]["namespaceSelector"] == {"matchNames": WATCHED}


def _render(chart: Any, values: dict[str, Any]) -> list[Manifest]:
    from ._helpers import render_docs

    return render_docs(chart, values)


def test_optional_features_are_off_by_default(rendered: dict[str, list[Manifest]]) -> None:
    docs = rendered["default"]
    for kind in ("ServiceMonitor", "PrometheusRule", "NetworkPolicy", "Certificate", "Issuer"):
        assert not find(docs, kind)
    # no Role but the Lease's
    assert [r["metadata"]["name"] for r in find(docs, "Role") + find(docs, "RoleBinding")] == [
        "bn-bottleneck-operator-leader"
    ] * 2
    config_maps = {c["metadata"]["name"] for c in find(docs, "ConfigMap")}
    assert config_maps == {"bn-bottleneck-operator"}
