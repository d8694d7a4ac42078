"""Steps 2 and 3 of a segment: the probe (one instant query), then one range query per catalog entry.

The probe reads each pod's (per node for node-exporter) scrape interval per exporter, which sets the
rate() ranges and gauge windows of the signal queries (estimates kept from earlier passes are reused),
which node-exporter instances are the pass's nodes, and, for pods kube_pod_info does not place, the
node from the collector's or dcgm-exporter's labels.

Each entry's request selects every pod (or node) of the segment, its buckets joined inside it with
``or``; where that would exceed ``max_query_bytes`` the selection is cut into several requests
(:func:`..plan.selectors.fit`), so a request's size is bounded whatever the number of pods. Entries go out as
separate requests rather than one big ``or`` per exporter: Prometheus merges each ``or`` operand into
everything before it, which grows with the square of the operands. A few run at once; each answer is
decoded straight onto the segment's grid (:func:`.transport.decode_matrix`) and filed as soon as it arrives.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from bottleneck_operator.contract.signals import EXPORTERS, Family
from bottleneck_operator.telemetry.errors import AnswerTooLarge, InvalidSeries, PrometheusUnavailable, QueryRejected
from bottleneck_operator.telemetry.fetch.client import PrometheusClient
from bottleneck_operator.telemetry.fetch.store import (
    IntervalCache,
    Pod,
    PodKey,
    Scope,
    Store,
    labels_of,
    store_group,
    store_hint,
    to_float,
)
from bottleneck_operator.telemetry.fetch.transport import Matrix
from bottleneck_operator.telemetry.plan import catalog as cat
from bottleneck_operator.telemetry.plan import discovery as disc
from bottleneck_operator.telemetry.plan import selectors as sq
from bottleneck_operator.telemetry.plan.grid import Grid, present
from bottleneck_operator.telemetry.plan.names import regex_alternation
from bottleneck_operator.telemetry.plan.selectors import alternation, fit, pack, pod_selections, query_bytes

log = logging.getLogger(__name__)

# Requests in flight at once: Prometheus evaluates each query on one core, so a few in parallel
# use a multi-core server without swamping a small one.
CONCURRENCY = 4
# Entries that select by node, not by pod: the first bucket's query covers them.
_NODE_KEYED = (sq.INTERNAL_UNMAPPED, sq.INTERNAL_ON_NODE)


@dataclass(frozen=True)
class Task:
    """One signal request: a catalog entry's expression over the segment's pods or nodes."""

    group: Family
    entry: cat.Entry
    promql: str


def plan(
    scope: Scope, estimates: Mapping[Family, Mapping[object, float]], instances: Mapping[str, set[str]]
) -> list[Task]:
    """The segment's signal requests, one per catalog entry that applies.

    Args:
        scope: the segment, nodes from hints and node-exporter instances included.
        estimates: scrape intervals per group and unit (pod key or node).
        instances: each node's node-exporter instances (join mode).

    Returns:
        The requests, in catalog order per exporter.
    """
    tasks: list[Task] = []
    for group in scope.groups:
        contexts = _bucket_contexts(group, scope, estimates.get(group, {}), instances)
        for entry in cat.entries_of(group):
            if entry.name in _NODE_KEYED and not scope.nodes:
                continue
            if entry.name == cat.INTERNAL_UNAME:
                chosen = [] if scope.base.node_label else [scope.base]
            else:
                chosen = contexts[:1] if entry.name in _NODE_KEYED else contexts
            # One entry per request (answers need no tag: label_replace would relabel every sample),
            # cut where its selection makes it longer than a request may be (measured with the
            # matchers every selector gets, the scrape-job ones included).
            sized = functools.partial(_entry_query, entry)
            parts = [cat.entry_query(entry, [part]) for ctx in chosen for part in fit(ctx, sized)]
            tasks += [Task(group, entry, promql) for promql in pack(parts, scope.base.max_query_bytes)]
    return tasks


def run(client: PrometheusClient, tasks: Iterable[Task], scope: Scope, store: Store) -> None:
    """Run the requests a few at a time and file each answer as it arrives (in task order).

    Only the few answers in flight are held whole. A rejected request only removes its signal (a
    note says so); the first unreachable/timeout error stops the rest of the segment and is raised.

    Args:
        client: the Prometheus client.
        tasks: the requests (see :func:`plan`).
        scope: the segment (its grid and label mapping).
        store: where the answers go.

    Raises:
        PrometheusUnavailable: Prometheus became unreachable, too slow or failing.
        AnswerTooLarge, InvalidSeries: an answer over a cap, or with a malformed series.
    """
    abort = threading.Event()

    def one(task: Task) -> Matrix | QueryRejected | None:
        if abort.is_set():
            return None
        try:
            return client.query_matrix(task.promql, scope.grid)
        except (AnswerTooLarge, InvalidSeries):
            abort.set()  # the batch's data, not the signal: the caller splits the batch to find whose
            raise
        except QueryRejected as exc:
            if exc.for_every_query:
                # every other query meets the same refusal: a window without this signal would be a
                # verdict read from whatever was answered before it began
                abort.set()
                raise
            return exc
        except PrometheusUnavailable:
            abort.set()
            raise

    todo = list(tasks)
    with ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
        for task, answer in zip(todo, pool.map(one, todo), strict=True):
            if answer is None:
                continue
            if isinstance(answer, QueryRejected):
                log.warning("the %s query failed: %s", task.entry.name, answer)
                store.failures.append(f"{task.entry.name} unavailable: {answer}")
                continue
            store_group(task.group, task.entry.name, answer, scope.base, store)


def _own(scope: Scope, estimates: Mapping[object, float]) -> set[object]:
    """Estimated pods that are the pass's own: not foreign pods a Job's ``<job>-.+`` prefix also matched.

    Every pod of a Job selected by prefix is placed, so an unplaced pod that prefix matches belongs
    to some other workload; listing it by name would only make the queries longer.
    """
    prefixes = scope.base.prefixes
    if prefixes is None:
        return set(estimates)
    return {u for u in estimates if u in scope.placed or not isinstance(u, tuple) or prefixes.job_of(str(u[1])) is None}


def _bucket_contexts(
    group: Family, scope: Scope, estimates: Mapping[object, float], instances: Mapping[str, set[str]]
) -> list[sq.QueryContext]:
    """One context per scrape interval (rounded to the second) among the group's pods or nodes.

    A cluster scrapes each exporter at one interval, so this is normally a single bucket; pods
    without an estimate (and name-prefix patterns) go to a last, default bucket.
    """
    base, step = scope.base, scope.grid.step
    units: set[object] = set(scope.nodes) if group is Family.NODE else set(scope.placed) | _own(scope, estimates)
    buckets: dict[float | None, list[object]] = defaultdict(list)
    for unit in units:
        si = estimates.get(unit)
        buckets[max(1.0, round(si)) if si else None].append(unit)
    if scope.prefix_alts and group is not Family.NODE:
        buckets.setdefault(None, [])
    out = []
    for si in sorted(buckets, key=lambda b: (b is None, b or 0.0)):
        members = buckets[si]
        ranges, windows = {group: sq.rate_range(step, si)}, {group: sq.gauge_window(step, si)}
        if group is Family.NODE:
            ctx = dataclasses.replace(base, nodes=regex_alternation(str(m) for m in members))
            if base.instances:
                # Series are selected (and answered) by instance: each bucket takes its own nodes'.
                mine = regex_alternation(i for m in members for i in instances.get(str(m), ()))
                ctx = dataclasses.replace(ctx, instances=mine)
            out.append(dataclasses.replace(ctx, rate_ranges=ranges, gauge_windows=windows))
            continue
        names = sorted({str(m[1]) for m in members if isinstance(m, tuple)})
        for selection in pod_selections(base, names, scope.prefix_alts if si is None else ()):
            if selection is not None:
                out.append(dataclasses.replace(selection, rate_ranges=ranges, gauge_windows=windows))
    return out or [base]


def _entry_query(entry: cat.Entry, ctx: sq.QueryContext) -> str:
    return cat.entry_query(entry, [ctx])


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
    """Keep the estimates that saw whole intervals (see :class:`.store.IntervalCache`).

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
    return present(info.presence, i, i)
