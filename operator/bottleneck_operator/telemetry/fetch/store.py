"""What one pass read, and how Prometheus's answers are filed into it.

Answers are keyed for assembly: pods per Job (from kube_pod_info), pod-level series per
(namespace, pod), node-level series per node, GPUs per pod, neighbours per node, scrape-interval
estimates, and where pods ran when kube_pod_info does not say. A segment's :class:`Scope` (its grid,
Jobs, pods and nodes) is found by the pods query and widened by the probe; its selectors are built here.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

import numpy as np

from bottleneck_operator.contract.signals import Family
from bottleneck_operator.settings import LabelSettings
from bottleneck_operator.telemetry.fetch import answers as al
from bottleneck_operator.telemetry.fetch.answers import Matrix
from bottleneck_operator.telemetry.plan import catalog as cat
from bottleneck_operator.telemetry.plan import selectors as sq
from bottleneck_operator.telemetry.plan.discovery import POD_OWNER_KINDS
from bottleneck_operator.telemetry.plan.grid import Grid, IntArray
from bottleneck_operator.telemetry.plan.names import escape_regex, quote, regex_alternation

PodKey = tuple[str, str]  # (namespace, pod)
JobKey = tuple[str, str]  # (namespace, job)
MODE_PREFIX = "_mode:"  # node_signals key of one CPU mode's rate


@dataclass(frozen=True)
class WindowRequest:
    """One Job and the time window to fetch for it.

    Attributes:
        namespace: the Job's namespace.
        job: the Job's name.
        start: window start, unix seconds.
        end: window end, unix seconds.
    """

    namespace: str
    job: str
    start: float
    end: float


@dataclass
class Pod:
    """One pod of a Job: its node and when kube_pod_info shows it."""

    node: str | None = None
    presence: list[al.Chunk] = field(default_factory=list)
    by_prefix: bool = False


@dataclass
class Store:
    """Everything one pass read, keyed for assembly."""

    pods: dict[JobKey, dict[str, Pod]] = field(default_factory=lambda: defaultdict(dict))
    pod_signals: dict[PodKey, dict[str, list[al.Chunk]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    node_signals: dict[str, dict[str, list[al.Chunk]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    gpus: dict[PodKey, dict[str, list[al.Chunk]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    unmapped: dict[str, list[al.Chunk]] = field(default_factory=lambda: defaultdict(list))
    on_node: dict[str, dict[PodKey, list[al.Chunk]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    intervals: dict[Family, dict[object, float]] = field(default_factory=lambda: defaultdict(dict))
    failures: list[str] = field(default_factory=list)
    prefix_jobs: set[JobKey] = field(default_factory=set)  # Jobs whose pods came from signal series alone
    hints: dict[PodKey, str] = field(default_factory=dict)  # pod -> node from the collector/dcgm labels
    # node-exporter series by instance and node_uname_info's (instance, node, presence) rows, until
    # nodes.attach_instances files them under their nodes (join mode: no node label configured)
    instance_signals: dict[str, dict[str, list[al.Chunk]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    uname: list[tuple[str, str, al.Chunk]] = field(default_factory=list)
    grids: dict[Grid, IntArray] = field(default_factory=dict)
    layout: dict[str, str] = field(default_factory=dict)  # the label layout per family (see .layouts)

    def indices(self, grid: Grid) -> IntArray:
        """The global indices of a segment's grid: one array per grid, shared by every answer on it.

        Chunks of one segment then line up by identity (see :func:`.answers.take_many`).
        """
        idx = self.grids.get(grid)
        if idx is None:
            idx = self.grids.setdefault(grid, np.arange(grid.first, grid.first + grid.size, dtype=np.int64))
        return idx


def store_hint(labels: dict[str, str], mapping: LabelSettings, store: Store) -> None:
    """File where a pod ran by the collector's ``node`` label or dcgm-exporter's host label."""
    if labels.get("bn_source") == "dcgm":
        key = (labels.get(mapping.dcgm_namespace_label, ""), labels.get(mapping.dcgm_pod_label, ""))
        node = labels.get(mapping.dcgm_hostname_label, "")
        if node and key not in store.hints:  # the collector's own node label wins
            store.hints[key] = node
    else:
        node = labels.get("node", "")
        if node:
            store.hints[(labels.get("namespace", ""), labels.get("pod", ""))] = node


def discover(answer: Matrix, jobs: AbstractSet[JobKey], store: Store) -> set[JobKey]:
    """Assign kube_pod_info series to the requested Jobs; returns the Jobs that got pods.

    Args:
        answer: the pods query of one segment (see :func:`..plan.discovery.pods_query`).
        jobs: the segment's Jobs.
        store: where pods, their nodes and presence go.

    Returns:
        The Jobs that got at least one pod.
    """
    by_ns: dict[str, list[str]] = defaultdict(list)
    for ns, job in jobs:
        by_ns[ns].append(job)
    found: set[JobKey] = set()
    idx = store.indices(answer.grid)
    for i, labels in enumerate(answer.labels):
        ns, pod = labels.get("namespace", ""), labels.get("pod", "")
        owner_kind, owner = labels.get("created_by_kind", ""), labels.get("created_by_name", "")
        by_prefix = not (owner_kind in POD_OWNER_KINDS and (ns, owner) in jobs)
        if by_prefix:
            # The longest requested name wins: pod "a-b-x1" belongs to Job "a-b" rather than "a".
            candidates = [j for j in by_ns.get(ns, []) if pod.startswith(j + "-")]
            if not candidates:
                continue
            owner = max(candidates, key=len)
        info = store.pods[(ns, owner)].setdefault(pod, Pod())
        info.by_prefix = info.by_prefix or by_prefix
        node = labels.get("node") or None
        if node:
            info.node = node
        info.presence.append(al.Chunk(idx, answer.row(i)))
        found.add((ns, owner))
    return found


def store_group(
    group: Family,
    entry: str,
    answer: Matrix,
    ctx: sq.QueryContext,
    store: Store,
) -> None:
    """File one signal query's answer: each series becomes a chunk (a view of its matrix row).

    Args:
        group: the entry's exporter.
        entry: the catalog entry's name.
        answer: its answer on the segment's grid.
        ctx: the selectors it was built from (for the label mapping).
        store: where the chunks go.
    """
    idx = store.indices(answer.grid)
    mapping = ctx.labels
    for i, labels in enumerate(answer.labels):
        name = entry
        chunk = al.Chunk(idx, answer.row(i))
        if group is Family.NODE:
            if name == sq.INTERNAL_CPU_MODES:
                name = MODE_PREFIX + labels.get("mode", "")
            if ctx.node_label:
                store.node_signals[labels.get(ctx.node_label, "")][name].append(chunk)
            elif name == cat.INTERNAL_UNAME:
                store.uname.append((labels.get("instance", ""), labels.get("nodename", ""), chunk))
            else:
                store.instance_signals[labels.get("instance", "")][name].append(chunk)
        elif name == sq.INTERNAL_ON_NODE:
            store.on_node[labels.get("node", "")][(labels.get("namespace", ""), labels.get("pod", ""))].append(chunk)
        elif name == sq.INTERNAL_UNMAPPED:
            store.unmapped[labels.get(mapping.dcgm_hostname_label, "")].append(chunk)
        elif group is Family.DCGM:
            key = (labels.get(mapping.dcgm_namespace_label, ""), labels.get(mapping.dcgm_pod_label, ""))
            if name == sq.INTERNAL_GPUS:
                store.gpus[key][labels.get("modelName", "")].append(chunk)
            else:
                store.pod_signals[key][name].append(chunk)
        else:
            store.pod_signals[(labels.get("namespace", ""), labels.get("pod", ""))][name].append(chunk)


def labels_of(row: dict[str, object]) -> dict[str, str]:
    metric = row.get("metric")
    return {str(k): str(v) for k, v in metric.items()} if isinstance(metric, dict) else {}


def to_float(text: object) -> float:
    try:
        return float(str(text))
    except ValueError:
        return math.nan


# The exporters in the order their queries go out: the GPU series matter most.
GROUP_ORDER = (Family.DCGM, Family.CADVISOR, Family.KSM, Family.NODE, Family.SIDECAR)


@dataclass(frozen=True)
class Scope:
    """One segment's Jobs, pods and nodes.

    Attributes:
        grid: the segment's instants (every query of the segment evaluates on them).
        jobs: the segment's Jobs.
        placed: the pods kube_pod_info shows for them, by (namespace, pod).
        prefix_alts: ``<job>-.+`` patterns of the Jobs kube_pod_info does not know at all.
        nodes: the pods' nodes.
        base: selectors of all of it (namespaces, pods, nodes, label mapping); no ranges yet.
    """

    grid: Grid
    jobs: frozenset[JobKey]
    placed: Mapping[PodKey, Pod]
    prefix_alts: tuple[str, ...]
    nodes: frozenset[str]
    base: sq.QueryContext

    @property
    def groups(self) -> list[Family]:
        """The exporters to read: node-exporter only when some pod has a node."""
        return [g for g in GROUP_ORDER if g is not Family.NODE or self.nodes]


def alternation(literals: Sequence[str], patterns: Sequence[str] = ()) -> str:
    """Escaped literals plus ready-made regex patterns, as one alternation (never empty)."""
    alts = [escape_regex(v) for v in literals] + list(patterns)
    return "|".join(alts) if alts else regex_alternation([])


def pod_selections(
    base: sq.QueryContext, names: Sequence[str], prefixes: Sequence[str]
) -> tuple[sq.QueryContext | None, sq.QueryContext | None]:
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


def fit(ctx: sq.QueryContext, build: Callable[[sq.QueryContext], str]) -> list[sq.QueryContext]:
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


def _with(ctx: sq.QueryContext, name: str, value: str) -> sq.QueryContext:
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
