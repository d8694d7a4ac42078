"""Step 2 of a segment: one instant query for scrape intervals, node-exporter instances and node hints.

Each pod's (per node for node-exporter) scrape interval per exporter sets the rate() ranges and gauge
windows of the signal queries; estimates kept from earlier passes are reused (:mod:`.intervals`).
The same query reads which node-exporter instances are the pass's nodes (join mode) and, for pods
kube_pod_info does not place, the node from the collector's or dcgm-exporter's labels.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from bottleneck_operator.contract.signals import EXPORTERS, Family
from bottleneck_operator.telemetry.fetch import answers as al
from bottleneck_operator.telemetry.fetch.client import PrometheusClient
from bottleneck_operator.telemetry.fetch.scope import Scope, alternation, fit, pack, pod_selections, query_bytes
from bottleneck_operator.telemetry.fetch.store import Pod, PodKey, Store, labels_of, store_hint, to_float
from bottleneck_operator.telemetry.fetch.tasks import CONCURRENCY
from bottleneck_operator.telemetry.plan import discovery as disc
from bottleneck_operator.telemetry.plan import selectors as sq
from bottleneck_operator.telemetry.plan.grid import Grid
from bottleneck_operator.telemetry.plan.intervals import IntervalCache
from bottleneck_operator.telemetry.plan.names import regex_alternation

Estimates = dict[Family, dict[object, float]]  # group -> pod key or node -> seconds
Instances = dict[str, set[str]]  # node -> its node-exporter instances
# (group, selectors narrowed to the units without a kept estimate, those units)
_Probe = tuple[Family, sq.QueryContext, list[object]]


def probe(
    client: PrometheusClient, scope: Scope, store: Store, cache: IntervalCache | None
) -> tuple[Estimates, Instances]:
    """Estimate the scrape intervals the cache does not know, and find instances and node hints.

    Args:
        client: the Prometheus client.
        scope: the segment as the pods query found it.
        store: the pass's store; estimates and hints are filed there too.
        cache: estimates kept between passes (None: estimate everything afresh).

    Returns:
        (scrape intervals per group and unit, node-exporter instances per node).
    """
    estimates: Estimates = defaultdict(dict)
    probes = _unknown_intervals(cache, scope, estimates, store)
    parts = _query_parts(scope, probes)
    instances: Instances = defaultdict(set)
    requests = pack(parts, scope.base.max_query_bytes)
    # Cut to fit the size limit, a large pass's probe is many requests: a few in flight at once.
    with ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
        for rows in pool.map(lambda q: client.query(q, scope.grid.end), requests):
            for row in rows:
                _file(row, scope.base, estimates, instances, store)
    if cache is not None:
        grid = scope.grid
        probe_start = grid.end - disc.probe_windows(grid.start, grid.end, grid.step)[2]
        _keep_intervals(cache, probes, scope.placed, estimates, probe_start, grid)
    return estimates, instances


def _query_parts(scope: Scope, probes: Sequence[_Probe]) -> list[str]:
    """The instant query's operands (interval probes, node hints, instances), each cut to fit the size limit."""
    grid = scope.grid
    parts = [
        disc.interval_query([group], part, grid.start, grid.end, grid.step)
        for group, ctx, _ in probes
        for part in fit(ctx, _intervals(group, grid))
    ]
    unplaced_pods = sorted(p for (_, p), info in scope.placed.items() if not info.node)
    unplaced = None
    if unplaced_pods or scope.prefix_alts:
        unplaced = dataclasses.replace(scope.base, pods=alternation(unplaced_pods, scope.prefix_alts))
        # Hints only matter for pods kube_pod_info does not place: reading dcgm-exporter's series
        # over the whole window for every pod would cost Prometheus more than any signal query.
        parts += [disc.node_hint_query(c, grid.start, grid.end) for c in fit(unplaced, _hints(grid))]
    if not scope.base.node_label and (scope.nodes or unplaced is not None):
        if query_bytes(disc.instances_query(scope.base, grid.start, grid.end, unplaced)) <= scope.base.max_query_bytes:
            parts.append(disc.instances_query(scope.base, grid.start, grid.end, unplaced))
        else:  # the nodes' instances and the unplaced pods' apart, each cut to fit
            parts += [disc.instances_query(c, grid.start, grid.end) for c in fit(scope.base, _instances(grid))]
            if unplaced is not None:
                none = dataclasses.replace(scope.base, nodes=regex_alternation([]))
                parts += [
                    disc.instances_query(none, grid.start, grid.end, c)
                    for c in fit(unplaced, lambda c: disc.instances_query(none, grid.start, grid.end, c))
                ]
    return parts


def _intervals(group: Family, grid: Grid) -> Callable[[sq.QueryContext], str]:
    return lambda c: disc.interval_query([group], c, grid.start, grid.end, grid.step)


def _hints(grid: Grid) -> Callable[[sq.QueryContext], str]:
    return lambda c: disc.node_hint_query(c, grid.start, grid.end)


def _instances(grid: Grid) -> Callable[[sq.QueryContext], str]:
    return lambda c: disc.instances_query(c, grid.start, grid.end)


def _file(
    row: dict[str, object], ctx: sq.QueryContext, estimates: Estimates, instances: Instances, store: Store
) -> None:
    """File one series of the instant query's answer by its ``bn_group`` tag."""
    labels = labels_of(row)
    name = labels.get(sq.GROUP_LABEL, "")
    if name == disc.NODE_HINT:
        store_hint(labels, ctx.labels, store)
        return
    if name == disc.INSTANCES:
        instances[labels.get("nodename", "")].add(labels.get("instance", ""))
        return
    value = to_float(row.get("value", [0, "NaN"])[1])  # type: ignore[index]
    if name not in EXPORTERS or not (math.isfinite(value) and value > 0):
        return
    group = EXPORTERS[name]
    key = _unit_key(group, labels, ctx)
    estimates[group][key] = value
    store.intervals[group][key] = value


def _unit_key(group: Family, labels: dict[str, str], ctx: sq.QueryContext) -> object:
    if group is Family.NODE:
        return labels.get(ctx.node_key, "")
    if group is Family.DCGM:
        return (labels.get(ctx.dcgm_namespace_label, ""), labels.get(ctx.dcgm_pod_label, ""))
    return (labels.get("namespace", ""), labels.get("pod", ""))


def _unknown_intervals(cache: IntervalCache | None, scope: Scope, estimates: Estimates, store: Store) -> list[_Probe]:
    """Take kept estimates from the cache; return what still has to be probed, per group.

    Pods known only by a name prefix are always probed (they have no name to keep an estimate under).
    """
    probes: list[_Probe] = []
    for group in scope.groups:
        units: list[object] = list(sorted(scope.nodes) if group is Family.NODE else sorted(scope.placed))
        unknown: list[object] = []
        for unit in units:
            kept = cache.get(group, unit) if cache is not None else None
            if kept is None:
                unknown.append(unit)
            elif kept > 0:
                estimates[group][unit] = kept
                store.intervals[group][unit] = kept
        if group is Family.NODE:
            if unknown:
                nodes = regex_alternation(map(str, unknown))
                probes.append((group, dataclasses.replace(scope.base, nodes=nodes), unknown))
            continue
        names = sorted({str(u[1]) for u in unknown if isinstance(u, tuple)})
        by_name, by_prefix = pod_selections(scope.base, names, scope.prefix_alts)
        probes += [(group, by_name, unknown)] if by_name else []
        probes += [(group, by_prefix, [])] if by_prefix else []
    return probes


def _keep_intervals(
    cache: IntervalCache,
    probes: Sequence[_Probe],
    placed: Mapping[PodKey, Pod],
    estimates: Estimates,
    probe_start: float,
    grid: Grid,
) -> None:
    """Keep the estimates that saw whole intervals (see :mod:`.intervals`).

    The first probe sub-window starts at ``probe_start``; an estimate is exact when the unit's series
    had a sample before it, which holds when kube_pod_info shows the pod (for a node: one of its
    pods) two of the unit's own intervals earlier. Units without kube_pod_info are not kept.
    """
    on_node: dict[object, list[Pod]] = defaultdict(list)
    for info in placed.values():
        if info.node:
            on_node[info.node].append(info)
    for group, _, units in probes:
        found = estimates[group]
        if group is Family.NODE:
            for node in units:
                seconds = found.get(node, 0.0)
                if any(_existed(info, probe_start, seconds, grid) for info in on_node.get(node, ())):
                    cache.put(group, node, seconds)
            continue
        for unit in units:
            pod = placed.get(unit) if isinstance(unit, tuple) else None
            seconds = found.get(unit, 0.0)
            if pod is not None and _existed(pod, probe_start, seconds, grid):
                cache.put(group, unit, seconds)


def _existed(info: Pod, probe_start: float, seconds: float, grid: Grid) -> bool:
    before = probe_start - 2 * (seconds if seconds > 0 else sq.DEFAULT_SCRAPE_INTERVAL)
    i = grid.index_at_or_before(before)
    return al.present(info.presence, i, i)
