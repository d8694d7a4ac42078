"""Batched fetching of Job windows: a fixed number of queries per pass, however many Jobs.

Every window is put on the global grid of the step (:mod:`.plan.grid`); the windows are covered by as few
query grids (segments) as possible, normally one. Per segment, for all of its Jobs at once:

1. ``kube_pod_info`` of all Jobs (owner labels, else the ``<job>-`` name prefix): pods, nodes
   (:func:`_find_pods`); from here on a Job with several pods is selected by its ``<job>-.+``
   prefix rather than by each pod's name (:class:`.plan.selectors.PodPrefixes`);
2. one instant query: each pod's scrape interval per exporter, the nodes' node-exporter instances,
   and where pods kube_pod_info does not place ran (:mod:`.fetch.queries`);
3. one range query per catalog entry (:mod:`.plan.catalog`), each selecting every pod or node of the
   segment through one escaped regex alternation (node-exporter's series by the nodes' instances),
   run a few at a time and filed as they arrive (:mod:`.fetch.queries`).

Every request stays within ``max_query_bytes`` (VictoriaMetrics refuses queries over 16 KiB by
default): a selection too long for one request is cut into several (:func:`.plan.selectors.fit`), so the
number of queries grows only once the Jobs' names no longer fit, never with their pods.

The answers are filed per Job and pod in Python (:mod:`.fetch.store`), node-exporter's instances
attached to their nodes and each Job's columns cut onto its own grid (:mod:`.assemble`). The steps
read in one direction: plan (what to ask), fetch (ask, decode, file), assemble.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from bottleneck_operator.contract.window import JobWindow
from bottleneck_operator.settings import LabelSettings
from bottleneck_operator.telemetry.assemble import assemble, attach_instances
from bottleneck_operator.telemetry.errors import InvalidWindow
from bottleneck_operator.telemetry.fetch.client import PrometheusClient
from bottleneck_operator.telemetry.fetch.queries import plan, probe, run
from bottleneck_operator.telemetry.fetch.store import (
    LAYOUTS,
    IntervalCache,
    JobKey,
    Scope,
    Store,
    WindowRequest,
    discover,
)
from bottleneck_operator.telemetry.plan import discovery as disc
from bottleneck_operator.telemetry.plan import selectors as sq
from bottleneck_operator.telemetry.plan.grid import Grid, segments
from bottleneck_operator.telemetry.plan.names import (
    escape_regex,
    regex_alternation,
    validate_k8s_name,
    validate_label_name,
    with_matchers,
)
from bottleneck_operator.telemetry.plan.selectors import alternation, pod_selections, query_bytes

__all__ = ["WindowRequest", "fetch_windows"]


def fetch_windows(
    client: PrometheusClient,
    requests: Sequence[WindowRequest],
    labels: LabelSettings,
    *,
    step: float,
    max_query_bytes: int = sq.DEFAULT_MAX_QUERY_BYTES,
    intervals: IntervalCache | None = None,
) -> dict[JobKey, JobWindow]:
    """Fetch the windows of many Jobs with a number of queries that does not depend on their number.

    Args:
        client: the Prometheus client.
        requests: the Jobs and windows; names are validated before any query is built.
        labels: the label mapping (``Settings.labels``).
        step: seconds between window timestamps (``Settings.analysis.step``).
        max_query_bytes: most bytes of PromQL in one request (``Settings.prometheus.max_query_bytes``).
        intervals: scrape-interval estimates kept between calls (the operator's passes): pods and
            nodes found there are not probed again. None: every call estimates afresh.

    Returns:
        (namespace, job) -> JobWindow. A Job without pods or data gets a window with no pods.

    Raises:
        InvalidName: a namespace/Job name or a configured label name is invalid.
        InvalidWindow: a window is not finite or ends before it starts, or the step is not positive.
        PrometheusUnavailable: Prometheus is unreachable, too slow or failing.
        QueryRejected: the pod discovery query was rejected or answered with garbage.
    """
    _validate(requests, labels)
    configured = mapping = with_matchers(labels)
    mapping, layout = LAYOUTS.resolve(client, mapping, max(r.end for r in requests)) if requests else (mapping, None)
    grids = {r: Grid.within(r.start, r.end, step) for r in requests}
    store = Store(layout=layout.describe() if layout is not None else {})
    for seg in segments(grids.values()):
        active = [r for r in requests if seg.overlaps(grids[r])]
        if active:
            _fetch_segment(client, (mapping, max_query_bytes), seg, active, store, intervals)
    out = {(r.namespace, r.job): assemble(r, grids[r], store) for r in requests}
    if layout is not None:
        LAYOUTS.check_pass(client, configured, layout, out.values())
    return out


def _validate(requests: Sequence[WindowRequest], mapping: LabelSettings) -> None:
    for r in requests:
        validate_k8s_name("namespace", r.namespace)
        validate_k8s_name("job", r.job)
        if not (math.isfinite(r.start) and math.isfinite(r.end)):
            raise InvalidWindow(f"window of {r.namespace}/{r.job} is not finite: {r.start}..{r.end}")
        if r.end < r.start:
            raise InvalidWindow(f"window of {r.namespace}/{r.job} ends before it starts: {r.start} > {r.end}")
    if mapping.node_exporter_node_label:
        validate_label_name("node_exporter_node_label", mapping.node_exporter_node_label)
    for name in ("dcgm_hostname_label", "dcgm_pod_label", "dcgm_namespace_label", "dcgm_container_label"):
        validate_label_name(name, getattr(mapping, name))


def _fetch_segment(
    client: PrometheusClient,
    settings: tuple[LabelSettings, int],
    grid: Grid,
    active: list[WindowRequest],
    store: Store,
    cache: IntervalCache | None,
) -> None:
    scope = _find_pods(client, settings, grid, frozenset((r.namespace, r.job) for r in active), store)
    estimates, instances = probe(client, scope, store, cache)
    scope = _with_hinted_nodes(scope, store, instances)
    run(client, plan(scope, estimates, instances), scope, store)
    attach_instances(store)


def _find_pods(
    client: PrometheusClient, settings: tuple[LabelSettings, int], grid: Grid, jobs: frozenset[JobKey], store: Store
) -> Scope:
    """Step 1: the Jobs' pods and nodes from kube_pod_info, and the selectors built from them.

    Jobs kube_pod_info does not know at all are selected by the ``<job>-`` name prefix from here on.
    The query names every Job twice: it goes out in as many parts as keep each within the limit.
    """
    mapping, limit = settings
    namespaces = regex_alternation(ns for ns, _ in jobs)
    # kube-state-metrics' scrape interval is not known yet: a generous presence window.
    presence = sq.gauge_window(grid.step, 2 * sq.DEFAULT_SCRAPE_INTERVAL)
    matchers = tuple(mapping.selector_matchers)
    found: set[JobKey] = set()
    for part in _pods_batches(sorted(jobs), presence, limit, matchers):
        query = _pods_query(part, presence, matchers)
        found |= discover(client.query_matrix(query, grid), frozenset(part), store)
    missing = sorted(jobs - found)
    store.prefix_jobs.update(missing)
    placed = {(ns, p): info for ns, job in jobs for p, info in store.pods.get((ns, job), {}).items()}
    prefix_alts = tuple(escape_regex(j) + "-.+" for _, j in missing)
    nodes = frozenset(info.node for info in placed.values() if info.node)
    members: dict[str, set[str]] = {}
    for ns, job in jobs:
        members.setdefault(job, set()).update(store.pods.get((ns, job), {}))
    base = sq.QueryContext(
        namespaces=namespaces,
        pods="",
        nodes=regex_alternation(nodes),
        labels=mapping,
        max_query_bytes=limit,
        prefixes=sq.pod_prefixes(members),
    )
    by_name, by_prefix = pod_selections(base, sorted(p for _, p in placed), prefix_alts)
    pods = "|".join(c.pods for c in (by_name, by_prefix) if c is not None) or alternation([])
    base = dataclasses.replace(base, pods=pods)
    return Scope(grid=grid, jobs=jobs, placed=placed, prefix_alts=prefix_alts, nodes=nodes, base=base)


def _pods_query(jobs: Sequence[JobKey], presence: float, matchers: Sequence[str]) -> str:
    names = [j for _, j in jobs]
    return disc.pods_query(
        regex_alternation(ns for ns, _ in jobs),
        regex_alternation(names),
        regex_alternation(names, suffix="-.+"),
        presence,
        matchers,
    )


def _pods_batches(jobs: list[JobKey], presence: float, limit: int, matchers: Sequence[str]) -> list[list[JobKey]]:
    """The Jobs in halves, and halves of halves, until each part's pods query fits the limit."""
    if len(jobs) <= 1 or query_bytes(_pods_query(jobs, presence, matchers)) <= limit:
        return [jobs]
    half = len(jobs) // 2
    return _pods_batches(jobs[:half], presence, limit, matchers) + _pods_batches(jobs[half:], presence, limit, matchers)


def _with_hinted_nodes(scope: Scope, store: Store, instances: Mapping[str, set[str]]) -> Scope:
    """The scope widened by the nodes only the collector's/dcgm-exporter's labels name, with their instances.

    In join mode a node-exporter series counts only through node_uname_info, so the instances that
    node_uname_info names for the segment's nodes are all a node query can use: filtering by them
    changes no answer and keeps the cluster's other nodes out of every node query. (A node with no
    node_uname_info in the window has no node signals either way.)
    """
    namespaces = {ns for ns, _ in scope.jobs}
    placed = scope.placed
    hinted = [k for k in store.hints if k[0] in namespaces and (k not in placed or not placed[k].node)]
    nodes = scope.nodes | {store.hints[k] for k in hinted}
    join_mode = not scope.base.node_label
    base = dataclasses.replace(
        scope.base,
        nodes=regex_alternation(nodes),
        instances=regex_alternation(i for n in nodes for i in instances.get(n, ())) if join_mode and nodes else "",
    )
    return dataclasses.replace(scope, nodes=nodes, base=base)
