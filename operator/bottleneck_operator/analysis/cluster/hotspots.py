"""Hot spots: a node, storage class, fabric or rack whose Jobs show a symptom far more often than
comparable Jobs elsewhere.

The test is Cochran-Mantel-Haenszel's, one-sided, stratified by workload (Mantel and Haenszel,
J. Natl Cancer Inst. 22, 1959; Agresti, *Categorical Data Analysis*, 3rd ed., sections 6.4 and
7.3), in its exact conditional form: within each stratum of comparable Jobs (the same
``workload``) a 2x2 table crosses "ran there" with "shows the symptom", and the count of
symptomatic Jobs that ran there is compared with its exact law given the strata's margins (a sum
of hypergeometric counts), which the strata's own rates fix. A node that runs more IO-heavy Jobs meets them in their stratum,
where they are IO-bound just as often elsewhere, so it is not a hot spot. Every (place, symptom)
pair with at least ``min_jobs`` Jobs is a hypothesis; Holm's step-down procedure (Scand. J. Statist. 6, 1979) keeps
the chance of any false alarm in one summary at ``alpha`` (default 1 %). Accepted hot spots are
taken greedily, strongest first, and the places left are tested again without the Jobs already
explained, so a slow node does not also make its rack, nor a hot filesystem every node, a hot spot.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.analysis.cluster.digest import DIMENSIONS, JobDigest

# Family-wise error rate of one summary's hot spots.
ALPHA = 0.01
# A hot spot is the common factor of this many symptomatic Jobs at least: the normal approximation
# of the CMH statistic needs a few, and a platform team does not chase one Job's bad luck.
MIN_JOBS = 3
# What each dimension can concentrate: storage shows as IO-bound Jobs, a fabric as Interconnect-bound
# ones; a node or a rack as any of the three.
TESTED: dict[str, tuple[str, ...]] = {
    "node": ("IO", "Interconnect", "Throttled"),
    "storage": ("IO",),
    "fabric": ("Interconnect",),
    "rack": ("IO", "Interconnect", "Throttled"),
}
_NAMES = 5  # Jobs named in a hot spot's example list

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class HotSpot:
    """One place that concentrates a symptom beyond what its Jobs' workloads explain.

    Attributes:
        dimension, location: where (node gpu-node-7, storage class nfs-shared, ...).
        symptom: IO, Interconnect or Throttled.
        jobs: symptomatic Jobs that ran there.
        expected: how many of them the strata's rates predict.
        exposed: Jobs that ran there.
        odds_ratio: the Mantel-Haenszel common odds ratio (inf when no Job elsewhere shows it).
        p_value: the one-sided CMH p-value; ``threshold`` the Holm level it passed.
        examples: a few of the symptomatic Jobs, as namespace/name.
    """

    dimension: str
    location: str
    symptom: str
    jobs: int
    expected: float
    exposed: int
    odds_ratio: float
    p_value: float
    threshold: float
    examples: tuple[str, ...]

    @property
    def message(self) -> str:
        what = {"IO": "IO-bound", "Interconnect": "Interconnect-bound", "Throttled": "clock-throttled"}[self.symptom]
        return (
            f"{self.dimension} {self.location} is the common factor of {self.jobs} {what} Jobs "
            f"({self.expected:.1f} expected from comparable Jobs elsewhere)"
        )


@dataclass
class _Table:
    """One symptom's population: each Job's stratum and symptom, and each place's Jobs."""

    symptom: str
    jobs: list[JobDigest]
    strata: IntArray
    sick: BoolArray
    places: dict[tuple[str, str], IntArray]
    alive: BoolArray
    log_fact: FloatArray


def find_hotspots(jobs: Sequence[JobDigest], *, alpha: float = ALPHA, min_jobs: int = MIN_JOBS) -> list[HotSpot]:
    """The cluster's hot spots, strongest first.

    Args:
        jobs: one digest per Job (its workload stratum, symptoms and places).
        alpha: the family-wise error rate over every hypothesis tested.
        min_jobs: the fewest symptomatic Jobs a hot spot names.

    Returns:
        The hot spots that pass Holm's procedure, in the order they were accepted.
    """
    tables = [t for s in ("IO", "Interconnect", "Throttled") if (t := _table(jobs, s)) is not None]
    # Every place with enough Jobs to be a hot spot is a hypothesis (a place with fewer can never
    # be one, so counting it would only blunt the test; the count depends on no Job's symptom).
    for table in tables:
        table.places = {k: v for k, v in table.places.items() if len(v) >= min_jobs}
    hypotheses = sum(len(t.places) for t in tables)
    found: list[HotSpot] = []
    while tables and hypotheses > len(found):
        best: tuple[float, _Table, tuple[str, str], dict[str, float]] | None = None
        for table in tables:
            for place, members in table.places.items():
                stats = _test_place(table, members)
                if stats["a"] >= min_jobs and (best is None or stats["p"] < best[0]):
                    best = (stats["p"], table, place, stats)
        if best is None:
            break
        p, table, place, stats = best
        threshold = alpha / (hypotheses - len(found))
        if p > threshold:
            break
        members = table.places.pop(place)
        found.append(_hotspot(table, place, members, stats, threshold))
        table.alive[members] = False  # explained: the other places are judged without them
    return found


def _table(jobs: Sequence[JobDigest], symptom: str) -> _Table | None:
    measurable = [j for j in jobs if symptom != "Throttled" or j.throttled is not None]
    if not measurable:
        return None
    codes: dict[str, int] = {}
    strata = np.array([codes.setdefault(j.workload, len(codes)) for j in measurable], dtype=np.int64)
    sick = np.array([j.shows(symptom) for j in measurable], dtype=np.bool_)
    index = {j.key: i for i, j in enumerate(measurable)}
    members: dict[tuple[str, str], list[int]] = defaultdict(list)
    for j in measurable:
        for dimension in DIMENSIONS:
            if symptom in TESTED[dimension]:
                for location in set(j.locations.get(dimension, ())):
                    members[(dimension, location)].append(index[j.key])
    places = {k: np.array(v, dtype=np.int64) for k, v in members.items()}
    log_fact = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, len(measurable) + 1)))])
    return _Table(symptom, measurable, strata, sick, places, np.ones(len(measurable), dtype=np.bool_), log_fact)


def _test_place(table: _Table, members: IntArray) -> dict[str, float]:
    """The one-sided exact conditional test of one place, over the Jobs not yet explained."""
    alive = table.alive
    members = members[alive[members]]
    size = int(table.strata.max()) + 1 if len(table.strata) else 0
    n = np.bincount(table.strata[alive], minlength=size)
    m1 = np.bincount(table.strata[alive & table.sick], minlength=size)
    n1 = np.bincount(table.strata[members], minlength=size)
    a = np.bincount(table.strata[members[table.sick[members]]], minlength=size)
    ok = (n > 1) & (n1 > 0)
    n, m1, n1, a = n[ok], m1[ok], n1[ok], a[ok]
    stats = {"a": float(a.sum()), "e": float((n1 * m1 / n).sum()), "n1": float(n1.sum())}
    b, c = n1 - a, m1 - a
    d = n - n1 - c
    num, den = float((a * d / n).sum()), float((b * c / n).sum())
    stats["or"] = num / den if den > 0 else (math.inf if num > 0 else math.nan)
    stats["p"] = _exact_upper_tail(n, m1, n1, int(stats["a"]), table.log_fact) if stats["a"] > 0 else 1.0
    return stats


def _exact_upper_tail(n: IntArray, m1: IntArray, n1: IntArray, observed: int, log_fact: FloatArray) -> float:
    """P(sum of the strata's counts >= observed) when each is hypergeometric given its margins.

    The exact conditional distribution of the CMH statistic (Agresti, section 7.3): the
    convolution of one hypergeometric law per stratum. The normal approximation is far too
    optimistic here, at the small p-values a correction for hundreds of places asks for and with a
    handful of Jobs per place, where the law is skewed.
    """
    total = np.ones(1)
    for nk, mk, ck in zip(n.tolist(), m1.tolist(), n1.tolist(), strict=True):
        low, high = max(0, ck + mk - nk), min(ck, mk)
        x = np.arange(low, high + 1)
        log_pmf = (
            log_fact[mk]
            - log_fact[x]
            - log_fact[mk - x]
            + log_fact[nk - mk]
            - log_fact[ck - x]
            - log_fact[nk - mk - ck + x]
            - (log_fact[nk] - log_fact[ck] - log_fact[nk - ck])
        )
        pmf = np.zeros(high + 1)
        pmf[low:] = np.exp(log_pmf)
        total = np.convolve(total, pmf)
    return float(min(1.0, total[observed:].sum()))


def _hotspot(
    table: _Table,
    place: tuple[str, str],
    members: IntArray,
    stats: dict[str, float],
    threshold: float,
) -> HotSpot:
    measurable = table.jobs
    live = members[table.alive[members] & table.sick[members]]
    examples = tuple(f"{measurable[i].namespace}/{measurable[i].name}" for i in live[:_NAMES])
    return HotSpot(
        dimension=place[0],
        location=place[1],
        symptom=table.symptom,
        jobs=int(stats["a"]),
        expected=round(stats["e"], 2),
        exposed=int(stats["n1"]),
        odds_ratio=round(stats["or"], 2) if math.isfinite(stats["or"]) else math.inf,
        p_value=stats["p"],
        threshold=threshold,
        examples=examples,
    )
