"""Every Kubernetes API permission the operator uses, as one table: the chart's RBAC is checked against it.

Two parts. What the operator's own client does (:data:`CLIENT`): every call of its
:class:`~bottleneck_operator.kube.KubeClient` goes through this table, and a call outside it fails
before it is sent, so code cannot use a permission this table (and so the chart) does not declare.
What kopf does for the handlers (:func:`kopf_grants`): list and watch what they follow, post Events.
``tests/chart/test_chart_rbac.py`` compares the rendered Role and ClusterRole with both, both ways.
"""

from __future__ import annotations

from bottleneck_operator.contract.names import API_GROUP, REPORT_PLURAL
from bottleneck_operator.controller.workloads import CUSTOM_KINDS, KINDS
from bottleneck_operator.reports.summary import SUMMARY_PLURAL

Grant = tuple[str, str, str]  # (API group, resource[/subresource], verb)

REPORTS: frozenset[Grant] = frozenset(
    {(API_GROUP, REPORT_PLURAL, verb) for verb in ("create", "get", "patch", "delete", "list")}
    | {(API_GROUP, f"{REPORT_PLURAL}/status", "patch")}
)
# The webhook reads a training pod's workload when its cache does not know it yet.
WORKLOAD_READS: frozenset[Grant] = frozenset((k.group, k.plural, "get") for k in CUSTOM_KINDS)
# Leader election (controller.leader), in the operator's own namespace only.
LEASES: frozenset[Grant] = frozenset(("coordination.k8s.io", "leases", verb) for verb in ("get", "create", "patch"))

# The one ClusterBottleneckSummary (controller.summary): created when missing, its status patched.
SUMMARY: frozenset[Grant] = frozenset(
    {(API_GROUP, SUMMARY_PLURAL, "create"), (API_GROUP, f"{SUMMARY_PLURAL}/status", "patch")}
)

# The summary's places (controller.places): the storage class of each claim a Job mounts, read in
# the Job's namespace (so granted where Jobs are watched) ...
CLAIM_READS: frozenset[Grant] = frozenset({("", "persistentvolumeclaims", "get")})
# ... and the fabric and rack labels of its nodes: cluster-scoped, and used only when node labels
# are configured (the chart grants it only then).
NODE_READS: frozenset[Grant] = frozenset({("", "nodes", "get")})

CLIENT: frozenset[Grant] = REPORTS | WORKLOAD_READS | LEASES | SUMMARY | CLAIM_READS | NODE_READS
"""Everything the operator's client may call."""


def client_grants(*, node_labels: bool) -> frozenset[Grant]:
    """What the client calls with these settings: node reads only when node labels are configured."""
    return CLIENT if node_labels else CLIENT - NODE_READS


CRD_SCAN: frozenset[Grant] = frozenset(
    ("apiextensions.k8s.io", "customresourcedefinitions", verb) for verb in ("list", "watch")
)
NAMESPACE_WATCH: frozenset[Grant] = frozenset(("", "namespaces", verb) for verb in ("list", "watch"))
# kopf posts core v1 Events; its Events selector also resolves to events.k8s.io where that is preferred.
EVENTS: frozenset[Grant] = frozenset((group, "events", "create") for group in ("", "events.k8s.io"))
WATCHED: frozenset[Grant] = frozenset((k.group, k.plural, verb) for k in KINDS for verb in ("list", "watch"))


def kopf_grants(*, cluster_wide: bool) -> frozenset[Grant]:
    """What kopf needs for the handlers: the CRD scan, the watches, Events (and namespaces cluster-wide)."""
    return CRD_SCAN | WATCHED | EVENTS | (NAMESPACE_WATCH if cluster_wide else frozenset())
