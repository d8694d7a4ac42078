"""Stragglers: one pod or GPU of a multi-pod Job consistently behind its own peers.

Judged only against the Job's peers, never a datasheet: every figure is scored with the modified
z-score across the peers (:mod:`.robust`), and a peer is behind on a signal when its score passes
Iglewicz and Hoaglin's 3.5 in the bad direction. Pods are compared on pod-level figures (their
mean GPU activity, network and storage); GPUs on GPU-level ones (activity, clock, clock-event
reasons), across every GPU of the Job. A straggler is named only when it costs the Job at least
``min_share`` of its time; that share is the relative shortfall of its GPU activity or clock
against the peers' median (in a synchronous step every peer waits for the slowest, so a GPU 20 %
slower stretches the step by about that much). Network, storage and clock-event figures that lag
too name the cause.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from bottleneck_operator.analysis.cluster.digest import JobDigest, PeerSample
from bottleneck_operator.analysis.cluster.robust import OUTLIER_Z, modified_z

# Three peers at least: between two, neither is the odd one out.
MIN_PEERS = 3
# Below this share of the Job's time, a straggler is not worth naming (a policy, set by the caller).
MIN_SHARE = 0.05


@dataclass(frozen=True)
class _Signal:
    name: str
    low_is_bad: bool
    # The GPU's own pace (activity, clock), whose shortfall is the time the Job loses; the others
    # only explain it: a pod that reads or sends less but keeps its GPUs as busy costs nothing.
    rate: bool
    cause: str


_SIGNALS: dict[str, _Signal] = {
    "activity": _Signal("activity", True, True, "starved"),
    "clock_mhz": _Signal("clock_mhz", True, True, "throttled-clock"),
    "slowdown": _Signal("slowdown", False, False, "throttled-clock"),
    "net_bps": _Signal("net_bps", True, False, "network"),
    "read_bps": _Signal("read_bps", True, False, "storage"),
    "io_wait": _Signal("io_wait", False, False, "storage"),
}
_POD_SIGNALS = ("activity", "net_bps", "read_bps", "io_wait")
_GPU_SIGNALS = ("activity", "clock_mhz", "slowdown")
# The cause a straggler is named for, when several signals lag: the explanation over the symptom.
_CAUSE_ORDER = ("throttled-clock", "network", "storage", "starved")


@dataclass(frozen=True)
class Lag:
    """One signal a peer lags on: its value, the peers' median, and its modified z-score."""

    signal: str
    observed: float
    peers: float
    score: float


@dataclass(frozen=True)
class Straggler:
    """A pod (or one GPU of it) behind its Job's peers.

    Attributes:
        namespace, job: the Job.
        pod, node: where it runs.
        gpu: the GPU, None when the whole pod lags (or its GPUs are not told apart).
        cause: throttled-clock, network, storage, or starved (idle while its peers wait, cause unseen).
        share: the share of the Job's time it costs (0..1).
        lags: the evidence, one entry per signal it lags on.
    """

    namespace: str
    job: str
    pod: str
    node: str | None
    gpu: str | None
    cause: str
    share: float
    lags: tuple[Lag, ...]


def find_stragglers(job: JobDigest, *, min_share: float = MIN_SHARE) -> list[Straggler]:
    """The Job's stragglers, costliest first (empty for a one-pod Job or peers that agree).

    Args:
        job: the Job's digest with its per-GPU (or per-pod) peer summaries.
        min_share: the smallest share of the Job's time worth naming.

    Returns:
        At most one straggler per pod.
    """
    if len(job.peers) < MIN_PEERS:
        return []
    pods = _by_pod(job.peers)
    pod_lags = _lags([_pod_figures(units) for units in pods.values()], _POD_SIGNALS) if len(pods) >= MIN_PEERS else []
    gpu_units = [u for units in pods.values() for u in units]
    told_apart = any(u.gpu is not None for u in gpu_units)
    gpu_lags = _lags([_unit_figures(u) for u in gpu_units], _GPU_SIGNALS) if told_apart else []
    found: list[Straggler] = []
    offset = 0
    for i, (pod, units) in enumerate(pods.items()):
        lags = list(pod_lags[i]) if pod_lags else []
        behind = [(u, gpu_lags[offset + k]) for k, u in enumerate(units) if gpu_lags and gpu_lags[offset + k]]
        offset += len(units)
        gpu = None
        if len(behind) == 1:
            # One GPU of the pod lags: name it, and let its own activity stand for the pod's.
            unit, own = behind[0]
            gpu = unit.gpu
            lags = [lag for lag in lags if lag.signal != "activity" or all(g.signal != "activity" for g in own)]
            lags += own
        elif behind and not lags:
            lags = list(behind[0][1])  # several GPUs of the pod lag together: the pod is behind
        straggler = _straggler(job, pod, units[0].node, gpu, lags)
        if straggler is not None and straggler.share >= min_share:
            found.append(straggler)
    return sorted(found, key=lambda s: -s.share)


def _by_pod(peers: Sequence[PeerSample]) -> dict[str, list[PeerSample]]:
    pods: dict[str, list[PeerSample]] = defaultdict(list)
    for unit in peers:
        pods[unit.pod].append(unit)
    return dict(pods)


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _pod_figures(units: Sequence[PeerSample]) -> dict[str, float | None]:
    first = units[0]
    return {
        "activity": _mean([u.activity for u in units]),
        "net_bps": first.net_bps,
        "read_bps": first.read_bps,
        "io_wait": first.io_wait,
    }


def _unit_figures(unit: PeerSample) -> dict[str, float | None]:
    return {"activity": unit.activity, "clock_mhz": unit.clock_mhz, "slowdown": unit.slowdown}


def _lags(figures: Sequence[dict[str, float | None]], signals: Sequence[str]) -> list[list[Lag]]:
    """For each peer, the signals it lags on (scored only where every peer has the figure)."""
    out: list[list[Lag]] = [[] for _ in figures]
    for name in signals:
        values = [f.get(name) for f in figures]
        if any(v is None for v in values):
            continue
        known = [float(v) for v in values if v is not None]
        median, scores = modified_z(known)
        sign = -1.0 if _SIGNALS[name].low_is_bad else 1.0
        for i, z in enumerate(scores):
            if sign * z > OUTLIER_Z:
                out[i].append(Lag(name, known[i], median, round(z, 2)))
    return out


def _straggler(job: JobDigest, pod: str, node: str | None, gpu: str | None, lags: Sequence[Lag]) -> Straggler | None:
    if not lags:
        return None
    shares = [1.0 - lag.observed / lag.peers for lag in lags if _SIGNALS[lag.signal].rate and lag.peers > 0]
    if not shares:
        return None
    causes = {_SIGNALS[lag.signal].cause for lag in lags}
    cause = next(c for c in _CAUSE_ORDER if c in causes)
    return Straggler(
        namespace=job.namespace,
        job=job.name,
        pod=pod,
        node=node,
        gpu=gpu,
        cause=cause,
        share=round(max(0.0, min(1.0, max(shares))), 4),
        lags=tuple(lags),
    )
