"""The cluster's summary: Jobs by class, GPU-hours lost, the changes worth most, stragglers, hot spots.

GPU-hours lost are idle GPU time, ``(1 - GPU activity) x GPUs x time``, charged to the class of the
Job's verdict: the measured stall that kept those GPUs waiting. A recommendation is worth the
GPU-hours it would give back: a Job that could run ``h`` times faster needs ``1/h`` of its GPU
time, so it recovers ``(1 - 1/h)`` of it, never more than its idle time; ``h`` is the low end of the
report's headroom range, the conservative one.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from bottleneck_operator.analysis.cluster.digest import JobDigest
from bottleneck_operator.analysis.cluster.hotspots import ALPHA, HotSpot, find_hotspots
from bottleneck_operator.analysis.cluster.stragglers import MIN_SHARE, Straggler, find_stragglers
from bottleneck_operator.analysis.cluster.suspects import Suspect, find_suspects

# Bounded lists: the summary is one object in etcd, whatever the cluster's size.
TOP_ACTIONS = 5
TOP_STRAGGLERS = 20
TOP_NAMESPACES = 50
# A week: "the common factor of 9 IO-bound Jobs this week".
LOOKBACK = 7 * 24 * 3600.0
# Trailing name parts a controller or a run script appends to one workload's runs: a number, a
# date, a generated suffix of 5 to 10 letters and digits with at least one digit.
_RUN_SUFFIX = re.compile(r"(-(\d+|[a-z0-9]*\d[a-z0-9]*))+$")


@dataclass(frozen=True)
class ActionWorth:
    """One recommended action, with the Jobs it was given to and the GPU-hours it would recover."""

    action: str
    bottleneck: str
    jobs: int
    gpu_hours: float


@dataclass(frozen=True)
class NamespaceLoss:
    """Idle GPU-hours of one namespace's Jobs charged to one class."""

    namespace: str
    bottleneck: str
    gpu_hours: float


@dataclass(frozen=True)
class ClusterSummary:
    """What limits the cluster, where, and what fixing it is worth."""

    jobs: int
    gpu_hours: float
    by_class: dict[str, int]
    lost_by_class: dict[str, float]
    lost_by_namespace: tuple[NamespaceLoss, ...]
    actions: tuple[ActionWorth, ...]
    stragglers: tuple[Straggler, ...]
    hotspots: tuple[HotSpot, ...]
    suspects: tuple[Suspect, ...] = ()
    start: float | None = None
    end: float | None = None
    stragglers_total: int = 0
    jobs_by_namespace: dict[tuple[str, str], int] = field(default_factory=dict)
    stragglers_by_namespace: dict[str, int] = field(default_factory=dict)

    @property
    def gpu_hours_lost(self) -> float:
        return sum(self.lost_by_class.values())


def workload_of(namespace: str, kind: str, name: str) -> str:
    """The stratum of a Job run: its namespace, kind and name without a run suffix.

    ``resnet-train-20260128`` and ``resnet-train-7f9c2`` are two runs of one workload; comparing
    hot spots within such strata controls for what the workload asks of storage and network.
    """
    stem = _RUN_SUFFIX.sub("", name) or name
    return f"{namespace}/{kind}/{stem}"


def summarise(jobs: Sequence[JobDigest], *, alpha: float = ALPHA, min_share: float = MIN_SHARE) -> ClusterSummary:
    """The summary of the given Jobs (one digest each).

    Args:
        jobs: the Jobs' digests.
        alpha: the hot-spot test's family-wise error rate.
        min_share: the smallest share of a Job's time a straggler must cost to be named.

    Returns:
        The summary, every list bounded.
    """
    by_class: Counter[str] = Counter(j.bottleneck for j in jobs)
    lost: defaultdict[str, float] = defaultdict(float)
    by_namespace: defaultdict[tuple[str, str], float] = defaultdict(float)
    for j in jobs:
        idle = j.idle_gpu_hours
        lost[j.bottleneck] += idle
        if idle > 0:
            by_namespace[(j.namespace, j.bottleneck)] += idle
    stragglers = [s for j in jobs if len(j.peers) > 1 for s in find_stragglers(j, min_share=min_share)]
    weight = {j.key[0::2]: j.gpu_hours for j in jobs}
    ranked = sorted(stragglers, key=lambda s: -s.share * weight.get((s.namespace, s.job), 0.0))
    namespaces = sorted(by_namespace.items(), key=lambda kv: -kv[1])[:TOP_NAMESPACES]
    return ClusterSummary(
        jobs=len(jobs),
        gpu_hours=round(sum(j.gpu_hours for j in jobs), 3),
        by_class=dict(sorted(by_class.items())),
        lost_by_class={k: round(v, 3) for k, v in sorted(lost.items())},
        lost_by_namespace=tuple(NamespaceLoss(ns, cls, round(h, 3)) for (ns, cls), h in namespaces),
        actions=tuple(_actions(jobs)),
        stragglers=tuple(ranked[:TOP_STRAGGLERS]),
        hotspots=tuple(find_hotspots(jobs, alpha=alpha)),
        suspects=tuple(find_suspects(jobs, stragglers, alpha=alpha)),
        start=min((j.end - j.seconds for j in jobs), default=None),
        end=max((j.end for j in jobs), default=None),
        stragglers_total=len(stragglers),
        jobs_by_namespace=dict(Counter((j.namespace, j.bottleneck) for j in jobs)),
        stragglers_by_namespace=dict(Counter(s.namespace for s in stragglers)),
    )


def recoverable(job: JobDigest) -> float:
    """GPU-hours the Job would give back without its bottleneck (0 without a headroom estimate)."""
    if job.headroom is None or job.headroom <= 1.0:
        return 0.0
    return min(job.idle_gpu_hours, job.gpu_hours * (1.0 - 1.0 / job.headroom))


def _actions(jobs: Iterable[JobDigest]) -> list[ActionWorth]:
    worth: defaultdict[tuple[str, str], float] = defaultdict(float)
    count: Counter[tuple[str, str]] = Counter()
    for j in jobs:
        if j.action and j.bottleneck not in ("GPU", "Unknown"):
            key = (j.action, j.bottleneck)
            worth[key] += recoverable(j)
            count[key] += 1
    ranked = sorted(worth.items(), key=lambda kv: -kv[1])[:TOP_ACTIONS]
    return [ActionWorth(a, cls, count[(a, cls)], round(h, 3)) for (a, cls), h in ranked if h > 0]


class ClusterBook:
    """The latest digest of every Job seen within the lookback: what a summary is computed over.

    Kept by the operator across passes; a Job's newer digest replaces its older one.
    """

    def __init__(self, lookback: float = LOOKBACK) -> None:
        self.lookback = lookback
        self._jobs: dict[tuple[str, str, str], JobDigest] = {}

    def __len__(self) -> int:
        return len(self._jobs)

    def record(self, digests: Iterable[JobDigest]) -> None:
        """Keep these digests (each replaces its Job's earlier one)."""
        for d in digests:
            self._jobs[d.key] = d

    def get(self, key: tuple[str, str, str]) -> JobDigest | None:
        """The Job's latest digest, None when the book has none."""
        return self._jobs.get(key)

    def restore(self, digests: Iterable[JobDigest], now: float) -> int:
        """Keep the digests of Jobs the book does not know yet that ended within the lookback (a
        restarted operator's book, refilled from what finished Jobs left behind); returns how many."""
        cutoff, kept = now - self.lookback, 0
        for d in digests:
            if d.key not in self._jobs and d.end >= cutoff:
                self._jobs[d.key] = d
                kept += 1
        return kept

    def digests(self, now: float) -> list[JobDigest]:
        """The digests of Jobs that ran within the lookback before ``now`` (older ones are forgotten)."""
        cutoff = now - self.lookback
        for key in [k for k, d in self._jobs.items() if d.end < cutoff]:
            del self._jobs[key]
        return list(self._jobs.values())
