"""Max-min fair sharing by progressive filling over a small resource graph.

A resource is named ``"<class>/<instance>"`` (``"cpu/node0"``, ``"network/uplink"``); the class is
what the label doubling acts on. A flow crosses one or more resources and may carry its own cap
(a cgroup quota, a number of loader workers, a storage service's per-client limit), named the same
way. All unfrozen flows grow at one rate; a flow freezes when a resource on its path is full or it
reaches its cap, and the resource (or cap) that froze it is what bounds it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

_EPS = 1e-9


def resource_class(name: str) -> str:
    """The class part of a resource or cap name (``"cpu/limit"`` -> ``"cpu"``)."""
    return name.split("/", 1)[0]


@dataclass(frozen=True)
class Flow:
    """One tenant's use of a path of resources.

    Attributes:
        name: unique among the flows of one allocation.
        path: the resources it crosses (each must have a capacity).
        cap: the most it can take (``math.inf`` for an elastic flow), in the resources' unit.
        cap_kind: the name of that cap (``"cpu/limit"``), which bounds the flow when it is reached.
    """

    name: str
    path: tuple[str, ...]
    cap: float = math.inf
    cap_kind: str = ""


@dataclass(frozen=True)
class Allocation:
    """The outcome: each flow's rate, what bounds it, and what is left of each resource."""

    rates: Mapping[str, float]
    bound_by: Mapping[str, str]
    residual: Mapping[str, float]

    def doubled_rate(self, flow: Flow, cls: str) -> float:
        """The flow's rate if the resource class ``cls`` gave this flow alone twice its share.

        Only a flow bounded by ``cls`` gains; it then grows to twice its rate or until another
        resource on its path (of another class) is full, whichever comes first.
        """
        rate = self.rates[flow.name]
        if resource_class(self.bound_by.get(flow.name, "")) != cls:
            return rate
        limit = 2.0 * rate
        for r in flow.path:
            if resource_class(r) != cls:
                limit = min(limit, rate + self.residual[r])
        if flow.cap_kind and resource_class(flow.cap_kind) != cls:
            limit = min(limit, flow.cap)
        return max(rate, limit)


def progressive_fill(capacity: Mapping[str, float], flows: Sequence[Flow]) -> Allocation:
    """Max-min fair rates of ``flows`` over resources of the given capacities.

    Resources no flow connects fill independently, so the graph is split into its connected
    components first (the same result, far fewer rounds: each node's CPU is its own component).

    Raises:
        ValueError: a flow crosses a resource with no capacity, or two flows share a name.
    """
    names = [f.name for f in flows]
    if len(set(names)) != len(names):
        raise ValueError("flow names must be unique")
    parent = {r: r for r in capacity}

    def root(r: str) -> str:
        while parent[r] != r:
            parent[r] = parent[parent[r]]
            r = parent[r]
        return r

    for f in flows:
        for r in f.path:
            if r not in capacity:
                raise ValueError(f"flow {f.name} crosses {r}, which has no capacity")
        for a, b in zip(f.path, f.path[1:], strict=False):
            ra, rb = root(a), root(b)
            if ra != rb:
                parent[ra] = rb
    groups: dict[str, list[Flow]] = {}
    for f in flows:
        groups.setdefault(root(f.path[0]) if f.path else "", []).append(f)
    residual = dict(capacity)
    rates: dict[str, float] = {}
    bound: dict[str, str] = {}
    for group in groups.values():
        _fill(capacity, residual, group, rates, bound)
    return Allocation(rates, bound, {r: max(v, 0.0) for r, v in residual.items()})


def _fill(
    capacity: Mapping[str, float],
    residual: dict[str, float],
    flows: Sequence[Flow],
    rates: dict[str, float],
    bound: dict[str, str],
) -> None:
    """Progressive filling of one connected component (updates ``residual``, ``rates``, ``bound``)."""
    for f in flows:
        rates[f.name] = 0.0
        if f.cap <= 0 or not f.path:
            bound[f.name] = f.cap_kind
    active = [f for f in flows if f.cap > 0 and f.path]
    while active:
        counts: dict[str, int] = {}
        for f in active:
            for r in f.path:
                counts[r] = counts.get(r, 0) + 1
        step = math.inf
        for f in active:
            if f.cap - rates[f.name] < step:
                step = f.cap - rates[f.name]
        for r, k in counts.items():
            if residual[r] / k < step:
                step = residual[r] / k
        step = max(step, 0.0)
        for f in active:
            rates[f.name] += step
            for r in f.path:
                residual[r] -= step
        full = {r for r in counts if residual[r] <= _EPS * max(capacity[r], 1.0)}
        still = []
        for f in active:
            hit = ""
            for r in f.path:
                if r in full:
                    hit = r
                    break
            if hit:
                bound[f.name] = hit
            elif math.isfinite(f.cap) and f.cap - rates[f.name] <= _EPS * max(f.cap, 1.0):
                bound[f.name] = f.cap_kind
            else:
                still.append(f)
        active = still
