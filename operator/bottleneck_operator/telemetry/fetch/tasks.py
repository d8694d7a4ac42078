"""Step 3 of a segment: one range query per catalog entry, planned per scrape-interval bucket and run.

Each entry's request selects every pod (or node) of the segment, its buckets joined inside it with
``or``; where that would exceed ``max_query_bytes`` the selection is cut into several requests
(:func:`.scope.fit`), so a request's size is bounded whatever the number of pods. Entries go out as separate requests rather than one big ``or`` per exporter: Prometheus
merges each ``or`` operand into everything before it, which grows with the square of the operands.
A few run at once; each answer is decoded straight onto the segment's grid (:mod:`.matrix`) and
filed as soon as it arrives.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
from collections import defaultdict
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from bottleneck_operator.contract.signals import Family
from bottleneck_operator.telemetry.errors import AnswerTooLarge, InvalidSeries, PrometheusUnavailable, QueryRejected
from bottleneck_operator.telemetry.fetch.answers import Matrix
from bottleneck_operator.telemetry.fetch.client import PrometheusClient
from bottleneck_operator.telemetry.fetch.scope import Scope, fit, pack, pod_selections
from bottleneck_operator.telemetry.fetch.store import Store, store_group
from bottleneck_operator.telemetry.plan import catalog as cat
from bottleneck_operator.telemetry.plan import selectors as sq
from bottleneck_operator.telemetry.plan.names import regex_alternation

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
