"""What one segment of a pass selects: its grid, Jobs, pods and nodes, and the selectors built from them.

The pods query finds the scope (:func:`.windows.fetch_windows`, step 1); the probe widens it by the
nodes that only the collector's and dcgm-exporter's labels name (step 2); the signal queries are
planned from it (:mod:`.tasks`, step 3).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from bottleneck_operator.contract.signals import Family
from bottleneck_operator.telemetry.fetch.store import JobKey, Pod, PodKey
from bottleneck_operator.telemetry.plan import selectors as sq
from bottleneck_operator.telemetry.plan.grid import Grid
from bottleneck_operator.telemetry.plan.names import escape_regex, quote, regex_alternation

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
