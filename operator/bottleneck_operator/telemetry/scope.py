"""What one segment of a pass selects: its grid, Jobs, pods and nodes, and the selectors built from them.

The pods query finds the scope (:func:`.windows.fetch_windows`, step 1); the probe widens it by the
nodes that only the collector's and dcgm-exporter's labels name (step 2); the signal queries are
planned from it (:mod:`.tasks`, step 3).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bottleneck_operator.telemetry import selectors as sq
from bottleneck_operator.telemetry.grid import Grid
from bottleneck_operator.telemetry.names import escape_regex, regex_alternation
from bottleneck_operator.telemetry.store import JobKey, Pod, PodKey

# The exporters in the order their queries go out: the GPU series matter most.
GROUP_ORDER = (sq.Group.DCGM, sq.Group.CADVISOR, sq.Group.KSM, sq.Group.NODE, sq.Group.SIDECAR)


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
    def groups(self) -> list[sq.Group]:
        """The exporters to read: node-exporter only when some pod has a node."""
        return [g for g in GROUP_ORDER if g is not sq.Group.NODE or self.nodes]


def alternation(literals: Sequence[str], patterns: Sequence[str] = ()) -> str:
    """Escaped literals plus ready-made regex patterns, as one alternation (never empty)."""
    alts = [escape_regex(v) for v in literals] + list(patterns)
    return "|".join(alts) if alts else regex_alternation([])


def pod_selections(
    base: sq.QueryContext, names: Sequence[str], prefixes: Sequence[str]
) -> tuple[sq.QueryContext | None, sq.QueryContext | None]:
    """Contexts selecting pods by name and by ``<job>-`` prefix (None where there is nothing to select).

    Each kind gets a selector of its own: Prometheus matches a pure list of names as a set, but runs
    a regex mixing names and prefixes against every pod name it knows.

    Args:
        base: the selectors to narrow.
        names: pod names.
        prefixes: ``<job>-.+`` regex patterns.

    Returns:
        (by name, by prefix).
    """
    by_name = dataclasses.replace(base, pods=alternation(names)) if names else None
    by_prefix = dataclasses.replace(base, pods=alternation([], prefixes)) if prefixes else None
    return by_name, by_prefix
