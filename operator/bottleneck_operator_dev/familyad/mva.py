"""Exact mean-value analysis of a single-class closed network, vectorised over pods and time.

Reiser and Lavenberg's recursion (J. ACM 1980) for load-independent stations, with multi-server
stations approximated the way Seidmann, Schweitzer and Shalev-Oren (1987) do: a station of m
servers and demand D is a queue of demand D/m in series with a delay. Here the delay is
D/p - D/m, p being how many servers one customer spreads over, so a lone step spends D/p there
(p = m for a pod's GPUs, which work on a step in lockstep, and the delay vanishes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Solution:
    """Throughput and queue lengths of the network.

    Attributes:
        x: throughput, customers (steps) per second, shape (...).
        residence: seconds a customer spends at each station per visit, shape (K, ...).
        queue: mean customers at each station (Little's law: x * residence), shape (K, ...).
    """

    x: FloatArray
    residence: FloatArray
    queue: FloatArray


def solve(demand: FloatArray, servers: FloatArray, parallel: FloatArray, population: int) -> Solution:
    """The network's throughput and queues with ``population`` customers circulating.

    Args:
        demand: D_k, seconds of station k per customer, shape (K, ...).
        servers: m_k, shape (K, ...) (may be fractional: a CPU quota of 2.5 cores).
        parallel: p_k <= m_k, shape (K, ...).
        population: customers in the network (steps in flight), at least 1.

    Returns:
        The solution at the full population.
    """
    queue_part = demand / np.maximum(servers, 1e-12)
    delay_part = np.maximum(demand / np.maximum(parallel, 1e-12) - queue_part, 0.0)
    waiting = np.zeros_like(demand)
    x = np.zeros(demand.shape[1:])
    residence = queue_part + delay_part
    for n in range(1, max(population, 1) + 1):
        residence = queue_part * (1.0 + waiting) + delay_part
        x = n / np.maximum(residence.sum(axis=0), 1e-12)
        waiting = x * queue_part * (1.0 + waiting)  # customers at the queue part, arrival theorem's input
    return Solution(x=x, residence=residence, queue=x * residence)
