"""Selectors and ranges shared by every query: the pass's context, label layout, durations, and
selections cut to the longest request a server accepts.

Counter rates use a range of ``max(step + scrape interval, 4 x scrape interval)`` (the rule
Grafana's ``$__rate_interval`` follows), with the scrape interval estimated from the data: at least
four samples per range survive a missed scrape and counter resets, and nothing is lost between two
evaluation steps. Gauges are read with ``last_over_time(x[1.1 x max(step, scrape interval)])``
rather than a bare selector, so a gap in the data stays a gap instead of being bridged by the
server's lookback delta (5 minutes by default, and different on Thanos/Mimir).
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

# The sampling rules belong to the window contract (contract/sampling.py); re-exported here for
# the data layer's modules.
from bottleneck_operator.contract.sampling import DEFAULT_SCRAPE_INTERVAL as DEFAULT_SCRAPE_INTERVAL
from bottleneck_operator.contract.sampling import gauge_window as gauge_window
from bottleneck_operator.contract.sampling import range_milliseconds
from bottleneck_operator.contract.sampling import rate_range as rate_range
from bottleneck_operator.contract.signals import VIRTUAL_NICS as VIRTUAL_NICS
from bottleneck_operator.contract.signals import Family
from bottleneck_operator.settings import LabelSettings
from bottleneck_operator.telemetry.plan.names import escape_regex, quote, regex_alternation

GROUP_LABEL = "bn_group"  # tag of the scrape-interval estimates
COLLECTOR_CONTAINER = "bottleneck-collector"  # the injected sidecar: its own CPU must not count as the job's
# Per-node system pods (exporters, CNI, kube-proxy) are everywhere: they are not "neighbours".
SYSTEM_OWNER_KINDS = "DaemonSet|Node"
INTERNAL_GPUS = "_gpus"  # GPUs per pod and their modelName
INTERNAL_UNMAPPED = "_unmapped_gpus"  # GPU series on the job's nodes without a pod label
INTERNAL_ON_NODE = "_pod_on_node"  # every non-system pod on the job's nodes
INTERNAL_CPU_MODES = "_node_cpu_modes"  # node CPU seconds per mode: the node_cpu_*_frac signals
# Bytes of PromQL one request may carry: VictoriaMetrics refuses more than 16 KiB by default, and
# gateways in front of Thanos and Mimir have limits of the same kind (settings: max_query_bytes).
DEFAULT_MAX_QUERY_BYTES = 12000


@dataclass(frozen=True)
class PodPrefixes:
    """Jobs whose pods one ``<job>-.+`` pattern selects, so a selector does not grow with pods.

    Only Jobs with two pods or more are listed (one pod's name is no longer than the pattern, and
    Prometheus matches a pure list of names as a set), and only Jobs no other Job of the pass
    extends (``a-.+`` would also match the pods of Job ``a-b``).

    Attributes:
        members: Job name -> the names of its pods that kube_pod_info shows.
    """

    members: Mapping[str, frozenset[str]]

    def job_of(self, pod: str) -> str | None:
        """The listed Job a pod name belongs to (the longest ``<job>-`` prefix), or None."""
        cut = pod.rfind("-")
        while cut > 0:
            if pod[:cut] in self.members:
                return pod[:cut]
            cut = pod.rfind("-", 0, cut)
        return None

    def compact(self, names: Iterable[str]) -> tuple[list[str], list[str]]:
        """Names as (names left to list, ``<job>-.+`` patterns of Jobs whose every pod is among them)."""
        by_job: dict[str, set[str]] = {}
        literal: list[str] = []
        for name in names:
            job = self.job_of(name)
            if job is None:
                literal.append(name)
            else:
                by_job.setdefault(job, set()).add(name)
        patterns = []
        for job, chosen in by_job.items():
            if self.members[job] <= chosen:
                patterns.append(escape_regex(job) + "-.+")
            else:
                literal.extend(chosen)
        return sorted(literal), sorted(patterns)


def pod_prefixes(jobs: Mapping[str, Iterable[str]]) -> PodPrefixes:
    """The :class:`PodPrefixes` of a pass's Jobs (Job name -> its placed pods' names)."""
    names = sorted(jobs)
    listed = {}
    for job in names:
        pods = frozenset(jobs[job])
        # Names extending "<job>-" sort right after "<job>-" itself: one look-up, not a scan.
        at = bisect.bisect_left(names, job + "-")
        extended = at < len(names) and names[at].startswith(job + "-")
        if len(pods) >= 2 and not extended:
            listed[job] = pods
    return PodPrefixes(listed)


@dataclass(frozen=True)
class QueryContext:
    """What the expressions of one pass are built from (all values already escaped regexes).

    Attributes:
        namespaces: regex alternation of the pass's namespaces.
        pods: regex alternation of the pods (names found in kube_pod_info, or ``<job>-.+`` prefixes).
        nodes: regex alternation of the pods' nodes.
        labels: the label-mapping settings (already validated as label names).
        rate_ranges: seconds of the rate() range per exporter (keyed by its :attr:`Family.exporter`).
        gauge_windows: seconds a gauge sample stays valid, per exporter.
        instances: regex alternation of the nodes' node-exporter instances ("" = unknown).
        max_query_bytes: the most PromQL bytes one request may carry (selections are cut to fit).
        prefixes: the Jobs whose pods a ``<job>-.+`` pattern selects (None: list every pod).
    """

    namespaces: str
    pods: str
    nodes: str
    labels: LabelSettings
    rate_ranges: Mapping[Family, float] | None = None
    gauge_windows: Mapping[Family, float] | None = None
    instances: str = ""
    max_query_bytes: int = DEFAULT_MAX_QUERY_BYTES
    prefixes: PodPrefixes | None = None

    @property
    def node_label(self) -> str:
        """Label on node-exporter series naming the node; "" joins node_uname_info on instance."""
        return self.labels.node_exporter_node_label

    @property
    def dcgm_namespace_label(self) -> str:
        return self.labels.dcgm_namespace_label

    @property
    def dcgm_pod_label(self) -> str:
        return self.labels.dcgm_pod_label

    @property
    def dcgm_hostname_label(self) -> str:
        return self.labels.dcgm_hostname_label

    def rate_range(self, family: Family) -> str:
        """The rate() range of a family's exporter (a scrape interval is the exporter's, not the family's)."""
        seconds = (self.rate_ranges or {}).get(family.exporter, 4 * DEFAULT_SCRAPE_INTERVAL)
        return duration(seconds)

    def last(self, family: Family, selector: str) -> str:
        """The latest sample of a gauge selector, if recent enough (``last_over_time``)."""
        seconds = (self.gauge_windows or {}).get(family.exporter, 1.1 * DEFAULT_SCRAPE_INTERVAL)
        return f"last_over_time({selector}[{duration(seconds)}])"

    @property
    def node_key(self) -> str:
        """The label that names the node in node-level answers."""
        return self.node_label or "nodename"

    # --- selectors

    def podsel(self, metric: str, *extra: str) -> str:
        """``metric{namespace=~..., pod=~..., extra...}`` (cAdvisor, kube-state-metrics, sidecar)."""
        return sel(metric, f"namespace=~{quote(self.namespaces)}", f"pod=~{quote(self.pods)}", *extra)

    def containersel(self, metric: str, *extra: str) -> str:
        """A cAdvisor selector over the pods' workload containers only.

        The pod-level cgroup (``container=""``), the pause container (``POD``) and the collector
        sidecar are excluded, so summing over containers gives the training workload alone.
        """
        return self.podsel(
            metric, 'container!=""', 'container!="POD"', f"container!={quote(COLLECTOR_CONTAINER)}", *extra
        )

    def dcgmsel(self, metric: str) -> str:
        return sel(
            metric,
            f"{self.dcgm_namespace_label}=~{quote(self.namespaces)}",
            f"{self.dcgm_pod_label}=~{quote(self.pods)}",
        )

    @property
    def dcgm_by(self) -> str:
        return f"{self.dcgm_namespace_label}, {self.dcgm_pod_label}"

    def node_filter(self, *extra: str) -> list[str]:
        """Matchers restricting node-exporter series to the pass's nodes, plus ``extra``.

        With ``node_label`` set, that label filters directly; otherwise the instances that
        node_uname_info maps to the nodes (when known) keep the rest of the cluster out.
        """
        if self.node_label:
            return [f"{self.node_label}=~{quote(self.nodes)}", *extra]
        if self.instances:
            return [f"instance=~{quote(self.instances)}", *extra]
        return list(extra)

    @property
    def node_unit(self) -> str:
        """The label node-exporter expressions aggregate by before the node name is attached."""
        return self.node_label or "instance"

    def to_node(self, expr: str, agg: str, keep: str = "") -> str:
        """Name the node of an expression aggregated ``by (node_unit)``.

        In join mode node_uname_info's ``nodename`` is attached on ``instance`` after the
        per-instance aggregation, so the join touches one series per node, not one per CPU or
        device; ``agg`` then merges the instances of a node (normally one). ``keep`` names further
        labels the expression is aggregated by (e.g. ``mode``).
        """
        if self.node_label:
            return expr
        uname = sel("node_uname_info", f"nodename=~{quote(self.nodes)}")
        # max by() collapses duplicate uname series (e.g. during a kernel-version label change)
        # so the join stays many-to-one.
        joined = f"({expr}) * on (instance) group_left (nodename) max by (instance, nodename) ({uname})"
        return f"{agg} by (nodename{', ' + keep if keep else ''}) ({joined})"

    def node_rate(self, metric: str, *extra: str) -> str:
        """rate() of node-exporter counters of the pass's nodes (not aggregated)."""
        return f"rate({sel(metric, *self.node_filter(*extra))}[{self.rate_range(Family.NODE)}])"

    def node_last(self, metric: str, *extra: str) -> str:
        """Latest samples of node-exporter gauges of the pass's nodes (not aggregated)."""
        return self.last(Family.NODE, sel(metric, *self.node_filter(*extra)))


def sel(metric: str, *matchers: str) -> str:
    return metric + "{" + ",".join(m for m in matchers if m) + "}"


def duration(seconds: float) -> str:
    """A PromQL duration in whole milliseconds (e.g. ``60000ms``), rounded up."""
    return f"{range_milliseconds(seconds)}ms"


def alternation(literals: Sequence[str], patterns: Sequence[str] = ()) -> str:
    """Escaped literals plus ready-made regex patterns, as one alternation (never empty)."""
    alts = [escape_regex(v) for v in literals] + list(patterns)
    return "|".join(alts) if alts else regex_alternation([])


def pod_selections(
    base: QueryContext, names: Sequence[str], prefixes: Sequence[str]
) -> tuple[QueryContext | None, QueryContext | None]:
    """Contexts selecting pods by name and by ``<job>-`` prefix (None where there is nothing to select).

    Each kind gets a selector of its own: Prometheus matches a pure list of names as a set, but runs
    a regex mixing names and prefixes against every pod name it knows. A Job whose every pod is
    among ``names`` is selected by its prefix (``base.prefixes``), so a selector grows with Jobs,
    not with pods.

    Args:
        base: the selectors to narrow.
        names: pod names.
        prefixes: ``<job>-.+`` regex patterns.

    Returns:
        (by name, by prefix).
    """
    patterns = list(prefixes)
    if base.prefixes is not None:
        names, compacted = base.prefixes.compact(names)
        patterns = sorted({*patterns, *compacted})
    by_name = dataclasses.replace(base, pods=alternation(names)) if names else None
    by_prefix = dataclasses.replace(base, pods=alternation([], patterns)) if patterns else None
    return by_name, by_prefix


def query_bytes(promql: str) -> int:
    """The size a server's query-length limit counts: the expression's UTF-8 bytes."""
    return len(promql.encode())


# Fields a context is cut along, in order: each is a plain ``a|b|c`` alternation (names and
# ``<job>-.+`` patterns never hold a "|"), so any part of it selects part of the same series.
_CUT_FIELDS = ("pods", "instances", "nodes")


def fit(ctx: QueryContext, build: Callable[[QueryContext], str]) -> list[QueryContext]:
    """``ctx`` cut into contexts over fewer pods (or instances, nodes) whose expressions fit the limit.

    The alternation the expression uses is halved until ``build`` of each part stays within
    ``ctx.max_query_bytes``; parts select disjoint series, so their answers together are the
    whole answer. A single pod (node) that still does not fit is left as it is: the server decides.

    Args:
        ctx: the selection.
        build: the expression of a context.

    Returns:
        The contexts, in alternation order (``[ctx]`` when it fits).
    """
    promql = build(ctx)
    if query_bytes(promql) <= ctx.max_query_bytes:
        return [ctx]
    for name in _CUT_FIELDS:
        value: str = getattr(ctx, name)
        alts = value.split("|")
        if len(alts) > 1 and quote(value) in promql:
            half = len(alts) // 2
            halves = ("|".join(alts[:half]), "|".join(alts[half:]))
            return [c for part in halves for c in fit(_with(ctx, name, part), build)]
    return [ctx]


def _with(ctx: QueryContext, name: str, value: str) -> QueryContext:
    if name == "pods":
        return dataclasses.replace(ctx, pods=value)
    if name == "instances":
        return dataclasses.replace(ctx, instances=value)
    return dataclasses.replace(ctx, nodes=value)


def pack(parts: Iterable[str], limit: int) -> list[str]:
    """Expressions joined with ``or`` into as few requests as stay within ``limit`` bytes each.

    Parts must select disjoint series (``or`` then only concatenates). A part over the limit on
    its own is a request of its own.
    """
    requests: list[str] = []
    current: list[str] = []
    size = 0
    for part in parts:
        extra = query_bytes(part) + (4 if current else 0)  # " or "
        if current and size + extra > limit:
            requests.append(" or ".join(current))
            current, size = [], 0
            extra = query_bytes(part)
        current.append(part)
        size += extra
    if current:
        requests.append(" or ".join(current))
    return requests
