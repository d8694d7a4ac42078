"""Replicas, leader election, the PodDisruptionBudget and sharding by namespace, as the chart renders them."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from bottleneck_operator.settings import Settings

from ._helpers import NAMESPACE, SCENARIOS, Manifest, find, one, operator_container, render, render_docs


def _env(docs: list[Manifest]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in operator_container(docs)["env"]}


TWO_REPLICAS = [s for s in SCENARIOS if s != "full"]  # "full" has kopf's peering: one replica


@pytest.mark.parametrize("scenario", TWO_REPLICAS)
def test_two_replicas_rolled_one_at_a_time_with_one_leader(rendered: dict[str, list[Manifest]], scenario: str) -> None:
    docs = rendered[scenario]
    spec = one(docs, "Deployment")["spec"]
    assert spec["replicas"] == 2
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    env = _env(docs)
    assert env["BOTTLENECK_LEADER_ELECTION"] == "true"
    assert env["BOTTLENECK_LEASE_NAME"] == "bn-bottleneck-operator"
    # The pod's own name and namespace, from the downward API.
    assert env["BOTTLENECK_LEADER_IDENTITY"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert env["BOTTLENECK_LEASE_NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    durations = {k: float(env[f"BOTTLENECK_LEASE_{k.upper()}"]) for k in ("duration", "renew_deadline", "retry_period")}
    assert durations == {"duration": 15.0, "renew_deadline": 10.0, "retry_period": 2.0}
    # The operator reads them as the settings they name, and accepts them.
    settings = Settings(**{f"lease_{k}": v for k, v in durations.items()}, leader_election=True)
    assert (
        settings.operation.lease_retry_period
        < settings.operation.lease_renew_deadline
        < settings.operation.lease_duration
    )


@pytest.mark.parametrize("scenario", TWO_REPLICAS)
def test_a_disruption_budget_keeps_one_replica(rendered: dict[str, list[Manifest]], scenario: str) -> None:
    docs = rendered[scenario]
    pdb = one(docs, "PodDisruptionBudget")
    kubernetes_validate.validate(pdb, "1.29.0", strict=True)
    assert pdb["metadata"]["namespace"] == NAMESPACE
    assert pdb["spec"]["minAvailable"] == 1
    pod_labels = one(docs, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()


def test_one_replica_without_a_lease_is_replaced_not_rolled(chart: Any) -> None:
    docs = render_docs(chart, {"replicaCount": 1, "leaderElection": {"enabled": False}})
    spec = one(docs, "Deployment")["spec"]
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "Recreate"}
    assert "BOTTLENECK_LEADER_ELECTION" not in _env(docs)
    assert not find(docs, "PodDisruptionBudget")
    assert not [r for r in find(docs, "Role") if "leases" in str(r["rules"])]


def test_kopf_peering_runs_one_replica_replaced_not_rolled(rendered: dict[str, list[Manifest]]) -> None:
    spec = one(rendered["full"], "Deployment")["spec"]
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "Recreate"}
    assert not find(rendered["full"], "PodDisruptionBudget")


def test_two_writers_are_refused(chart: Any) -> None:
    with pytest.raises(helm.HelmRenderError) as failure:
        render_docs(chart, {"replicaCount": 2, "leaderElection": {"enabled": False}})
    assert "needs leaderElection.enabled" in str(failure.value)
    with pytest.raises(helm.HelmRenderError) as failure:
        render_docs(chart, {"replicaCount": 2, "podDisruptionBudget": {"minAvailable": 2}})
    assert "minAvailable must be less than replicaCount" in str(failure.value)
    with pytest.raises(helm.HelmRenderError) as failure:
        render_docs(chart, {"kopfPeering": {"enabled": True}})
    assert "set replicaCount: 1" in str(failure.value)
    with pytest.raises(helm.HelmRenderError) as failure:
        render_docs(chart, {"leaderElection": {"leaseDuration": 10, "renewDeadline": 10}})
    assert "retryPeriod < renewDeadline < leaseDuration" in str(failure.value)


def _release(chart: Any, name: str, namespaces: list[str]) -> list[Manifest]:
    rendered = render(chart, {"watchNamespaces": namespaces}, name=name)
    return [
        d
        for path, text in sorted(rendered.items())
        if not path.endswith("NOTES.txt")
        for d in yaml.safe_load_all(text)
        if d
    ]


def _webhook_namespaces(docs: list[Manifest]) -> list[set[str]]:
    """The namespaces each webhook is limited to (its `In` expression)."""
    hooks = one(docs, "MutatingWebhookConfiguration")["webhooks"]
    return [
        {v for e in h["namespaceSelector"]["matchExpressions"] if e["operator"] == "In" for v in e["values"]}
        for h in hooks
    ]


def test_shards_are_releases_with_their_own_namespaces_and_lease(chart: Any) -> None:
    shards = {"shard-a": ["team-a", "team-b"], "shard-b": ["team-c"]}
    docs = {name: _release(chart, name, namespaces) for name, namespaces in shards.items()}
    for name, namespaces in shards.items():
        # The webhook admits only its shard's namespaces; the operator watches only them (and may write only there).
        assert all(selected == set(namespaces) for selected in _webhook_namespaces(docs[name]))
        assert _env(docs[name])["BOTTLENECK_LEASE_NAME"] == f"{name}-bottleneck-operator"
        config = one(docs[name], "ConfigMap", f"{name}-bottleneck-operator")["data"]
        assert yaml.safe_load(config["BOTTLENECK_NAMESPACES"]) == namespaces
        roles = [r for r in find(docs[name], "Role") if r["metadata"]["name"] == f"{name}-bottleneck-operator"]
        assert sorted(r["metadata"]["namespace"] for r in roles) == sorted(namespaces)
    # Nothing is shared between two shards: names of cluster-scoped objects and the Leases differ.
    cluster_scoped = {
        name: {(d["kind"], d["metadata"]["name"]) for d in found if "namespace" not in d["metadata"]}
        for name, found in docs.items()
    }
    assert not cluster_scoped["shard-a"] & cluster_scoped["shard-b"]
