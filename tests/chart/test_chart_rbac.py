"""RBAC: least privilege, no wildcards, cluster-wide or per watched namespace."""

from __future__ import annotations

from typing import Any

import pytest

from bottleneck_operator.controller import access
from bottleneck_operator.controller.workloads import CUSTOM_KINDS

from ._helpers import (
    NAMESPACE,
    NAMESPACED_VALUES,
    PROMETHEUS_OPERATOR_APIS,
    SCENARIOS,
    TRAINING_APIS,
    WATCHED,
    Manifest,
    find,
    one,
    operator_container,
    render_docs,
)

Grant = tuple[str, str, str]  # (apiGroup, resource, verb)

OPERATOR_ROLE = "bn-bottleneck-operator"
AGGREGATE = "rbac.authorization.k8s.io/aggregate-to-"

# Everything below is derived from the code's own table (controller/access.py): what the operator's client
# calls (each call is checked against it) and what kopf lists, watches and posts for the handlers.
LEASES: set[Grant] = set(access.LEASES)
CRD_SCAN: set[Grant] = set(access.CRD_SCAN)
NAMESPACE_WATCH: set[Grant] = set(access.NAMESPACE_WATCH)
CLIENT_AND_KOPF: set[Grant] = set(access.CLIENT | access.kopf_grants(cluster_wide=False))
# Read access to each training operator's kind (the webhook's get, kopf's list/watch), granted only where the
# cluster serves it.
WORKLOAD_GRANTS: dict[str, set[Grant]] = {
    k.plural: {g for g in CLIENT_AND_KOPF if g[:2] == (k.group, k.plural)} for k in CUSTOM_KINDS
}
ALL_WORKLOAD_GRANTS: set[Grant] = set().union(*WORKLOAD_GRANTS.values())
# The one ClusterBottleneckSummary: cluster-scoped, so in the ClusterRole in either install; so are the node reads
# for its fabrics and racks (the chart's default node labels turn them on).
SUMMARY: set[Grant] = set(access.SUMMARY)
NODES: set[Grant] = set(access.NODE_READS)
CLUSTER_SCOPED: set[Grant] = CRD_SCAN | SUMMARY | NODES
# What the operator does in a watched namespace: read Jobs and their claims, own its reports and their status,
# post Events.
NAMESPACED_GRANTS: set[Grant] = CLIENT_AND_KOPF - ALL_WORKLOAD_GRANTS - LEASES - CLUSTER_SCOPED
NO_NODE_LABELS: dict[str, Any] = {"clusterSummary": {"rackNodeLabels": [], "fabricNodeLabels": []}}


def grants(role: Manifest) -> set[Grant]:
    out: set[Grant] = set()
    for rule in role["rules"]:
        assert not rule.get("resourceNames"), "no rule is limited by name: they should not exist at all"
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    out.add((group, resource, verb))
    return out


def watched_roles(docs: list[Manifest]) -> list[Manifest]:
    """The Roles of a namespaced install's watched namespaces (not the Lease's)."""
    return [r for r in find(docs, "Role") if r["metadata"]["name"] == OPERATOR_ROLE]


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_no_wildcards(rendered: dict[str, list[Manifest]], scenario: str) -> None:
    roles = find(rendered[scenario], "ClusterRole") + find(rendered[scenario], "Role")
    assert roles
    for role in roles:
        for rule in role["rules"]:
            for key in ("apiGroups", "resources", "verbs"):
                assert all("*" not in item for item in rule[key]), (role["metadata"]["name"], rule)
            assert "nonResourceURLs" not in rule


def test_cluster_wide_grants_exactly_what_is_needed(rendered: dict[str, list[Manifest]]) -> None:
    docs = rendered["default"]
    assert grants(one(docs, "ClusterRole", OPERATOR_ROLE)) == NAMESPACED_GRANTS | CLUSTER_SCOPED | NAMESPACE_WATCH
    # nothing namespaced but the Lease, in the release's own namespace
    assert [(r["metadata"]["namespace"], grants(r)) for r in find(docs, "Role")] == [(NAMESPACE, LEASES)]
    assert [b["metadata"]["namespace"] for b in find(docs, "RoleBinding")] == [NAMESPACE]


def _operator_grants(docs: list[Manifest]) -> set[Grant]:
    """Everything the chart's Roles and ClusterRoles bound to the operator's account allow it."""
    bound = {
        (b["roleRef"]["kind"], b["roleRef"]["name"])
        for b in find(docs, "ClusterRoleBinding") + find(docs, "RoleBinding")
    }
    out: set[Grant] = set()
    for kind in ("ClusterRole", "Role"):
        for role in find(docs, kind):
            if (kind, role["metadata"]["name"]) in bound:
                out |= grants(role)
    return out


@pytest.mark.parametrize("node_labels", [True, False])
@pytest.mark.parametrize("cluster_wide", [True, False])
def test_rbac_is_what_the_code_uses_both_ways(chart: Any, cluster_wide: bool, node_labels: bool) -> None:
    # Every training kind served: then the chart must grant exactly the code's table, no more and no less.
    values: dict[str, Any] = {} if cluster_wide else dict(NAMESPACED_VALUES)
    values.update({} if node_labels else NO_NODE_LABELS)
    served = PROMETHEUS_OPERATOR_APIS + [api for apis in TRAINING_APIS.values() for api in apis]
    granted = _operator_grants(render_docs(chart, values, api_versions=served))
    used = set(access.client_grants(node_labels=node_labels) | access.kopf_grants(cluster_wide=cluster_wide))
    assert granted - used == set(), "granted but never used"
    assert used - granted == set(), "used but not granted"


def test_no_cluster_wide_pod_read(rendered: dict[str, list[Manifest]]) -> None:
    for scenario, docs in rendered.items():
        for role in find(docs, "ClusterRole") + find(docs, "Role"):
            assert not any(r == "pods" for _, r, _ in grants(role)), scenario


@pytest.mark.parametrize("resource", list(TRAINING_APIS))
def test_a_training_kind_is_read_only_where_the_cluster_serves_it(chart: Any, resource: str) -> None:
    docs = render_docs(chart, api_versions=PROMETHEUS_OPERATOR_APIS + TRAINING_APIS[resource])
    granted = grants(one(docs, "ClusterRole", OPERATOR_ROLE))
    assert granted & ALL_WORKLOAD_GRANTS == WORKLOAD_GRANTS[resource]
    namespaced = render_docs(chart, NAMESPACED_VALUES, api_versions=PROMETHEUS_OPERATOR_APIS + TRAINING_APIS[resource])
    for role in watched_roles(namespaced):
        assert grants(role) == NAMESPACED_GRANTS | WORKLOAD_GRANTS[resource]


def test_every_installed_training_kind_is_read(chart: Any) -> None:
    served = PROMETHEUS_OPERATOR_APIS + [api for apis in TRAINING_APIS.values() for api in apis]
    granted = grants(one(render_docs(chart, api_versions=served), "ClusterRole", OPERATOR_ROLE))
    assert granted == NAMESPACED_GRANTS | ALL_WORKLOAD_GRANTS | CLUSTER_SCOPED | NAMESPACE_WATCH
    # training-operator v1 served MPIJob as kubeflow.org/v1; the MPI operator serves v2beta1.
    v1 = render_docs(chart, api_versions=[*PROMETHEUS_OPERATOR_APIS, "kubeflow.org/v1", "kubeflow.org/v1/MPIJob"])
    assert grants(one(v1, "ClusterRole", OPERATOR_ROLE)) & ALL_WORKLOAD_GRANTS == WORKLOAD_GRANTS["mpijobs"]
    # A group served without the kind (another of its CRDs) grants nothing.
    other = render_docs(chart, api_versions=[*PROMETHEUS_OPERATOR_APIS, "kubeflow.org/v1", "kubeflow.org/v1/Notebook"])
    assert not grants(one(other, "ClusterRole", OPERATOR_ROLE)) & ALL_WORKLOAD_GRANTS


def test_all_training_kinds_can_be_granted_without_the_apis(chart: Any) -> None:
    # As `helm template` renders without the cluster's API versions (the PodMonitor left out with them).
    values = {"rbac": {"allWorkloadKinds": True}, "sidecar": {"podMonitor": {"enabled": False}}}
    docs = render_docs(chart, values, api_versions=[])
    assert grants(one(docs, "ClusterRole", OPERATOR_ROLE)) == (
        NAMESPACED_GRANTS | ALL_WORKLOAD_GRANTS | CLUSTER_SCOPED | NAMESPACE_WATCH
    )
    for role in watched_roles(render_docs(chart, {**values, **NAMESPACED_VALUES}, api_versions=[])):
        assert grants(role) == NAMESPACED_GRANTS | ALL_WORKLOAD_GRANTS


def test_no_write_access_to_jobs_pods_or_secrets(rendered: dict[str, list[Manifest]]) -> None:
    for scenario, docs in rendered.items():
        for role in find(docs, "ClusterRole") + find(docs, "Role"):
            for _group, resource, verb in grants(role):
                if resource in {"jobs", "pods"}:
                    assert verb in {"get", "list", "watch"}, (scenario, resource, verb)
                assert resource not in {"secrets", "configmaps", "mutatingwebhookconfigurations"}, scenario


def test_namespaced_install_grants_per_namespace(rendered: dict[str, list[Manifest]]) -> None:
    docs = rendered["namespaced"]
    # nothing cluster-wide but the read-only CRD scan, the summary and the node reads
    assert grants(one(docs, "ClusterRole", OPERATOR_ROLE)) == CLUSTER_SCOPED
    roles = watched_roles(docs)
    assert sorted(r["metadata"]["namespace"] for r in roles) == sorted(WATCHED)
    for role in roles:
        assert grants(role) == NAMESPACED_GRANTS
    bindings = [b for b in find(docs, "RoleBinding") if b["roleRef"]["name"] == OPERATOR_ROLE]
    assert sorted(b["metadata"]["namespace"] for b in bindings) == sorted(WATCHED)
    account = one(docs, "ServiceAccount")["metadata"]["name"]
    for binding in bindings:
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": roles[0]["metadata"]["name"],
        }
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}]


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_bindings_name_the_operator_account(rendered: dict[str, list[Manifest]], scenario: str) -> None:
    docs = rendered[scenario]
    account = one(docs, "ServiceAccount")["metadata"]["name"]
    deployment = one(docs, "Deployment")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == account
    binding = one(docs, "ClusterRoleBinding")
    assert binding["roleRef"]["name"] == one(docs, "ClusterRole", OPERATOR_ROLE)["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}]


def test_peering_adds_only_kopf_peering_access(rendered: dict[str, list[Manifest]], chart: Any) -> None:
    with_peering = grants(one(rendered["full"], "ClusterRole", OPERATOR_ROLE))
    extra = with_peering - grants(one(rendered["default"], "ClusterRole", OPERATOR_ROLE))
    assert extra == {
        ("kopf.dev", r, v) for r in ("kopfpeerings", "clusterkopfpeerings") for v in ("get", "list", "watch", "patch")
    }
    args = operator_container(rendered["full"])["args"]
    assert args[:3] == ["run", "--peering", "bottleneck-operator"]
    assert operator_container(rendered["default"])["args"] == ["run"]
    namespaced = render_docs(chart, {**SCENARIOS["namespaced"], "kopfPeering": {"enabled": True}, "replicaCount": 1})
    for role in watched_roles(namespaced):
        assert ("kopf.dev", "kopfpeerings", "patch") in grants(role)
    assert not any(r == "clusterkopfpeerings" for _, r, _ in grants(one(namespaced, "ClusterRole", OPERATOR_ROLE)))


def test_rbac_can_be_left_to_the_cluster_admin(chart: Any) -> None:
    docs = render_docs(chart, {"rbac": {"create": False}, "serviceAccount": {"create": False, "name": "ops"}})
    for kind in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ServiceAccount"):
        assert not find(docs, kind)
    assert one(docs, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == "ops"


def _aggregated(docs: list[Manifest]) -> dict[str, set[Grant]]:
    """What each of Kubernetes' default user-facing roles gains from the chart's aggregated ClusterRoles."""
    gained: dict[str, set[Grant]] = {"view": set(), "edit": set(), "admin": set()}
    for role in find(docs, "ClusterRole"):
        for label, value in role["metadata"]["labels"].items():
            if label.startswith(AGGREGATE) and value == "true":
                gained[label.removeprefix(AGGREGATE)] |= grants(role)
    return gained


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_users_read_reports_through_the_default_roles(rendered: dict[str, list[Manifest]], scenario: str) -> None:
    gained = _aggregated(rendered[scenario])
    read = {("bottleneck.dev", "bottleneckreports", v) for v in ("get", "list", "watch")}
    clear = {("bottleneck.dev", "bottleneckreports", v) for v in ("delete", "deletecollection")}
    assert gained == {"view": read, "edit": read | clear, "admin": read | clear}
    # nobody but the operator writes a report or its status
    operator = one(rendered[scenario], "ClusterRole", OPERATOR_ROLE)
    assert not any(label.startswith(AGGREGATE) for label in operator["metadata"]["labels"])
    # aggregated roles are granted through the users' own bindings, never by this chart
    for binding in find(rendered[scenario], "ClusterRoleBinding") + find(rendered[scenario], "RoleBinding"):
        assert binding["roleRef"]["name"].startswith(OPERATOR_ROLE) and "reports" not in binding["roleRef"]["name"]


def test_aggregated_roles_can_be_turned_off(chart: Any) -> None:
    docs = render_docs(chart, {"rbac": {"aggregateClusterRoles": False}})
    assert [r["metadata"]["name"] for r in find(docs, "ClusterRole")] == [OPERATOR_ROLE]
    assert _aggregated(docs) == {"view": set(), "edit": set(), "admin": set()}


@pytest.mark.parametrize("dimension", ["rackNodeLabels", "fabricNodeLabels", None])
def test_nodes_are_read_only_when_node_labels_are_configured(chart: Any, dimension: str | None) -> None:
    summary: dict[str, list[str]] = {"rackNodeLabels": [], "fabricNodeLabels": []}
    if dimension:
        summary[dimension] = ["example.com/rack"]
    for values in ({"clusterSummary": summary}, {**NAMESPACED_VALUES, "clusterSummary": summary}):
        docs = render_docs(chart, values)
        read = {g for role in find(docs, "ClusterRole") + find(docs, "Role") for g in grants(role) if g[1] == "nodes"}
        assert read == (NODES if dimension else set()), values
        # claims are read wherever Jobs are: the namespaced rules, whatever the labels
        assert set(access.CLAIM_READS) <= _operator_grants(docs)
