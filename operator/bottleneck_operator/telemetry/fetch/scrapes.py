"""Whether Prometheus actually scrapes the collectors and the exporters: ``up``, and its scrape pools.

A family's series can be present while part of it is lost: an exporter whose targets are down on
some nodes, or collectors injected into pods that no PodMonitor selects. This module reads three
things, for :mod:`.doctor` to judge:

- the pods that run the collector (kube-state-metrics' container info, the injected container's
  fixed name) against those whose collector Prometheus holds series of;
- ``up`` of the collector targets (a PodMonitor gives its targets the ``container`` label) and of the
  exporters' jobs, found by the job label of the series each family publishes;
- where the API serves it (Prometheus >= 2.42; not Thanos or Mimir), the scrape pools, where a
  PodMonitor that this Prometheus selects shows as ``podMonitor/<namespace>/<name>/<endpoint>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bottleneck_operator.contract.names import COLLECTOR_CONTAINER
from bottleneck_operator.errors import BottleneckError
from bottleneck_operator.settings import LabelSettings
from bottleneck_operator.telemetry.fetch.client import PrometheusClient
from bottleneck_operator.telemetry.fetch.store import labels_of, to_float
from bottleneck_operator.telemetry.plan.catalog import tag
from bottleneck_operator.telemetry.plan.names import add_matchers, quote, validate_matchers
from bottleneck_operator.telemetry.plan.selectors import duration, sel

PROBE = "bn_scrape"
# What each exporter family publishes, to find its scrape jobs by their job label.
EXPORTER_METRICS = {
    "dcgm-exporter": "DCGM_FI_DEV_GPU_UTIL",
    "kube-state-metrics": "kube_pod_info",
    "node-exporter": "node_cpu_seconds_total",
    "cadvisor": "container_cpu_usage_seconds_total",
}
# The chart's PodMonitor is named <release fullname>-collectors; prometheus-operator names its pool so.
COLLECTOR_POOL = re.compile(r"^podMonitor/[^/]+/[^/]*-collectors/\d+$")
UNSCRAPED_SHOWN = 5  # pod names a finding lists; the count says how many more


@dataclass(frozen=True)
class Targets:
    """``up`` of one set of targets at the check's time: how many, and how many failed their last scrape."""

    total: int
    down: int


@dataclass(frozen=True)
class ScrapeState:
    """What Prometheus scrapes, as read at one time.

    Attributes:
        collector_pods: pods running the collector (kube-state-metrics), None when it has no such series.
        unscraped_pods: of those, pods whose collector left no series; their names, sorted, at most a few.
        unscraped_count: how many such pods in all.
        collector_targets: ``up`` of the collector targets (None: no target at all).
        exporters: exporter family -> ``up`` of the jobs that publish its series.
        pools: the scrape pools of the chart's PodMonitor; None when the API does not list pools.
        pools_error: why the pools could not be listed ("" when they were).
    """

    collector_pods: int | None
    unscraped_pods: tuple[str, ...]
    unscraped_count: int
    collector_targets: Targets | None
    exporters: dict[str, Targets] = field(default_factory=dict)
    pools: tuple[str, ...] | None = None
    pools_error: str = ""


def _collector_pods(ns: list[str], w: str) -> str:
    """The pods running the collector in the window: a native sidecar is an init container, else a container."""
    c = f"container={quote(COLLECTOR_CONTAINER)}"
    return (
        f"group by (namespace, pod) (last_over_time({sel('kube_pod_init_container_info', c, *ns)}[{w}]) "
        f"or last_over_time({sel('kube_pod_container_info', c, *ns)}[{w}]))"
    )


def _queries(namespace: str | None, window: float) -> dict[str, str]:
    ns = [f"namespace={quote(namespace)}"] if namespace else []
    w = duration(window)
    pods = _collector_pods(ns, w)
    scraped = f"group by (namespace, pod) (last_over_time({sel('bottleneck_sidecar_info', *ns)}[{w}]))"
    up = sel("up", f"container={quote(COLLECTOR_CONTAINER)}", *ns)
    out = {
        "collector_pods": f"count({pods})",
        "collector_up_total": f"count({up})",
        "collector_up_down": f"count({up} == 0)",
    }
    for family, metric in EXPORTER_METRICS.items():
        jobs = f"group by (job) (last_over_time({sel(metric)}[{w}]))"
        out[f"{family}|total"] = f"count(up and on (job) {jobs})"
        out[f"{family}|down"] = f"count((up == 0) and on (job) {jobs})"
    out["unscraped"] = f"({pods} unless on (namespace, pod) {scraped})"
    return out


def read(client: PrometheusClient, at: float, window: float, matchers: list[str], namespace: str | None) -> ScrapeState:
    """One instant query for the counts, and the scrape pools where the API lists them.

    Args:
        client: the Prometheus client.
        at: evaluation time (unix seconds).
        window: seconds back that a pod or a job counts as present.
        matchers: the configured selector matchers (e.g. one cluster's), added to every selector.
        namespace: look at this namespace's collectors only (the exporters are cluster-wide).

    Raises:
        PrometheusUnavailable, QueryRejected: as for any query.
    """
    queries = _queries(namespace, window)
    parts = [tag(expr, PROBE, name) for name, expr in queries.items()]
    counts: dict[str, int] = {}
    unscraped: list[str] = []
    for row in client.query(add_matchers(" or ".join(parts), matchers), at):
        labels = labels_of(row)
        name = labels.get(PROBE, "")
        if name == "unscraped":
            unscraped.append(f"{labels.get('namespace', '')}/{labels.get('pod', '')}")
        else:
            counts[name] = int(to_float(row.get("value", [0, "0"])[1]))  # type: ignore[index]
    targets = None
    if "collector_up_total" in counts:
        targets = Targets(counts["collector_up_total"], counts.get("collector_up_down", 0))
    exporters = {
        family: Targets(counts[f"{family}|total"], counts.get(f"{family}|down", 0))
        for family in EXPORTER_METRICS
        if f"{family}|total" in counts
    }
    pools: tuple[str, ...] | None = None
    error = ""
    try:
        pools = tuple(p for p in client.scrape_pools() if COLLECTOR_POOL.match(p))
    except BottleneckError as exc:
        error = str(exc)
    return ScrapeState(
        collector_pods=counts.get("collector_pods"),
        unscraped_pods=tuple(sorted(unscraped)[:UNSCRAPED_SHOWN]),
        unscraped_count=len(unscraped),
        collector_targets=targets,
        exporters=exporters,
        pools=pools,
        pools_error=error,
    )


def assess(state: ScrapeState) -> tuple[str, list[str]]:
    """What was found, in one line, and the changes that would close each gap (none: all is scraped)."""
    found, fixes = [], []
    pods, targets = state.collector_pods, state.collector_targets
    if pods:
        found.append(f"collectors in {pods} pods, {pods - state.unscraped_count} scraped")
    if targets is not None:
        found.append(f"{targets.total} collector targets, {targets.down} down")
    if state.pools is None:
        found.append("scrape pools not listed by this API")
    else:
        found.append(f"PodMonitor pool {state.pools[0]}" if state.pools else "no PodMonitor pool for the collectors")
    found += [f"{family} {t.total - t.down}/{t.total} up" for family, t in state.exporters.items()]
    if state.unscraped_count:
        names = ", ".join(state.unscraped_pods) + (", ..." if state.unscraped_count > len(state.unscraped_pods) else "")
        found.append(f"not scraped: {names}")
        if state.pools == () or targets is None:
            fixes.append(
                "no PodMonitor of the collectors is in use: with the Prometheus Operator's CRDs installed, `helm upgrade` "
                "(sidecar.podMonitor.enabled=auto creates it once the kind is served), and label it as the "
                "Prometheus's podMonitorSelector asks (kube-prometheus-stack: monitoring.labels.release=<its release "
                "name>, or prometheus.prometheusSpec.podMonitorSelectorNilUsesHelmValues=false)"
            )
    if targets is not None and targets.down:
        fixes.append(
            "collector targets fail their scrapes: allow Prometheus to reach the pods' bn-metrics port (a "
            "NetworkPolicy of the Job's namespace); Prometheus's Targets page shows each one's last error"
        )
    fixes += [
        f"{family}: {t.down} of {t.total} targets down: see Prometheus's Targets page for their errors"
        for family, t in state.exporters.items()
        if t.down
    ]
    return "; ".join(found) or "no collector pods, no exporter targets", fixes


_FAMILY = "bn_family"  # the label each family's probe is tagged with
# One metric per exporter family, to see which scrape jobs write the family.
_FAMILY_PROBES = {
    "dcgm": "DCGM_FI_DEV_FB_USED",
    "node": "node_uname_info",
    "cadvisor": "container_cpu_usage_seconds_total",
    "ksm": "kube_pod_info",
    "sidecar": "bottleneck_sidecar_info",
}


def unread_jobs(client: PrometheusClient, labels: LabelSettings, at: float, window: float) -> list[str]:
    """A note per family whose series some scrape job outside ``scrape_jobs`` writes: never read."""
    allowed = {family: set(jobs) for family, jobs in labels.scrape_jobs if jobs}
    if not allowed:
        return []
    w = duration(window)
    parts = [
        tag(f"count by (job) (last_over_time({sel(metric)}[{w}]))", _FAMILY, family)
        for family, metric in _FAMILY_PROBES.items()
        if family in allowed
    ]
    matchers = validate_matchers("selector_matchers", labels.selector_matchers)
    unread: dict[str, set[str]] = {}
    for row in client.query(add_matchers(" or ".join(parts), matchers), at):
        found = labels_of(row)
        family, job = found.get(_FAMILY, ""), found.get("job", "")
        if family in allowed and job not in allowed[family]:
            unread.setdefault(family, set()).add(job or "(none)")
    return [
        f"{family} series under scrape job(s) {', '.join(sorted(jobs))} are not read: not in scrape_jobs"
        for family, jobs in sorted(unread.items())
    ]
