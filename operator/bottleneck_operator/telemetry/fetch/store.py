"""What one pass read, how Prometheus's answers are filed into it, and what is kept between passes.

Answers are keyed for assembly: pods per Job (from kube_pod_info), pod-level series per
(namespace, pod), node-level series per node, GPUs per pod, neighbours per node, scrape-interval
estimates, and where pods ran when kube_pod_info does not say. A segment's :class:`Scope` (its grid,
Jobs, pods and nodes) is found by the pods query and widened by the probe.

Two things outlive a pass, per operator: each pod's scrape interval per exporter
(:class:`IntervalCache`: an exporter's interval is configuration, and estimating it reads each
exporter's densest series several times over), and the label layout of each exporter family
(:class:`LayoutCache`, read by :func:`detect`), which is detected again for a family when a pass finds
nothing in it (an exporter redeployed with another layout).
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
import weakref
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

import numpy as np

from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.window import JobWindow
from bottleneck_operator.settings import LabelSettings
from bottleneck_operator.telemetry.fetch.client import PrometheusClient
from bottleneck_operator.telemetry.fetch.transport import Matrix
from bottleneck_operator.telemetry.plan import catalog as cat
from bottleneck_operator.telemetry.plan import selectors as sq
from bottleneck_operator.telemetry.plan.discovery import (
    DETECT_WINDOW,
    POD_OWNER_KINDS,
    PROBE_LABEL,
    Layout,
    detection_query,
    layout_from,
)
from bottleneck_operator.telemetry.plan.grid import Chunk, Grid, IntArray

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
    presence: list[Chunk] = field(default_factory=list)
    by_prefix: bool = False


@dataclass
class Store:
    """Everything one pass read, keyed for assembly."""

    pods: dict[JobKey, dict[str, Pod]] = field(default_factory=lambda: defaultdict(dict))
    pod_signals: dict[PodKey, dict[str, list[Chunk]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    node_signals: dict[str, dict[str, list[Chunk]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    gpus: dict[PodKey, dict[str, list[Chunk]]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(list)))
    unmapped: dict[str, list[Chunk]] = field(default_factory=lambda: defaultdict(list))
    on_node: dict[str, dict[PodKey, list[Chunk]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    intervals: dict[Family, dict[object, float]] = field(default_factory=lambda: defaultdict(dict))
    failures: list[str] = field(default_factory=list)
    prefix_jobs: set[JobKey] = field(default_factory=set)  # Jobs whose pods came from signal series alone
    hints: dict[PodKey, str] = field(default_factory=dict)  # pod -> node from the collector/dcgm labels
    # node-exporter series by instance and node_uname_info's (instance, node, presence) rows, until
    # assemble.attach_instances files them under their nodes (join mode: no node label configured)
    instance_signals: dict[str, dict[str, list[Chunk]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    uname: list[tuple[str, str, Chunk]] = field(default_factory=list)
    grids: dict[Grid, IntArray] = field(default_factory=dict)
    layout: dict[str, str] = field(default_factory=dict)  # the label layout per family (see LayoutCache)

    def indices(self, grid: Grid) -> IntArray:
        """The global indices of a segment's grid: one array per grid, shared by every answer on it.

        Chunks of one segment then line up by identity (see :func:`..plan.grid.take_many`).
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
        info.presence.append(Chunk(idx, answer.row(i)))
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
        chunk = Chunk(idx, answer.row(i))
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


# --- kept between passes: scrape-interval estimates and label layouts

DEFAULT_TTL = 600.0
# Kept entries at most; beyond it the oldest go first (a cluster's churn cannot grow it unbounded).
MAX_ENTRIES = 100_000


class IntervalCache:
    """Per (exporter group, pod or node) scrape interval, with an expiry; safe to share between threads.

    Args:
        ttl: seconds an estimate is reused.
        clock: monotonic seconds (tests pass their own).
    """

    def __init__(self, ttl: float = DEFAULT_TTL, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self._clock = clock
        # (group, unit) -> (seconds, or 0.0 for "no series"; expiry time); insertion order = age
        self._entries: dict[tuple[Family, object], tuple[float, float]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, group: Family, unit: object) -> float | None:
        """The kept estimate (0.0: the unit has no series of this exporter), or None when unknown or expired."""
        with self._lock:
            found = self._entries.get((group, unit))
            if found is None:
                return None
            if found[1] <= self._clock():
                del self._entries[(group, unit)]
                return None
            return found[0]

    def put(self, group: Family, unit: object, seconds: float) -> None:
        """Keep an estimate (0.0 or less: no series) for :attr:`ttl` seconds."""
        key = (group, unit)
        with self._lock:
            self._entries.pop(key, None)
            self._entries[key] = (max(0.0, seconds), self._clock() + self.ttl)
            while len(self._entries) > MAX_ENTRIES:
                del self._entries[next(iter(self._entries))]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


# A detection older than this is redone even when every family still answers.
REDETECT_AFTER = 3600.0


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
    return layout_from(seen, configured, tuple(sorted(clusters)), at)


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
