"""Exact Mean Value Analysis of closed product-form networks (Reiser and Lavenberg, 1980).

One class of customers (the batches in flight) visits every station once per cycle. Stations are
delay stations (no queueing: each customer is served at once), single-server FCFS queueing
stations, or load-dependent stations whose service rate at ``j`` customers is ``alpha(j)`` times
the one-server rate (a pool of W loader workers capped by a CPU quota: ``alpha(j) = min(j, W, cap)``).
Load-dependent stations need the marginal queue-length distribution, which the exact recursion
carries along; that distribution also says how often a worker waits for a core (CPU pressure).

Many networks of the same shape are solved at once (a batch axis), because the label asks the same
network again with each resource's demand halved.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


class Kind(IntEnum):
    DELAY = 0
    QUEUE = 1
    LOAD_DEPENDENT = 2


@dataclass(frozen=True)
class Solution:
    """What the recursion gives at the full population.

    Attributes:
        throughput: cycles (batches) per second, shape (B,).
        residence: seconds a customer spends at each station per cycle, shape (B, K).
        queue: mean number of customers at each station, shape (B, K) (Little's law: X * residence).
        utilisation: busy servers at each station, shape (B, K) (utilisation law: X * demand).
        marginal: for each load-dependent station, P(j customers there), shape (B, L, N + 1).
    """

    throughput: FloatArray
    residence: FloatArray
    queue: FloatArray
    utilisation: FloatArray
    marginal: FloatArray


def solve(
    demands: npt.ArrayLike, kinds: tuple[Kind, ...], population: int, alpha: npt.ArrayLike | None = None
) -> Solution:
    """Solve B closed networks of the same shape by exact MVA.

    Args:
        demands: service demand per cycle at each station, seconds, shape (B, K); 0 for a station
            a network does not use.
        kinds: each station's kind, length K.
        population: customers in the network (N >= 1).
        alpha: for the load-dependent stations in order, the rate multiplier with j = 1..N
            customers, shape (B, L, N); required when there is such a station.

    Returns:
        The solution at population N.

    Raises:
        ValueError: a shape does not fit, a demand is negative or the population is below 1.
    """
    d = np.atleast_2d(np.asarray(demands, dtype=np.float64))
    b, k = d.shape
    if len(kinds) != k:
        raise ValueError(f"{k} stations but {len(kinds)} kinds")
    if population < 1:
        raise ValueError(f"the population must be at least 1, not {population}")
    if np.any(d < 0) or not np.all(np.isfinite(d)):
        raise ValueError("demands must be finite and non-negative")
    kind = np.asarray([int(x) for x in kinds])
    ld_idx = np.flatnonzero(kind == Kind.LOAD_DEPENDENT)
    n_ld, n = ld_idx.size, population
    if n_ld:
        if alpha is None:
            raise ValueError("load-dependent stations need alpha")
        a = np.asarray(alpha, dtype=np.float64)
        if a.shape != (b, n_ld, n) or np.any(a <= 0):
            raise ValueError(f"alpha must be positive with shape {(b, n_ld, n)}, not {a.shape}")
        # seconds per visit with j customers present, per unit of demand: j / alpha(j)
        per_j = np.arange(1, n + 1) / a
        d_ld = d[:, ld_idx]
    marginal = np.zeros((b, n_ld, n + 1))
    marginal[:, :, 0] = 1.0
    if n_ld:
        spent = d_ld[:, :, None] * per_j  # seconds per visit with j there: D j / alpha(j)
        grow = d_ld[:, :, None] / a  # P(j | n) = X D / alpha(j) P(j-1 | n-1)
    queue_mask = (kind == Kind.QUEUE).astype(np.float64)  # delay stations: R = D; LD: set below
    q = np.zeros((b, k))
    x = np.zeros(b)
    r = d.copy()
    for pop in range(1, n + 1):
        r = d * (1.0 + q * queue_mask)
        if n_ld:
            r[:, ld_idx] = (spent[:, :, :pop] * marginal[:, :, :pop]).sum(axis=2)
        total = r.sum(axis=1)
        x = np.where(total > 0, pop / np.maximum(total, 1e-300), 0.0)
        q = x[:, None] * r
        if n_ld:
            # the right side is built before it is stored
            marginal[:, :, 1 : pop + 1] = x[:, None, None] * grow[:, :, :pop] * marginal[:, :, :pop]
            marginal[:, :, 0] = np.maximum(1.0 - marginal[:, :, 1 : pop + 1].sum(axis=2), 0.0)
    return Solution(throughput=x, residence=r, queue=q, utilisation=x[:, None] * d, marginal=marginal)
