"""Periodic activity profiles and pod timelines: what every counter integrates and every gauge averages.

A :class:`Profile` is one steady-state cycle of recorded steps cut into bins, one row per channel,
each bin holding the channel's mean level there (a busy share, a byte rate, cores, ...). A
:class:`PodTimeline` strings profiles into segments (start-up, training regimes, checkpoints);
integrals over any interval follow from the profiles' cumulative sums, so a counter read at a
scrape is exactly the integral of the timeline up to that instant and a gauge averaged over a
sample period is the integral over that period divided by its length.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyag.links import CommCosts
from bottleneck_operator_dev.familyag.timeline import Trace

FloatArray = npt.NDArray[np.float64]

GPU_CHANNELS: tuple[str, ...] = (
    "busy", "sm", "occ", "tensor", "dram", "fp16", "fp32", "memutil", "pcie_rx", "pcie_tx", "nvl_tx", "nvl_rx",
)  # fmt: skip
HOST_CHANNELS: tuple[str, ...] = (
    "cpu", "sys", "fs_rd", "pod_rx", "pod_tx", "psi_cpu", "psi_io", "psi_io_full", "psi_mem", "psi_mem_full",
    "majflt", "swapin", "throttled", "periods", "running", "dstate", "busyp",
    "n_busy", "n_sys", "n_iowait", "n_disk_rd", "n_disk_ops", "n_disk_busy", "n_majflt", "n_rx", "n_tx",
    "n_psi_cpu", "n_psi_io", "n_psi_io_full", "n_psi_mem", "n_psi_mem_full", "ib_rx", "ib_tx",
)  # fmt: skip
CHANNELS: tuple[str, ...] = GPU_CHANNELS + HOST_CHANNELS
ROW: dict[str, int] = {name: i for i, name in enumerate(CHANNELS)}
BINS = 96


def _binned(spans: Sequence[tuple[float, float, float]], start: float, end: float) -> FloatArray:
    """Mean level of one channel's intervals in each of :data:`BINS` bins of [start, end)."""
    if not spans:
        return np.zeros(BINS)
    edges = np.linspace(start, end, BINS + 1)
    arr = np.asarray(spans, dtype=np.float64)
    s, e, v = arr[:, 0:1], arr[:, 1:2], arr[:, 2:3]
    cum = (np.clip(edges[None, :] - s, 0.0, e - s) * v).sum(axis=0)
    out: FloatArray = np.diff(cum) / ((end - start) / BINS)
    return out


def gpu_levels(trace: Trace, comm: CommCosts, per_node: int) -> FloatArray:
    """The GPU channels (:data:`GPU_CHANNELS`) of one recorded trace, binned over its cycle.

    Args:
        trace: the recorded steps of one pod.
        comm: the Job's collectives (which links their bytes take).
        per_node: GPUs per pod.

    Returns:
        Shape (len(GPU_CHANNELS), BINS).
    """
    b = {name: _binned(trace.spans.get(name, []), trace.start, trace.end) for name in (
        "busy_k", "busy_c", "sm", "sm_c", "occ", "tensor", "dram", "fp16", "fp32", "h2d", "gdr", "nvl", "p2p",
    )}  # fmt: skip
    pcie_peer = b["p2p"] + b["gdr"]
    rows = {
        "busy": np.maximum(b["busy_k"], b["busy_c"]),
        "sm": np.minimum(1.0, b["sm"] + b["sm_c"]),
        "occ": b["occ"],
        "tensor": b["tensor"],
        "dram": np.minimum(0.95, b["dram"] + 0.05 * b["busy_c"]),
        "fp16": b["fp16"],
        "fp32": b["fp32"],
        "memutil": np.minimum(1.0, 1.3 * b["dram"] + 0.1 * b["busy_k"] + 0.25 * b["busy_c"] + 0.1 * (b["h2d"] > 0)),
        "pcie_rx": b["h2d"] + pcie_peer + 2e6,
        "pcie_tx": pcie_peer + 1e6,
        "nvl_tx": b["nvl"],
        "nvl_rx": b["nvl"],
    }
    return np.stack([rows[name] for name in GPU_CHANNELS])


@dataclass(frozen=True)
class Profile:
    """One periodic cycle of every channel.

    Attributes:
        period: the cycle's length, seconds.
        levels: shape (len(CHANNELS), BINS), mean level per bin.
        cum: shape (len(CHANNELS), BINS + 1), the integral from the cycle's start to each bin edge.
    """

    period: float
    levels: FloatArray
    cum: FloatArray

    @classmethod
    def of(cls, period: float, gpu: FloatArray, host: FloatArray) -> Profile:
        """A profile from binned GPU rows and constant host levels (one per :data:`HOST_CHANNELS`)."""
        levels = np.concatenate([gpu, np.repeat(host[:, None], BINS, axis=1)], axis=0)
        width = period / BINS
        cum = np.concatenate([np.zeros((levels.shape[0], 1)), np.cumsum(levels, axis=1) * width], axis=1)
        return cls(period, levels, cum)

    def integral(self, rows: npt.NDArray[np.intp], x: FloatArray) -> FloatArray:
        """The integral of the given rows from 0 to each ``x`` (seconds, any size) of the periodic extension."""
        cycles = np.floor(x / self.period)
        pos = (x / self.period - cycles) * BINS
        idx = np.minimum(pos.astype(np.intp), BINS - 1)
        rem = pos - idx
        width = self.period / BINS
        lv, cm = self.levels[rows], self.cum[rows]
        out: FloatArray = cycles[None, :] * cm[:, BINS : BINS + 1] + cm[:, idx] + rem[None, :] * lv[:, idx] * width
        return out


@dataclass(frozen=True)
class Segment:
    """A stretch of a pod's life that repeats one profile, its cycle stretched by ``scale``, entered at
    ``phase`` seconds into the (stretched) cycle. Stretching keeps every level and lengthens the cycle."""

    start: float
    end: float
    profile: Profile
    phase: float
    scale: float = 1.0


class PodTimeline:
    """A pod's segments, in order and back to back; nothing (all levels 0) before the first.

    Integrals are evaluated one profile at a time over all of its segments: a stretched profile's
    integral is ``scale * F(x / scale)`` of the unstretched one.
    """

    def __init__(self, segments: Sequence[Segment]) -> None:
        self.segments = tuple(segments)
        self.starts = np.asarray([s.start for s in self.segments])
        self.lengths = np.asarray([s.end - s.start for s in self.segments])
        self.phases = np.asarray([s.phase for s in self.segments])
        self.scales = np.asarray([s.scale for s in self.segments])
        profiles: dict[int, Profile] = {}
        which = []
        for seg in self.segments:
            profiles.setdefault(id(seg.profile), seg.profile)
            which.append(list(profiles).index(id(seg.profile)))
        self.profiles = tuple(profiles.values())
        self.which = np.asarray(which, dtype=np.intp)

    def _within(self, idx: npt.NDArray[np.intp], seg: npt.NDArray[np.intp], local: FloatArray) -> FloatArray:
        """Integral from each segment's entry phase over ``local`` seconds, for segments ``seg``."""
        out = np.zeros((idx.size, seg.size))
        for k, profile in enumerate(self.profiles):
            mask = self.which[seg] == k
            if not mask.any():
                continue
            sc, ph = self.scales[seg[mask]], self.phases[seg[mask]]
            at = profile.integral(idx, (ph + local[mask]) / sc)
            base = profile.integral(idx, ph / sc)
            out[:, mask] = (at - base) * sc[None, :]
        return out

    def cumulative(self, rows: Sequence[str], t: FloatArray) -> FloatArray:
        """The integral of each named channel from the first segment to each time in ``t``.

        Returns:
            Shape (len(rows), len(t)).
        """
        idx = np.asarray([ROW[r] for r in rows], dtype=np.intp)
        every = np.arange(len(self.segments), dtype=np.intp)
        totals = self._within(idx, every, self.lengths)
        before = np.concatenate([np.zeros((idx.size, 1)), np.cumsum(totals, axis=1)], axis=1)
        seg = np.searchsorted(self.starts, t, side="right") - 1
        inside = seg >= 0
        seg_c = np.clip(seg, 0, len(self.segments) - 1)
        local = np.clip(t - self.starts[seg_c], 0.0, self.lengths[seg_c])
        out: FloatArray = np.where(inside[None, :], before[:, seg_c] + self._within(idx, seg_c, local), 0.0)
        return out

    def mean(self, rows: Sequence[str], t: FloatArray, width: float) -> FloatArray:
        """Each channel's mean level over the ``width`` seconds ending at each time in ``t``."""
        both = self.cumulative(rows, np.concatenate([t, t - width]))
        out: FloatArray = (both[:, : t.size] - both[:, t.size :]) / width
        return out
