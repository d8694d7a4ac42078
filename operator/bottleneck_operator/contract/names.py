"""Fixed names of the project's API (see docs/design.md): one definition each."""

from __future__ import annotations

from typing import Final

API_GROUP: Final = "bottleneck.dev"
API_VERSION: Final = "v1alpha1"
GROUP_VERSION: Final = f"{API_GROUP}/{API_VERSION}"
REPORT_KIND: Final = "BottleneckReport"
REPORT_PLURAL: Final = "bottleneckreports"
REPORT_SHORT_NAME: Final = "bnr"

# Annotations a user sets on the Job's metadata.
PROFILE_ANNOTATION: Final = f"{API_GROUP}/profile"
SIDECAR_ANNOTATION: Final = f"{API_GROUP}/sidecar"
HOST_CGROUP_ANNOTATION: Final = f"{API_GROUP}/sidecar-host-cgroup"

# Labels the operator writes.
JOB_LABEL: Final = f"{API_GROUP}/job"
COLLECTOR_LABEL: Final = f"{API_GROUP}/collector"
MANAGED_BY_LABEL: Final = "app.kubernetes.io/managed-by"
MANAGED_BY: Final = "bottleneck-operator"
# Written by the webhook on a Job's pod template when it injected no collector on purpose.
COLLECTOR_SKIPPED_ANNOTATION: Final = f"{API_GROUP}/collector-skipped"
# Written by the webhook on a profiled workload whose collector runs without the host cgroup mount
# (the namespace's Pod Security level forbids hostPath): the value is that level.
COLLECTOR_NO_HOST_CGROUP_ANNOTATION: Final = f"{API_GROUP}/collector-no-host-cgroup"
# Written by the operator on each report: the few status fields the retention sweep decides on
# (controller.lifecycle), so that the sweep can list reports' metadata alone.
LIFECYCLE_ANNOTATION: Final = f"{API_GROUP}/lifecycle"
# Stamped by the webhook on the pod templates of profiled training workloads: the pod webhook's
# objectSelector, so only their pods are sent to it.
PROFILED_POD_LABEL: Final = f"{API_GROUP}/profiled"

# Written by the operator on a finished Job's report: the Job's cluster digest (its verdict, GPUs,
# time, places), so that a restarted operator's ClusterBottleneckSummary still counts the week's Jobs.
DIGEST_ANNOTATION: Final = f"{API_GROUP}/digest"

# Labels the operator reads: a namespace's enforced Pod Security level.
POD_SECURITY_ENFORCE_LABEL: Final = "pod-security.kubernetes.io/enforce"

# The injected collector.
COLLECTOR_CONTAINER: Final = "bottleneck-collector"
COLLECTOR_PORT_NAME: Final = "bn-metrics"
COLLECTOR_PORT: Final = 9105
COLLECTOR_PERIOD: Final = 5.0
COLLECTOR_METRIC_PREFIX: Final = "bottleneck_sidecar_"
