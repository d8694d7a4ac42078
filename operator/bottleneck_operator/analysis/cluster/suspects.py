"""Suspects: a node or GPU that is the straggler of several Jobs, more often than chance allows.

One Job's straggler may be bad luck; the same GPU behind in Job after Job is a bad GPU, the same
node's pod behind on the network a degraded NIC. Each place where a straggler can be named (a
GPU for a throttled clock, a node for network or storage) is tested with an exact binomial test:
with ``n`` of the analysed Jobs' peers there and the cluster's rate ``r`` of that cause among all
peers, how likely are ``k`` or more stragglers there? Holm's step-down procedure keeps the chance
of any false suspect in one summary at ``alpha``, as for hot spots.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from bottleneck_operator.analysis.cluster.digest import JobDigest
from bottleneck_operator.analysis.cluster.stragglers import Straggler

# Two Jobs at least: one Job's straggler is that Job's business.
MIN_JOBS = 2
# What each cause points at: a throttled clock at one GPU, network or storage at the node.
_PLACED_BY = {"throttled-clock": "gpu", "network": "node", "storage": "node"}


@dataclass(frozen=True)
class Suspect:
    """A node (``gpu`` None) or a GPU behind in several Jobs for one cause.

    Attributes:
        node, gpu: where.
        cause: throttled-clock, network or storage.
        jobs: Jobs whose straggler it was.
        expected: how many the cluster's rate of that cause predicts for its peers.
        p_value: the exact binomial upper tail; ``threshold`` the Holm level it passed.
    """

    node: str
    gpu: str | None
    cause: str
    jobs: int
    expected: float
    p_value: float
    threshold: float

    @property
    def message(self) -> str:
        where = f"GPU {self.gpu} on {self.node}" if self.gpu is not None else f"node {self.node}"
        return f"{where} is the {self.cause} straggler of {self.jobs} Jobs ({self.expected:.2g} expected by chance)"


def find_suspects(
    jobs: Sequence[JobDigest], stragglers: Sequence[Straggler], *, alpha: float = 0.01, min_jobs: int = MIN_JOBS
) -> list[Suspect]:
    """Nodes and GPUs that lag in more Jobs than chance allows, strongest first.

    Args:
        jobs: the digests the stragglers were found in (their peers are the exposure).
        stragglers: every straggler found in them.
        alpha: the family-wise error rate.
        min_jobs: the fewest Jobs a suspect lagged in.
    """
    gpu_peers: Counter[tuple[str, str | None]] = Counter()
    pod_peers: Counter[tuple[str, str | None]] = Counter()
    for job in jobs:
        if len(job.peers) < 2:
            continue
        pods = {(peer.pod, peer.node) for peer in job.peers}
        for _, node in pods:
            if node is not None:
                pod_peers[(node, None)] += 1
        for peer in job.peers:
            if peer.node is not None and peer.gpu is not None:
                gpu_peers[(peer.node, peer.gpu)] += 1
    flagged: Counter[tuple[str, str | None, str]] = Counter()
    for s in stragglers:
        kind = _PLACED_BY.get(s.cause)
        if s.node is None or kind is None or (kind == "gpu" and s.gpu is None):
            continue
        flagged[(s.node, s.gpu if kind == "gpu" else None, s.cause)] += 1
    tests: list[tuple[float, Suspect]] = []
    for cause, kind in _PLACED_BY.items():
        exposure = gpu_peers if kind == "gpu" else pod_peers
        total = sum(exposure.values())
        hits = sum(v for (_, _, c), v in flagged.items() if c == cause)
        rate = hits / total if total else 0.0
        for (node, gpu), n in exposure.items():
            if n < min_jobs:
                continue
            k = flagged.get((node, gpu, cause), 0)
            p = _binomial_upper_tail(k, n, rate) if k >= min_jobs else 1.0
            tests.append((p, Suspect(node, gpu, cause, k, round(n * rate, 3), p, 0.0)))
    tests.sort(key=lambda t: t[0])
    found: list[Suspect] = []
    for i, (p, suspect) in enumerate(tests):
        threshold = alpha / (len(tests) - i)
        if p > threshold:
            break
        found.append(Suspect(**{**suspect.__dict__, "threshold": threshold}))
    return found


def _binomial_upper_tail(k: int, n: int, rate: float) -> float:
    """P(X >= k) for X ~ Binomial(n, rate)."""
    if rate <= 0.0:
        return 0.0 if k > 0 else 1.0
    if rate >= 1.0:
        return 1.0
    log_r, log_q = math.log(rate), math.log1p(-rate)
    terms = [
        math.lgamma(n + 1) - math.lgamma(x + 1) - math.lgamma(n - x + 1) + x * log_r + (n - x) * log_q
        for x in range(k, n + 1)
    ]
    return min(1.0, sum(math.exp(t) for t in terms))
