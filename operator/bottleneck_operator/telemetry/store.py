"""What one pass read, and how Prometheus's answers are filed into it.

Answers are keyed for assembly: pods per Job (from kube_pod_info), pod-level series per
(namespace, pod), node-level series per node, GPUs per pod, neighbours per node, scrape-interval
estimates, and where pods ran when kube_pod_info does not say.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry import alignment as al
from bottleneck_operator.telemetry import catalog as cat
from bottleneck_operator.telemetry import selectors as sq
from bottleneck_operator.telemetry.matrix import Matrix

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
    intervals: dict[sq.Group, dict[object, float]] = field(default_factory=lambda: defaultdict(dict))
    failures: list[str] = field(default_factory=list)
    prefix_jobs: set[JobKey] = field(default_factory=set)  # Jobs whose pods came from signal series alone
    hints: dict[PodKey, str] = field(default_factory=dict)  # pod -> node from the collector/dcgm labels
    # node-exporter series by instance and node_uname_info's (instance, node, presence) rows, until
    # nodes.attach_instances files them under their nodes (join mode: no node label configured)
    instance_signals: dict[str, dict[str, list[al.Chunk]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    uname: list[tuple[str, str, al.Chunk]] = field(default_factory=list)
    grids: dict[tuple[int, int], al.IntArray] = field(default_factory=dict)


def store_hint(labels: dict[str, str], settings: Settings, store: Store) -> None:
    if labels.get("bn_source") == "dcgm":
        key = (labels.get(settings.dcgm_namespace_label, ""), labels.get(settings.dcgm_pod_label, ""))
        node = labels.get(settings.dcgm_hostname_label, "")
        if node and key not in store.hints:  # the collector's own node label wins
            store.hints[key] = node
    else:
        node = labels.get("node", "")
        if node:
            store.hints[(labels.get("namespace", ""), labels.get("pod", ""))] = node


def discover(result: list[dict[str, object]], jobs: set[JobKey], step: float, store: Store) -> set[JobKey]:
    """Assign kube_pod_info series to the requested Jobs; returns the Jobs that got pods."""
    by_ns: dict[str, list[str]] = defaultdict(list)
    for ns, job in jobs:
        by_ns[ns].append(job)
    found: set[JobKey] = set()
    for row in result:
        labels = labels_of(row)
        ns, pod = labels.get("namespace", ""), labels.get("pod", "")
        owner_kind, owner = labels.get("created_by_kind", ""), labels.get("created_by_name", "")
        by_prefix = not (owner_kind == "Job" and (ns, owner) in jobs)
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
        info.presence.append(al.parse_values(values_of(row), step))
        found.add((ns, owner))
    return found


def store_group(
    group: sq.Group,
    entry: str,
    answer: Matrix,
    settings: Settings,
    ctx: sq.QueryContext,
    store: Store,
) -> None:
    """File one signal query's answer: each series becomes a chunk (a view of its matrix row)."""
    # One index array per grid, shared by every answer on it (chunks of a segment line up by identity).
    idx = store.grids.get((answer.first, answer.columns))
    if idx is None:
        idx = store.grids.setdefault(
            (answer.first, answer.columns), np.arange(answer.first, answer.first + answer.columns, dtype=np.int64)
        )
    for i, labels in enumerate(answer.labels):
        name = entry
        chunk = al.Chunk(idx, answer.row(i))
        if group is sq.Group.NODE:
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
            store.unmapped[labels.get(settings.dcgm_hostname_label, "")].append(chunk)
        elif group is sq.Group.DCGM:
            key = (labels.get(settings.dcgm_namespace_label, ""), labels.get(settings.dcgm_pod_label, ""))
            if name == sq.INTERNAL_GPUS:
                store.gpus[key][labels.get("modelName", "")].append(chunk)
            else:
                store.pod_signals[key][name].append(chunk)
        else:
            store.pod_signals[(labels.get("namespace", ""), labels.get("pod", ""))][name].append(chunk)


def labels_of(row: dict[str, object]) -> dict[str, str]:
    metric = row.get("metric")
    return {str(k): str(v) for k, v in metric.items()} if isinstance(metric, dict) else {}


def values_of(row: dict[str, object]) -> list[list[object]]:
    values = row.get("values")
    return values if isinstance(values, list) else []


def to_float(text: object) -> float:
    try:
        return float(str(text))
    except ValueError:
        return math.nan
