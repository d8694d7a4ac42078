"""Batched fetching of Job windows: a fixed number of queries per pass, however many Jobs.

One pass over N Jobs (per time segment, normally one):

1. ``kube_pod_info`` of all Jobs at once (owner labels, else the ``<job>-`` name prefix): pods, nodes;
2. one instant query: each pod's scrape interval per exporter (it sets rate() ranges and gauge
   windows; estimates kept from earlier passes are reused, see :mod:`.intervals`), the nodes'
   node-exporter instances, and where pods kube_pod_info does not place ran;
3. one range query per catalog entry (see :mod:`.catalog`), each selecting every pod or node of
   the pass through one escaped regex alternation (node-exporter's series by the nodes' instances),
   run a few at a time; each answer is decoded straight into a float matrix (:mod:`.matrix`) and
   filed as soon as it arrives.

The answers are split per Job and pod in Python (:mod:`.store`, :mod:`.assembly`), node-exporter's
instances attached to their nodes (:mod:`.nodes`), and cut onto the Job's own grid of timestamps
(:mod:`.alignment`).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import threading
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from bottleneck_operator.contract.window import JobWindow
from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry import alignment as al
from bottleneck_operator.telemetry import catalog as cat
from bottleneck_operator.telemetry import discovery as disc
from bottleneck_operator.telemetry import selectors as sq
from bottleneck_operator.telemetry.assembly import assemble
from bottleneck_operator.telemetry.client import PrometheusClient
from bottleneck_operator.telemetry.errors import InvalidWindow, PrometheusUnavailable, QueryRejected
from bottleneck_operator.telemetry.intervals import IntervalCache
from bottleneck_operator.telemetry.matrix import Matrix
from bottleneck_operator.telemetry.names import (
    escape_regex,
    regex_alternation,
    validate_k8s_name,
    validate_label_name,
)
from bottleneck_operator.telemetry.nodes import attach_instances
from bottleneck_operator.telemetry.store import (
    JobKey,
    Pod,
    PodKey,
    Store,
    WindowRequest,
    discover,
    labels_of,
    store_group,
    store_hint,
    to_float,
)

__all__ = ["WindowRequest", "fetch_windows"]

log = logging.getLogger(__name__)
_GROUP_ORDER = (sq.Group.DCGM, sq.Group.CADVISOR, sq.Group.KSM, sq.Group.NODE, sq.Group.SIDECAR)
# Requests in flight at once: Prometheus evaluates each query on one core, so a few in parallel
# use a multi-core server without swamping a small one.
_CONCURRENCY = 4


def _validate(requests: Sequence[WindowRequest], settings: Settings) -> None:
    for r in requests:
        validate_k8s_name("namespace", r.namespace)
        validate_k8s_name("job", r.job)
        if not (math.isfinite(r.start) and math.isfinite(r.end)):
            raise InvalidWindow(f"window of {r.namespace}/{r.job} is not finite: {r.start}..{r.end}")
        if r.end < r.start:
            raise InvalidWindow(f"window of {r.namespace}/{r.job} ends before it starts: {r.start} > {r.end}")
    if settings.node_exporter_node_label:
        validate_label_name("node_exporter_node_label", settings.node_exporter_node_label)
    for name in ("dcgm_hostname_label", "dcgm_pod_label", "dcgm_namespace_label", "dcgm_container_label"):
        validate_label_name(name, getattr(settings, name))


def fetch_windows(
    client: PrometheusClient,
    requests: Sequence[WindowRequest],
    settings: Settings,
    *,
    intervals: IntervalCache | None = None,
) -> dict[JobKey, JobWindow]:
    """Fetch the windows of many Jobs with a number of queries that does not depend on their number.

    Args:
        client: the Prometheus client.
        requests: the Jobs and windows; names are validated before any query is built.
        settings: step and label-mapping settings.
        intervals: scrape-interval estimates kept between calls (the operator's passes): pods and
            nodes found there are not probed again. None: every call estimates afresh.

    Returns:
        (namespace, job) -> JobWindow. A Job without pods or data gets a window with no pods.

    Raises:
        InvalidName: a namespace/Job name or a configured label name is invalid.
        InvalidWindow: a window is not finite or ends before it starts.
        PrometheusUnavailable: Prometheus is unreachable, too slow or failing.
        QueryRejected: the pod discovery query was rejected or answered with garbage.
    """
    _validate(requests, settings)
    step = settings.step
    bounds = {r: al.grid_bounds(r.start, r.end, step) for r in requests}
    store = Store()
    for seg in al.segments(bounds.values()):
        active = [
            r for r in requests if bounds[r][0] <= seg[1] and bounds[r][1] >= seg[0] and bounds[r][1] >= bounds[r][0]
        ]
        if active:
            _fetch_segment(client, settings, seg, active, store, intervals)
    return {(r.namespace, r.job): assemble(r, bounds[r], step, store) for r in requests}


# --- one segment ----------------------------------------------------------------------------


def _fetch_segment(
    client: PrometheusClient,
    settings: Settings,
    seg: tuple[int, int],
    active: list[WindowRequest],
    store: Store,
    cache: IntervalCache | None,
) -> None:
    step = settings.step
    t0, t1 = seg[0] * step, seg[1] * step
    jobs = {(r.namespace, r.job) for r in active}
    namespaces = regex_alternation(ns for ns, _ in jobs)
    names = regex_alternation(j for _, j in jobs)
    prefixes = regex_alternation((j for _, j in jobs), suffix="-.+")

    # 1. pods and nodes (kube-state-metrics' interval is not known yet: a generous presence window)
    presence = sq.gauge_window(step, 2 * sq.DEFAULT_SCRAPE_INTERVAL)
    found = discover(
        client.query_range(disc.pods_query(namespaces, names, prefixes, presence), t0, t1, step), jobs, step, store
    )
    missing = sorted(jobs - found)
    store.prefix_jobs.update(missing)
    placed = {(ns, p): info for ns, job in jobs for p, info in store.pods.get((ns, job), {}).items()}
    pod_keys = set(placed)
    # Pods kube_pod_info does not place on a node, and Jobs it does not know at all (name prefixes):
    # their nodes come from the collector's and dcgm-exporter's labels (the hints below).
    unplaced_pods = sorted(p for (_, p), info in placed.items() if not info.node)
    prefix_alts = [escape_regex(j) + "-.+" for _, j in missing]
    ksm_nodes = {p.node for key in jobs for p in store.pods.get(key, {}).values() if p.node}
    base = sq.QueryContext(
        namespaces=namespaces,
        pods=_alternation(sorted(p for _, p in pod_keys), prefix_alts),
        nodes=regex_alternation(ksm_nodes),
        node_label=settings.node_exporter_node_label,
        dcgm_namespace_label=settings.dcgm_namespace_label,
        dcgm_pod_label=settings.dcgm_pod_label,
        dcgm_hostname_label=settings.dcgm_hostname_label,
    )
    estimate_groups = [g for g in _GROUP_ORDER if g is not sq.Group.NODE or ksm_nodes]

    # 2. scrape intervals, per pod (per node for node-exporter), which set each bucket's ranges;
    #    and where pods ran by the collector's/dcgm-exporter's labels, for pods kube_pod_info misses
    estimates: dict[sq.Group, dict[object, float]] = defaultdict(dict)
    probes = _unknown_intervals(cache, estimate_groups, base, pod_keys, ksm_nodes, prefix_alts, estimates, store)
    unplaced = (
        dataclasses.replace(base, pods=_alternation(unplaced_pods, prefix_alts))
        if unplaced_pods or prefix_alts
        else None
    )
    parts = [disc.interval_query([group], ctx, t0, t1, step) for group, ctx, _ in probes]
    if unplaced is not None:
        # Hints only matter for pods kube_pod_info does not place: reading dcgm-exporter's series
        # over the whole window for every pod would cost Prometheus more than any signal query.
        parts.append(disc.node_hint_query(unplaced, t0, t1))
    if not settings.node_exporter_node_label and (ksm_nodes or unplaced is not None):
        parts.append(disc.instances_query(base, t0, t1, unplaced))
    instances: dict[str, set[str]] = defaultdict(set)
    for row in client.query(" or ".join(parts), t1) if parts else []:
        labels = labels_of(row)
        value = to_float(row.get("value", [0, "NaN"])[1])  # type: ignore[index]
        name = labels.get(sq.GROUP_LABEL, "")
        if name == disc.NODE_HINT:
            store_hint(labels, settings, store)
            continue
        if name == disc.INSTANCES:
            instances[labels.get("nodename", "")].add(labels.get("instance", ""))
            continue
        if name not in {g.value for g in sq.Group} or not (math.isfinite(value) and value > 0):
            continue
        group = sq.Group(name)
        key = _unit_key(group, labels, settings, base)
        estimates[group][key] = value
        store.intervals[group][key] = value
    if cache is not None:
        _keep_intervals(cache, probes, placed, estimates, t1 - disc.probe_windows(t0, t1, step)[2], step)

    namespaces_of_pass = {ns for ns, _ in jobs}
    hinted = [k for k in store.hints if k[0] in namespaces_of_pass and (k not in placed or not placed[k].node)]
    nodes = ksm_nodes | {store.hints[k] for k in hinted}
    # In join mode a node-exporter series counts only through node_uname_info, so the instances
    # that node_uname_info names for the pass's nodes are all a node query can use: filtering by
    # them changes no answer and keeps the cluster's other nodes out of every node query.
    # (A node with no node_uname_info in the window has no node signals either way.)
    join_mode = not settings.node_exporter_node_label
    base = dataclasses.replace(
        base,
        nodes=regex_alternation(nodes),
        instances=regex_alternation(i for n in nodes for i in instances.get(n, ())) if join_mode and nodes else "",
    )
    groups = [g for g in _GROUP_ORDER if g is not sq.Group.NODE or nodes]

    # 3. one request per catalog entry (its scrape-interval buckets joined inside it), run
    #    concurrently. Separate requests rather than one big "or" per exporter: Prometheus merges
    #    each "or" operand into everything before it, which grows with the square of the operands.
    node_keyed = (sq.INTERNAL_UNMAPPED, sq.INTERNAL_ON_NODE)
    tasks: list[tuple[sq.Group, cat.Entry, str]] = []
    for group in groups:
        contexts = _bucket_contexts(group, base, estimates[group], pod_keys, nodes, prefix_alts, step, instances)
        for entry in cat.entries_of(group):
            if entry.name in node_keyed and not nodes:
                continue
            if entry.name == cat.INTERNAL_UNAME:
                if not settings.node_exporter_node_label:
                    tasks.append((group, entry, entry.build(base)))
                continue
            # node-keyed entries select by node, not by pod: the first bucket's query covers them
            chosen = contexts[:1] if entry.name in node_keyed else contexts
            # One entry per request: answers need no tag (label_replace would relabel every sample).
            tasks.append((group, entry, cat.entry_query(entry, chosen)))

    abort = threading.Event()  # set on the first unreachable/timeout error: the rest is skipped

    def run(task: tuple[sq.Group, cat.Entry, str]) -> Matrix | QueryRejected | None:
        if abort.is_set():
            return None
        try:
            return client.query_range_matrix(task[2], t0, t1, step)
        except QueryRejected as exc:  # one failing query leaves the other signals usable
            return exc
        except PrometheusUnavailable:
            abort.set()
            raise

    # Answers are filed as they arrive (in task order), so only the few in flight are held whole.
    with ThreadPoolExecutor(max_workers=_CONCURRENCY) as pool:
        for (group, entry, _), answer in zip(tasks, pool.map(run, tasks), strict=True):
            if answer is None:
                continue
            if isinstance(answer, QueryRejected):
                log.warning("the %s query failed: %s", entry.name, answer)
                store.failures.append(f"{entry.name} unavailable: {answer}")
                continue
            store_group(group, entry.name, answer, settings, base, store)
    attach_instances(store)


_Probe = tuple[sq.Group, sq.QueryContext, list[object]]


def _unknown_intervals(
    cache: IntervalCache | None,
    groups: Sequence[sq.Group],
    base: sq.QueryContext,
    pod_keys: set[PodKey],
    nodes: set[str],
    prefix_alts: list[str],
    estimates: dict[sq.Group, dict[object, float]],
    store: Store,
) -> list[_Probe]:
    """Take kept estimates from the cache; return what still has to be probed, per group.

    Each probe is (group, its selectors narrowed to the units without a kept estimate, those units).
    Pods known only by a name prefix are always probed (they have no name to keep an estimate under).
    """
    probes: list[_Probe] = []
    for group in groups:
        units: list[object] = list(sorted(nodes) if group is sq.Group.NODE else sorted(pod_keys))
        unknown: list[object] = []
        for unit in units:
            kept = cache.get(group, unit) if cache is not None else None
            if kept is None:
                unknown.append(unit)
            elif kept > 0:
                estimates[group][unit] = kept
                store.intervals[group][unit] = kept
        if group is sq.Group.NODE:
            if unknown:
                probes.append((group, dataclasses.replace(base, nodes=regex_alternation(map(str, unknown))), unknown))
            continue
        by_name, by_prefix = _pod_selections(
            base, sorted({str(u[1]) for u in unknown if isinstance(u, tuple)}), prefix_alts
        )
        probes += [(group, by_name, unknown)] if by_name else []
        probes += [(group, by_prefix, [])] if by_prefix else []
    return probes


def _pod_selections(
    base: sq.QueryContext, names: Sequence[str], prefixes: Sequence[str]
) -> tuple[sq.QueryContext | None, sq.QueryContext | None]:
    """Contexts selecting pods by name and by ``<job>-`` prefix (None where there is nothing to select).

    Each kind gets a selector of its own: Prometheus matches a pure list of names as a set, but runs
    a regex mixing names and prefixes against every pod name it knows.
    """
    by_name = dataclasses.replace(base, pods=_alternation(names)) if names else None
    by_prefix = dataclasses.replace(base, pods=_alternation([], prefixes)) if prefixes else None
    return by_name, by_prefix


def _keep_intervals(
    cache: IntervalCache,
    probes: Sequence[_Probe],
    placed: dict[PodKey, Pod],
    estimates: dict[sq.Group, dict[object, float]],
    probe_start: float,
    step: float,
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
        if group is sq.Group.NODE:
            for node in units:
                seconds = found.get(node, 0.0)
                if any(_existed(info, probe_start, seconds, step) for info in on_node.get(node, ())):
                    cache.put(group, node, seconds)
            continue
        for unit in units:
            info = placed.get(unit)  # type: ignore[call-overload]
            seconds = found.get(unit, 0.0)
            if info is not None and _existed(info, probe_start, seconds, step):
                cache.put(group, unit, seconds)


def _existed(info: Pod, probe_start: float, seconds: float, step: float) -> bool:
    before = probe_start - 2 * (seconds if seconds > 0 else sq.DEFAULT_SCRAPE_INTERVAL)
    i = math.floor(before / step)
    return al.present(info.presence, i, i)


def _alternation(literals: Sequence[str], patterns: Sequence[str] = ()) -> str:
    """Escaped literals plus ready-made regex patterns, as one alternation (never empty)."""
    alts = [escape_regex(v) for v in literals] + list(patterns)
    return "|".join(alts) if alts else regex_alternation([])


def _unit_key(group: sq.Group, labels: dict[str, str], settings: Settings, ctx: sq.QueryContext) -> object:
    if group is sq.Group.NODE:
        return labels.get(ctx.node_key, "")
    if group is sq.Group.DCGM:
        return (labels.get(settings.dcgm_namespace_label, ""), labels.get(settings.dcgm_pod_label, ""))
    return (labels.get("namespace", ""), labels.get("pod", ""))


def _bucket_contexts(
    group: sq.Group,
    base: sq.QueryContext,
    estimates: dict[object, float],
    pod_keys: set[PodKey],
    nodes: set[str],
    prefix_alts: list[str],
    step: float,
    instances: dict[str, set[str]],
) -> list[sq.QueryContext]:
    """One context per scrape interval (rounded to the second) among the group's pods or nodes.

    A cluster scrapes each exporter at one interval, so this is normally a single bucket; pods
    without an estimate (and name-prefix patterns) go to a last, default bucket.
    """
    units: set[object] = set(nodes) if group is sq.Group.NODE else set(pod_keys) | set(estimates)
    buckets: dict[float | None, list[object]] = defaultdict(list)
    for unit in units:
        si = estimates.get(unit)
        buckets[max(1.0, round(si)) if si else None].append(unit)
    if prefix_alts and group is not sq.Group.NODE:
        buckets.setdefault(None, [])
    out = []
    for si in sorted(buckets, key=lambda b: (b is None, b or 0.0)):
        members = buckets[si]
        ranges = {group: sq.rate_range(step, si)}
        windows = {group: sq.gauge_window(step, si)}
        if group is sq.Group.NODE:
            ctx = dataclasses.replace(base, nodes=regex_alternation(str(m) for m in members))
            if base.instances:
                # Series are selected (and answered) by instance: each bucket takes its own nodes'.
                ctx = dataclasses.replace(
                    ctx, instances=regex_alternation(i for m in members for i in instances.get(str(m), ()))
                )
            out.append(dataclasses.replace(ctx, rate_ranges=ranges, gauge_windows=windows))
            continue
        names = sorted({str(m[1]) for m in members if isinstance(m, tuple)})
        for selection in _pod_selections(base, names, prefix_alts if si is None else ()):
            if selection is not None:
                out.append(dataclasses.replace(selection, rate_ranges=ranges, gauge_windows=windows))
    return out or [base]
