"""Rendering the chart with Helm's own engine (helm-python-sdk), and finding objects in the result.

Scenarios:
- ``default``: the chart's values as shipped.
- ``full``: every optional feature on (monitors, alerts, NetworkPolicy, dashboard, counters, peering, Prometheus
  secrets).
- ``namespaced``: a namespaced install watching two namespaces.
- ``cert-manager``: the webhook certificate from cert-manager instead of the install-time one (and its alerts).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "bottleneck-operator"
RELEASE = "bn"
NAMESPACE = "bottleneck-system"
WATCHED = ["ml-team-a", "ml-team-b"]

# Kinds whose schemas come with their own CRDs (prometheus-operator, cert-manager): kubernetes-validate
# has none, so the tests check their shape by hand.
CUSTOM_KINDS = {"ServiceMonitor", "PodMonitor", "PrometheusRule", "Certificate", "Issuer"}

# What a cluster with the Prometheus Operator's CRDs tells Helm (`.Capabilities.APIVersions`): the group
# version and each kind, as Helm lists them from the API server's discovery or `--api-versions`.
PROMETHEUS_OPERATOR_APIS = [
    "monitoring.coreos.com/v1",
    "monitoring.coreos.com/v1/PodMonitor",
    "monitoring.coreos.com/v1/ServiceMonitor",
    "monitoring.coreos.com/v1/PrometheusRule",
]
# The training operators' kinds, as a cluster with their CRDs tells Helm (MPIJob: the MPI operator's v2beta1).
TRAINING_APIS: dict[str, list[str]] = {
    "pytorchjobs": ["kubeflow.org/v1", "kubeflow.org/v1/PyTorchJob"],
    "mpijobs": ["kubeflow.org/v2beta1", "kubeflow.org/v2beta1/MPIJob"],
    "jobsets": ["jobset.x-k8s.io/v1alpha2", "jobset.x-k8s.io/v1alpha2/JobSet"],
    "trainjobs": ["trainer.kubeflow.org/v1alpha1", "trainer.kubeflow.org/v1alpha1/TrainJob"],
    "rayjobs": ["ray.io/v1", "ray.io/v1/RayJob"],
    "leaderworkersets": ["leaderworkerset.x-k8s.io/v1", "leaderworkerset.x-k8s.io/v1/LeaderWorkerSet"],
}
# The PodMonitor's three settings: never, and always (an error where the cluster lacks the kind); the
# default, "auto", creates it where the cluster serves the kind.
NO_POD_MONITOR: dict[str, Any] = {"sidecar": {"podMonitor": {"enabled": False}}}
POD_MONITOR_ON: dict[str, Any] = {"sidecar": {"podMonitor": {"enabled": True}}}

FULL_VALUES: dict[str, Any] = {
    "metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}}},
    "sidecar": {"podMonitor": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}}},
    "dcgmCounters": {"enabled": True, "namespace": "gpu-monitoring"},
    "grafanaDashboard": {"enabled": True, "namespace": "monitoring", "annotations": {"grafana_folder": "GPU"}},
    "kopfPeering": {"enabled": True},
    "replicaCount": 1,  # kopf's peering pauses replicas of equal priority: one replica with it
    "prometheus": {
        "url": "https://thanos-query.monitoring.svc:10902",
        "headers": {"X-Scope-OrgID": "team-a"},
        "bearerTokenSecret": {"name": "prometheus-token", "key": "token"},
        "basicAuth": {"username": "bottleneck", "passwordSecret": {"name": "prometheus-basic-auth"}},
        "tls": {"ca": {"configMap": "prometheus-ca"}},
    },
    "analysis": {"modelPath": "/models/custom.skops"},
    "imagePullSecrets": [{"name": "regcred"}],
    "podAnnotations": {"example.com/team": "ml-platform"},
    "nodeSelector": {"kubernetes.io/os": "linux"},
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"}],
    "priorityClassName": "system-cluster-critical",
    "extraEnv": [{"name": "EXTRA", "value": "1"}],
    "extraVolumes": [{"name": "models", "configMap": {"name": "models"}}],
    "extraVolumeMounts": [{"name": "models", "mountPath": "/models", "readOnly": True}],
    "webhook": {"objectSelector": {"matchLabels": {"team": "ml"}}},
    "networkPolicy": {"enabled": True, "apiServer": {"peers": [{"ipBlock": {"cidr": "10.0.0.1/32"}}]}},
    "prometheusRule": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}, "alertLabels": {"team": "ml"}},
}
NAMESPACED_VALUES: dict[str, Any] = {"watchNamespaces": WATCHED}
CERT_MANAGER_VALUES: dict[str, Any] = {
    "webhook": {"certManager": {"enabled": True}},
    "prometheusRule": {"enabled": True},
}

SCENARIOS: dict[str, dict[str, Any]] = {
    "default": {},
    "full": FULL_VALUES,
    "namespaced": NAMESPACED_VALUES,
    "cert-manager": CERT_MANAGER_VALUES,
}


Manifest = dict[str, Any]


def render(
    chart: Any,
    values: dict[str, Any] | None = None,
    *,
    namespace: str = NAMESPACE,
    name: str = RELEASE,
    api_versions: list[str] | None = None,
) -> dict[str, str]:
    """`helm template --api-versions ...`: the chart rendered offline for a cluster serving ``api_versions``.

    helm-python-sdk's ``Chart.render`` passes no API versions, though its native renderer takes them
    (`api_versions`, as `helm template --api-versions` does); this calls it with them.

    Args:
        chart: the loaded chart.
        values: values over the chart's defaults.
        namespace: the release namespace.
        name: the release name.
        api_versions: what the cluster serves beyond the built-in kinds; ``None``: the Prometheus Operator's kinds.

    Returns:
        Template path to rendered text.
    """
    from helm_python import _native

    options = {
        "name": name,
        "namespace": namespace,
        "is_install": True,
        "api_versions": PROMETHEUS_OPERATOR_APIS if api_versions is None else api_versions,
    }
    out = _native.call_string("helm_render", chart._raw(), json.dumps(values or {}), json.dumps(options))
    return json.loads(out)  # type: ignore[no-any-return]


def render_docs(
    chart: Any,
    values: dict[str, Any] | None = None,
    *,
    namespace: str = NAMESPACE,
    api_versions: list[str] | None = None,
) -> list[Manifest]:
    """Render the chart as `helm install` would (offline) and parse every manifest.

    Args:
        chart: the loaded chart.
        values: values over the chart's defaults.
        namespace: the release namespace.
        api_versions: as in :func:`render`.

    Returns:
        The rendered objects, NOTES.txt left out.
    """
    rendered = render(chart, values, namespace=namespace, api_versions=api_versions)
    docs: list[Manifest] = []
    for path, text in sorted(rendered.items()):
        if path.endswith("NOTES.txt"):
            continue
        docs.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return docs


def render_notes(chart: Any, values: dict[str, Any] | None = None) -> str:
    rendered = render(chart, values)
    return next(text for path, text in rendered.items() if path.endswith("NOTES.txt"))


def find(docs: list[Manifest], kind: str, name: str | None = None) -> list[Manifest]:
    """The rendered objects of one kind (and name)."""
    return [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]


def one(docs: list[Manifest], kind: str, name: str | None = None) -> Manifest:
    """The single rendered object of one kind (and name); fails when there is not exactly one."""
    found = find(docs, kind, name)
    assert len(found) == 1, f"expected one {kind}{' ' + name if name else ''}, found {len(found)}"
    return found[0]


def operator_container(docs: list[Manifest]) -> Manifest:
    deployment = one(docs, "Deployment")
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["operator"]
    return containers[0]  # type: ignore[no-any-return]


def settings_env(docs: list[Manifest]) -> dict[str, str]:
    """The operator's BOTTLENECK_* environment: the settings ConfigMap plus literal env entries."""
    container = operator_container(docs)
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        env.update(one(docs, "ConfigMap", source["configMapRef"]["name"])["data"])
    for item in container.get("env", []):
        if "value" in item:
            env[item["name"]] = item["value"]
    return env
