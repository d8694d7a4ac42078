"""Which label layout each exporter's series are stored in, read from the data itself.

Real monitoring stacks store the same metric names under different labels:

- dcgm-exporter behind a ServiceMonitor with ``honorLabels: false`` (its chart's and the GPU
  Operator's default): the workload in ``exported_namespace``/``exported_pod``/``exported_container``,
  the exporter's own pod in ``namespace``/``pod``; ``Hostname`` in tagged releases, ``hostname`` on
  newer ones.
- node-exporter: either ``node_uname_info{nodename}`` names the Kubernetes node, or (hostname
  override, cloud names, upper case) only the exporter pod's ``namespace``/``pod`` lead to the node
  through ``kube_pod_info`` (the join kube-prometheus-stack's own recording rules use).
- cAdvisor: with or without ``container_spec_*``, once or twice (``metrics_path="/metrics/resource"``);
  the catalog's expressions read every one of these without a setting (see :mod:`..plan.catalog`).

:func:`detect` asks one instant query; :class:`LayoutCache` keeps the answer per family and asks
again for a family when a pass finds nothing in it (an exporter redeployed with another layout).
The configured labels always win when they find series.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.window import JobWindow
from bottleneck_operator.settings import LabelSettings
from bottleneck_operator.telemetry.fetch.client import PrometheusClient
from bottleneck_operator.telemetry.fetch.store import labels_of, to_float
from bottleneck_operator.telemetry.plan.catalog import tag
from bottleneck_operator.telemetry.plan.names import (
    ScopedMatcher,
    add_matchers,
    quote,
    scrape_job_matchers,
    validate_matchers,
)
from bottleneck_operator.telemetry.plan.selectors import duration, sel

PROBE_LABEL = "bn_probe"
EXPORTED = ("exported_namespace", "exported_pod", "exported_container")
HOST_LABELS = ("Hostname", "hostname")
RESOURCE_PATH = "/metrics/resource"
FAMILIES = ("dcgm", "node", "cadvisor")
# How far back detection looks: long enough to see every exporter of a quiet cluster at least once.
DETECT_WINDOW = 3600.0
# A detection older than this is redone even when every family still answers.
REDETECT_AFTER = 3600.0


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
        if self.dcgm == "exported-labels":
            mapping = mapping.model_copy(
                update={
                    "dcgm_namespace_label": EXPORTED[0],
                    "dcgm_pod_label": EXPORTED[1],
                    "dcgm_container_label": EXPORTED[2],
                }
            )
        elif self.dcgm == "pod-labels":
            mapping = mapping.model_copy(
                update={
                    "dcgm_namespace_label": "namespace",
                    "dcgm_pod_label": "pod",
                    "dcgm_container_label": "container",
                }
            )
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


def detect(client: PrometheusClient, configured: LabelSettings, at: float, window: float = DETECT_WINDOW) -> Layout:
    """The layouts the data at ``at`` (and the ``window`` before it) is stored in.

    Args:
        client: the Prometheus client.
        configured: the configured label mapping (it wins where it finds series).
        at: evaluation time, unix seconds.
        window: how far back to look.

    Returns:
        The layout per family.
    """
    seen: dict[str, float] = {}
    clusters: list[str] = []
    for row in client.query(detection_query(configured, window), at):
        labels = labels_of(row)
        name = labels.get(PROBE_LABEL, "")
        if name == "clusters":
            clusters.append(labels.get("cluster", ""))
        else:
            seen[name] = to_float(row.get("value", [0, "NaN"])[1])  # type: ignore[index]
    return _layout(seen, configured, tuple(sorted(clusters)), at)


def _layout(seen: Mapping[str, float], configured: LabelSettings, clusters: tuple[str, ...], at: float) -> Layout:
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


def with_matchers(configured: LabelSettings) -> LabelSettings:
    """The mapping with its ``selector_matchers`` validated and normalised, and each exporter
    family's series restricted to its configured scrape jobs (``scrape_jobs``).

    Raises:
        InvalidName: a matcher is not one ``label<op>"value"``.
    """
    matchers = validate_matchers("selector_matchers", configured.selector_matchers)
    held = {(m, m.prefixes) for m in matchers if isinstance(m, ScopedMatcher)}  # already applied: idempotent
    scoped = [m for m in scrape_job_matchers(configured.scrape_jobs) if (m, m.prefixes) not in held]
    # model_copy, not validation: validation would turn the ScopedMatchers back into plain strings.
    return configured.model_copy(update={"selector_matchers": (*matchers, *scoped)})


class LayoutCache:
    """Detected layouts kept per client (one Prometheus) and configured mapping.

    A family that a pass expected but found empty is detected again on the next pass, and every
    detection is redone after :data:`REDETECT_AFTER` seconds.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: weakref.WeakKeyDictionary[PrometheusClient, dict[LabelSettings, Layout]] = (
            weakref.WeakKeyDictionary()
        )

    def resolve(self, client: PrometheusClient, configured: LabelSettings, at: float) -> tuple[LabelSettings, Layout]:
        """The mapping to read with at ``at``: from the kept layout, or detected afresh."""
        if not configured.label_layout_detection:
            return configured, Layout(dcgm="configured", node="configured", cadvisor="configured")
        with self._lock:
            kept = self._kept.get(client, {}).get(configured)
        if kept is None or abs(time.time() - kept.at) >= REDETECT_AFTER:
            kept = dataclasses.replace(detect(client, configured, at), at=time.time())
            with self._lock:
                self._kept.setdefault(client, {})[configured] = kept
        return kept.labels(configured), kept

    def forget(self, client: PrometheusClient, configured: LabelSettings) -> None:
        """Detect again on the next pass (a family it expected came back empty)."""
        with self._lock:
            self._kept.get(client, {}).pop(configured, None)

    def check_pass(
        self, client: PrometheusClient, configured: LabelSettings, layout: Layout, windows: Iterable[JobWindow]
    ) -> None:
        """After a pass: forget the layout when a family it found held nothing for Jobs that have pods."""
        expected = {
            "dcgm": (Family.DCGM_DEV,),
            "node": (Family.NODE, Family.NODE_PSI, Family.NODE_IB),
            "cadvisor": (Family.CADVISOR,),
        }
        found = layout.describe()
        with_pods = [w for w in windows if w.pods]
        if not with_pods:
            return
        for family, members in expected.items():
            if found[family] in ("absent", "unmapped", "no-join"):
                continue
            if not any(m in w.quality.families for w in with_pods for m in members):
                self.forget(client, configured)
                return


LAYOUTS = LayoutCache()
