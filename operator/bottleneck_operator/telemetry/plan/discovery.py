"""The queries that prepare a pass: the label layout, the Jobs' pods, their scrape intervals, where they ran.

These run before the catalog's signal queries. Real monitoring stacks store the same metric names
under different labels, so one instant query (:func:`detection_query`) first says which
:class:`Layout` each exporter family's series are in; the configured labels always win when they find
series:

- dcgm-exporter behind a ServiceMonitor with ``honorLabels: false`` (its chart's and the GPU
  Operator's default): the workload in ``exported_namespace``/``exported_pod``/``exported_container``,
  the exporter's own pod in ``namespace``/``pod``; ``Hostname`` in tagged releases, ``hostname`` on
  newer ones.
- node-exporter: either ``node_uname_info{nodename}`` names the Kubernetes node, or (hostname
  override, cloud names, upper case) only the exporter pod's ``namespace``/``pod`` lead to the node
  through ``kube_pod_info`` (the join kube-prometheus-stack's own recording rules use).
- cAdvisor: with or without ``container_spec_*``, once or twice (``metrics_path="/metrics/resource"``);
  the catalog's expressions read every one of these without a setting (see :mod:`.catalog`).

Then kube_pod_info gives pods and nodes (:func:`pods_query`), one instant query estimates each pod's
scrape interval per exporter (it sets rate() ranges and gauge windows) and, for pods
kube-state-metrics does not place, reads the node from the collector's or dcgm-exporter's labels.
What a pass learns here and keeps for the next (the layout, the interval estimates) is kept by
:mod:`..fetch.store`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from bottleneck_operator.contract.signals import Family, metrics_of
from bottleneck_operator.settings import LabelSettings
from bottleneck_operator.telemetry.plan.catalog import node_names, tag
from bottleneck_operator.telemetry.plan.names import add_matchers, quote
from bottleneck_operator.telemetry.plan.selectors import GROUP_LABEL, QueryContext, duration, sel

# The ``created_by_kind`` of pods that belong to a profiled workload directly: batch/v1 Jobs, and
# the Kubeflow Training Operator's PyTorchJob and MPIJob (which create their pods themselves).
POD_OWNER_KINDS = ("Job", "PyTorchJob", "MPIJob")
# Owners of child Jobs whose pods belong to the owner: JobSet (a Trainer v2 TrainJob runs as a
# JobSet of its own name), and the MPI Operator's MPIJob (v2beta1), whose launcher runs as a
# ``<name>-launcher`` Job. kube-state-metrics links a Job to its owner in ``kube_job_owner``.
JOB_OWNER_KINDS = ("JobSet", "MPIJob")


def pods_query(namespaces: str, jobs: str, prefixes: str, presence: float, matchers: Sequence[str] = ()) -> str:
    """The pods of the pass's workloads with their nodes (kube-state-metrics' kube_pod_info).

    A pod is a workload's when kube_pod_info names the workload as its owner (a Job, PyTorchJob or
    MPIJob), or when its owner is a child Job that ``kube_job_owner`` links to the workload (a
    JobSet's ``<name>-<replicated job>-<index>`` Jobs): such pods are answered with the workload's
    name as ``created_by_name``. Pods without an owner, and pods of a RayCluster or StatefulSet named
    after the workload (RayJob, LeaderWorkerSet), are matched by the ``<name>-`` prefix.

    Args:
        namespaces: regex alternation of namespaces.
        jobs: regex alternation of workload names (``created_by_name``).
        prefixes: regex alternation of ``<job>-.+`` patterns for pods whose owner labels are missing.
        presence: seconds a kube_pod_info sample counts as "the pod exists".
        matchers: extra matchers on every selector (``selector_matchers``, e.g. one cluster's).

    Returns:
        PromQL keeping namespace, pod, node, created_by_kind and created_by_name.
    """
    by = "namespace, pod, node, created_by_kind, created_by_name"
    ns = f"namespace=~{quote(namespaces)}"
    w = duration(presence)
    owned = sel(
        "kube_pod_info", ns, f"created_by_kind=~{quote('|'.join(POD_OWNER_KINDS))}", f"created_by_name=~{quote(jobs)}"
    )
    # kube-state-metrics writes "<none>" for an ownerless pod; relabelling may drop the label (= "").
    orphan = sel("kube_pod_info", ns, f"pod=~{quote(prefixes)}", 'created_by_name=~"|<none>"')
    # KubeRay names a RayJob's cluster <rayjob>-<5 chars> (<rayjob>-raycluster-<5 chars> before 1.1);
    # a LeaderWorkerSet's StatefulSets are <lws> (leaders) and <lws>-<group> (each group's workers).
    ray = sel(
        "kube_pod_info",
        ns,
        'created_by_kind="RayCluster"',
        f"created_by_name=~{quote(f'(?:{jobs})-(?:raycluster-)?[a-z0-9]{{5}}')}",
    )
    lws = sel(
        "kube_pod_info", ns, 'created_by_kind="StatefulSet"', f"created_by_name=~{quote(f'(?:{jobs})(?:-[0-9]+)?')}"
    )
    # Child Jobs are named after their owner, so only Jobs named "<workload>-..." are joined.
    child_pods = sel("kube_pod_info", ns, 'created_by_kind="Job"', f"created_by_name=~{quote(prefixes)}")
    owners = sel("kube_job_owner", ns, f"owner_kind=~{quote('|'.join(JOB_OWNER_KINDS))}", f"owner_name=~{quote(jobs)}")
    children = (
        f"label_replace(max by (namespace, job_name, owner_name) (last_over_time({owners}[{w}])), "
        '"created_by_name", "$1", "job_name", "(.+)")'
    )
    joined = (
        f"max by ({by}) (last_over_time({child_pods}[{w}])) "
        f"* on (namespace, created_by_name) group_left (owner_name) {children}"
    )
    via_jobs = f'max by ({by}) (label_replace({joined}, "created_by_name", "$1", "owner_name", "(.+)"))'
    expr = (
        f"max by ({by}) (last_over_time({owned}[{w}])) or {via_jobs} or max by ({by}) (last_over_time({orphan}[{w}]))"
        f" or max by ({by}) (last_over_time({ray}[{w}])) or max by ({by}) (last_over_time({lws}[{w}]))"
    )
    # The join's two sides get the same matchers (one cluster's pods with that cluster's Jobs).
    return add_matchers(expr, matchers)


def _interval_probe(group: Family, c: QueryContext) -> tuple[str, str]:
    """(selector, by-labels) of the series whose spacing gives a group's scrape interval."""
    if group is Family.DCGM:
        return c.dcgmsel(metrics_of("fb_used_frac")[0]), c.dcgm_by
    if group is Family.CADVISOR:
        return c.containersel(*metrics_of("cpu_cores")), "namespace, pod"
    if group is Family.KSM:
        return c.podsel("kube_pod_info"), "namespace, pod"
    if group is Family.SIDECAR:
        return c.podsel("bottleneck_sidecar_info"), "namespace, pod"
    if c.node_label:
        return sel(metrics_of("node_mem_avail_frac")[1], f"{c.node_label}=~{quote(c.nodes)}"), c.node_label
    if c.labels.node_exporter_join == "pod":
        # Per exporter pod; _to_nodes() places them on their nodes.
        return sel("node_uname_info", 'pod!=""'), "namespace, pod"
    return sel("node_uname_info", f"nodename=~{quote(c.nodes)}"), "nodename"


def _to_nodes(expr: str, c: QueryContext, window: float) -> str:
    """An expression by exporter pod (``namespace``, ``pod``) relabelled by its node (``nodename``)."""
    placed = f"max by (namespace, pod, node) (last_over_time({sel('kube_pod_info', f'node=~{quote(c.nodes)}')}[{duration(window)}]))"
    joined = f"{expr} * on (namespace, pod) group_left (node) {placed}"
    return f'min by (nodename) (label_replace({joined}, "nodename", "$1", "node", "(.+)"))'


def probe_windows(start: float, end: float, step: float) -> tuple[int, float, float]:
    """How :func:`interval_query` cuts a window: (sub-windows, their spacing, their length), seconds.

    Sub-windows are at most 10 minutes long and end every ``spacing`` seconds back from ``end``; the
    first one is ``(end - length, end]``.
    """
    span = max(end - start, step)
    k = max(1, min(3, int(span // (8 * step))))
    spacing = round(span / k, 3)
    return k, spacing, min(spacing, 600.0)


def interval_query(groups: Iterable[Family], ctx: QueryContext, start: float, end: float, step: float) -> str:
    """Seconds between samples per pod (per node for node-exporter), as an instant query at ``end``.

    For each series and sub-window: (time of its last sample - time of the last sample before it)
    / samples in it, which is exact without gaps; for a series born inside the sub-window,
    (its last sample - the sub-window's start) / (samples - 1), an upper bound. The window is cut
    into up to three sub-windows and the smallest estimate kept, so an exporter outage inside one of
    them does not inflate the interval (a short Job born in one sub-window with an outage in the
    others reads a little high: the bound is the best instant selectors give); the median over
    a pod's series is its estimate. Instant selectors only: no subquery, cheap for thousands of pods.

    Args:
        groups: the groups to estimate.
        ctx: selectors of the pass.
        start: window start (unix seconds).
        end: window end, the evaluation time.
        step: subquery resolution.

    Returns:
        PromQL whose series carry ``bn_group`` and the group's pod (or node) labels.
    """
    k, spacing, sub = probe_windows(start, end, step)
    w_open = duration(sub - 0.001)  # (lo, end]: a sample exactly at lo is the one "before"
    parts = []
    for g in groups:
        probe, by = _interval_probe(g, ctx)
        pieces = []
        for i in range(k):
            off = f" offset {duration(i * spacing)}" if i else ""
            lo = end - i * spacing - sub
            # Exact: from the last sample before the sub-window to its last sample, `count` intervals.
            last = f"(timestamp({probe}{off}) >= {lo:.3f})"
            before = f"timestamp({probe} offset {duration(i * spacing + sub)})"
            count = f"count_over_time({probe}[{w_open}]{off})"
            exact = f"({last} - {before}) / ({count} > 0)"
            # A series born inside the sub-window: from the sub-window's start to its last sample over
            # (samples - 1), at or above the interval; its last sample, not the sub-window's end,
            # bounds it, so a series that also ended early is not stretched by the time it was gone.
            upper = f"({last} - {lo:.3f}) / (({count} - 1) > 0)"
            pieces.append(tag(f"quantile by ({by}) (0.5, ({exact}) or ({upper}))", "bn_sub", str(i)))
        estimate = f"min by ({by}) ({' or '.join(pieces)})"
        if g is Family.NODE and not ctx.node_label and ctx.labels.node_exporter_join == "pod":
            estimate = _to_nodes(estimate, ctx, max(end - start, step) + LOOKBACK_DELTA)
        parts.append(tag(estimate, GROUP_LABEL, g.exporter_name))
    return add_matchers(" or ".join(parts), ctx.labels.selector_matchers)


NODE_HINT = "_node_hint"  # bn_group value of the pod -> node fallbacks
LOOKBACK_DELTA = 300.0  # Prometheus's default --query.lookback-delta (Thanos and Mimir use the same)
INSTANCES = "_instances"  # bn_group value of the node -> node-exporter instance map


def instances_query(ctx: QueryContext, start: float, end: float, unplaced: QueryContext | None = None) -> str:
    """node-exporter instances of the pass's nodes (join mode), as an instant query at ``end``.

    Filtering node-exporter series by these instances keeps a large cluster's other nodes (their
    CPUs x modes series above all) out of every node query. The window reaches one lookback delta
    (Prometheus's default, 5 minutes) before ``start``, as far back as the node queries' own
    ``node_uname_info`` join sees at the first step.

    Args:
        ctx: selectors of the pass (its ``nodes``, from kube_pod_info).
        start: window start.
        end: window end, the evaluation time.
        unplaced: selectors of the pods kube_pod_info does not place (their ``pods``), or None.
            Their nodes are only known from the collector's ``node`` and dcgm-exporter's host
            labels, which this same query reads to find those nodes' instances as well.

    Returns:
        PromQL tagged ``bn_group="_instances"`` carrying instance and nodename.
    """
    w = duration(max(end - start, 1.0) + LOOKBACK_DELTA)
    parts = [node_names(ctx, w)]
    if unplaced is not None:
        host = unplaced.dcgm_hostname_label
        sidecar = f"max by (node) (last_over_time({unplaced.podsel('bottleneck_sidecar_info')}[{w}]))"
        dcgm = f"max by ({host}) (last_over_time({unplaced.dcgmsel('DCGM_FI_DEV_FB_USED')}[{w}]))"
        hosts = (
            f'label_replace({sidecar}, "nodename", "$1", "node", "(.+)") or '
            f'label_replace({dcgm}, "nodename", "$1", {quote(host)}, "(.+)")'
        )
        # Every node's uname series is read here (one value per node): cheap next to a range query.
        every = dataclasses.replace(unplaced, nodes=".+")
        parts.append(f"max by (instance, nodename) ({node_names(every, w)} and on (nodename) ({hosts}))")
    return add_matchers(tag(" or ".join(parts), GROUP_LABEL, INSTANCES), ctx.labels.selector_matchers)


def node_hint_query(ctx: QueryContext, start: float, end: float) -> str:
    """Where each pod ran according to the collector's ``node`` label and dcgm-exporter's host label.

    Only used for pods that kube_pod_info does not place on a node (kube-state-metrics missing).
    An instant query at ``end`` over the whole window; the answer carries namespace, pod and node.

    Args:
        ctx: selectors of the pass.
        start: window start.
        end: window end, the evaluation time.

    Returns:
        PromQL tagged ``bn_group="_node_hint"`` and ``bn_source`` ("sidecar" or "dcgm").
    """
    w = duration(max(end - start, 1.0))
    sidecar = f"max by (namespace, pod, node) (last_over_time({ctx.podsel('bottleneck_sidecar_info')}[{w}]))"
    by = f"{ctx.dcgm_by}, {ctx.dcgm_hostname_label}"
    dcgm = f"max by ({by}) (last_over_time({ctx.dcgmsel('DCGM_FI_DEV_FB_USED')}[{w}]))"
    expr = " or ".join(
        tag(tag(expr, "bn_source", source), GROUP_LABEL, NODE_HINT)
        for source, expr in (("sidecar", sidecar), ("dcgm", dcgm))
    )
    return add_matchers(expr, ctx.labels.selector_matchers)


# --- the label layout: which labels each exporter's series carry

PROBE_LABEL = "bn_probe"
EXPORTED = ("exported_namespace", "exported_pod", "exported_container")
HOST_LABELS = ("Hostname", "hostname")
RESOURCE_PATH = "/metrics/resource"
# How far back detection looks: long enough to see every exporter of a quiet cluster at least once.
DETECT_WINDOW = 3600.0


@dataclass(frozen=True)
class Layout:
    """The layout found per family.

    Attributes:
        dcgm: "pod-labels" (pod mapping in namespace/pod), "exported-labels" (honorLabels: false),
            "configured" (the configured labels found series) or "absent".
        dcgm_host: dcgm-exporter's host label ("Hostname" or "hostname").
        node: "node-label" (configured), "uname-join", "pod-join" or "absent".
        cadvisor: "with-spec", "no-spec" (kube-prometheus-stack drops container_spec_*), or "absent".
        cadvisor_paths: the kubelet paths the cAdvisor counters appear under (deduplicated by the catalog).
        clusters: values of a ``cluster`` label on kube_pod_info (several: set selector_matchers).
        at: when it was detected (unix seconds).
    """

    dcgm: str = "absent"
    dcgm_host: str = "Hostname"
    node: str = "absent"
    cadvisor: str = "absent"
    cadvisor_paths: tuple[str, ...] = ()
    clusters: tuple[str, ...] = ()
    at: float = 0.0

    def describe(self) -> dict[str, str]:
        """The layout per family, for the report's data quality."""
        return {"dcgm": self.dcgm, "node": self.node, "cadvisor": self.cadvisor}

    def labels(self, configured: LabelSettings) -> LabelSettings:
        """The label mapping to read this layout with (the configured one where it finds series)."""
        mapping = configured
        pod_labels = {"exported-labels": EXPORTED, "pod-labels": ("namespace", "pod", "container")}.get(self.dcgm)
        if pod_labels is not None:
            settings = ("dcgm_namespace_label", "dcgm_pod_label", "dcgm_container_label")
            mapping = mapping.model_copy(update=dict(zip(settings, pod_labels, strict=True)))
        if self.dcgm != "absent":
            mapping = mapping.model_copy(update={"dcgm_hostname_label": self.dcgm_host})
        if self.node in ("uname-join", "pod-join") and not configured.node_exporter_node_label:
            mapping = mapping.model_copy(update={"node_exporter_join": self.node.removesuffix("-join")})
        return mapping


def _present(selector: str, w: str) -> str:
    return f"group(last_over_time({selector}[{w}]))"


def detection_query(configured: LabelSettings, window: float = DETECT_WINDOW) -> str:
    """One instant query whose series say which layouts hold data (tagged ``bn_probe``)."""
    w = duration(window)
    placed = sel("kube_pod_info", 'node!=""')
    # Node names as Kubernetes knows them: kube_pod_info's, else the collector's and dcgm-exporter's.
    named = [f"group by (node) (last_over_time({placed}[{w}]))"]
    collectors = sel("bottleneck_sidecar_info", 'node!=""')
    named.append(f"group by (node) (last_over_time({collectors}[{w}]))")
    for h in HOST_LABELS:
        gpus = sel("DCGM_FI_DEV_FB_USED", h + '!=""')
        hosts = f"group by ({h}) (last_over_time({gpus}[{w}]))"
        named.append(f'label_replace({hosts}, "node", "$1", {quote(h)}, "(.+)")')
    nodes = f"group by (node) ({' or '.join(named)})"
    pods = f'label_replace({nodes}, "nodename", "$1", "node", "(.+)")'
    uname = f"group by (nodename) (last_over_time({sel('node_uname_info')}[{w}]))"
    exporters = sel("node_uname_info", 'pod!=""')
    exporter_pods = f"max by (namespace, pod) (last_over_time({exporters}[{w}]))"
    on_node = f"max by (namespace, pod, node) (last_over_time({placed}[{w}]))"
    fb = "DCGM_FI_DEV_FB_USED"
    ds = sel("kube_pod_info", 'created_by_kind="DaemonSet"')
    daemonsets = f"group by (namespace, pod) (last_over_time({ds}[{w}]))"

    def own_pods(metric: str) -> str:
        with_pod = sel(metric, 'pod!=""')
        return f"group by (namespace, pod) (last_over_time({with_pod}[{w}]))"

    probes = {
        "dcgm_configured": _present(sel(fb, configured.dcgm_pod_label + '!=""'), w),
        "dcgm_exported": _present(sel(fb, f'{EXPORTED[1]}!=""'), w),
        "dcgm_pod": _present(sel(fb, 'pod!=""'), w),
        # honorLabels: false without pod mapping: "pod" is the exporter's own DaemonSet pod
        "dcgm_pod_workload": f"count({own_pods(fb)} unless on (namespace, pod) {daemonsets})",
        "dcgm_any": _present(sel(fb), w),
        **{f"host_{h}": _present(sel(fb, f'{h}!=""'), w) for h in HOST_LABELS},
        "node_any": _present(sel("node_uname_info"), w),
        "node_uname": f"count({uname} and on (nodename) {pods})",
        "node_pod": f"count(group by (node) ({exporter_pods} * on (namespace, pod) group_left (node) {on_node}))",
        "cad_any": _present(sel("container_cpu_usage_seconds_total"), w),
        "cad_spec": _present(sel("container_spec_memory_limit_bytes"), w),
        "cad_resource": _present(sel("container_cpu_usage_seconds_total", f"metrics_path={quote(RESOURCE_PATH)}"), w),
        "cad_other": _present(sel("container_cpu_usage_seconds_total", f"metrics_path!={quote(RESOURCE_PATH)}"), w),
    }
    parts = [tag(expr, PROBE_LABEL, name) for name, expr in probes.items()]
    with_cluster = sel("kube_pod_info", 'cluster!=""')
    clusters = f"count by (cluster) (last_over_time({with_cluster}[{w}]))"
    parts.append(tag(clusters, PROBE_LABEL, "clusters"))
    return add_matchers(" or ".join(parts), configured.selector_matchers)


def layout_from(seen: Mapping[str, float], configured: LabelSettings, clusters: tuple[str, ...], at: float) -> Layout:
    """The layout that :func:`detection_query`'s answer shows (``seen``: its value per ``bn_probe`` name)."""

    def has(name: str) -> bool:
        return seen.get(name, 0.0) > 0

    if has("dcgm_configured") and configured.dcgm_pod_label not in ("pod", EXPORTED[1]):
        dcgm = "configured"
    elif has("dcgm_exported"):
        dcgm = "exported-labels"
    elif has("dcgm_pod_workload"):
        dcgm = "pod-labels"
    else:
        dcgm = "unmapped" if has("dcgm_any") else "absent"
    host = configured.dcgm_hostname_label
    if not has(f"host_{host}"):
        host = next((h for h in HOST_LABELS if has(f"host_{h}")), host)
    if configured.node_exporter_node_label:
        node = "node-label"
    elif has("node_uname"):
        node = "uname-join"
    elif has("node_pod"):
        node = "pod-join"
    else:
        node = "no-join" if has("node_any") else "absent"
    cadvisor = ("with-spec" if has("cad_spec") else "no-spec") if has("cad_any") else "absent"
    paths = tuple(p for p, key in ((RESOURCE_PATH, "cad_resource"), ("/metrics/cadvisor", "cad_other")) if has(key))
    return Layout(dcgm, host, node, cadvisor, paths, clusters, at)
