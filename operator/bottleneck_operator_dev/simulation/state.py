"""The per-scrape physical state of one job: what both outputs (exporters, windows) are rendered from."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

F = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]

EXPORTERS = ("dcgm", "node", "cadvisor", "ksm", "sidecar")
# node-exporter's cpu collector modes on Linux
CPU_MODES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
CFS_PERIODS_PER_S = 10.0  # the default CFS period is 100 ms


@dataclass
class JobState:
    """Per-scrape state of one job; rates are per second over the interval ending at each scrape.

    Attributes:
        t: scrape times of the base grid (unix seconds); exporter ``e`` samples at ``t + offsets[e]``.
        offsets: per-exporter phase of its scrapes.
        up: exporter -> (n,) whether its scrape succeeded ("node": (N, n), one row per node).
        gpu: per-GPU values, shape (P, G, n), in the exporter's units (``nvlink_total``: a rate
            in DCGM's units of 1000 KiB/s, typed a counter by dcgm-exporter).
        pod: per-pod values, shape (P, n); names ending in ``_c`` are cumulative counters.
        node: per-node values, shape (N, n) (``cpu_frac``: (N, modes, n)); ``_c`` = cumulative.
        neighbours: per-node values of the non-profiled neighbour pods, shape (N, K, n).
        pod_node: index of each pod's node.
    """

    t: F
    offsets: dict[str, float]
    up: dict[str, B]
    gpu: dict[str, F] = field(default_factory=dict)
    pod: dict[str, F] = field(default_factory=dict)
    node: dict[str, F] = field(default_factory=dict)
    neighbours: dict[str, F] = field(default_factory=dict)
    pod_node: tuple[int, ...] = ()

    def times(self, exporter: str) -> F:
        """Sample times of one exporter."""
        return self.t + self.offsets[exporter]


def cumulative(rate: F, dt: F, start: F | float = 0.0) -> F:
    """A counter from per-interval rates: ``start`` plus the running sum of rate x interval."""
    return np.asarray(start) + np.cumsum(rate * dt, axis=-1)


def rounded(values: object) -> F:
    """Values rounded to integers (exporters that publish whole percent, MiB or MHz), as float64."""
    return np.asarray(np.round(np.asarray(values, dtype=np.float64)), dtype=np.float64)
