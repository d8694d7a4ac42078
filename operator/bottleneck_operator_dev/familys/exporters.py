"""What the exporters show: every signal derived from the painted timeline, then sampled as Prometheus would.

The timeline gives, per tick, how many intervals of each kind are open. From it:

- each quantity an exporter publishes is a per-tick *rate* (busy units, bytes/s, cores, stalled
  tasks); its running integral is a counter, its average over a span is what a sampling gauge reports;
- dcgm-exporter reports, at a scrape, the value it collected last (every ``collect`` seconds, on its
  own phase): profiling fields averaged over its collect interval, NVML's ``GPU_UTIL`` and power over
  about one second before the collection, the SM clock at that instant;
- counters (CPU seconds, bytes, PSI stall seconds, faults, CFS periods) are the integral up to the
  scrape, from an offset (the exporter ran before the window) and back to zero after a restart;
- the window's values come from the contract's :class:`Sampler`, with the job's scrape intervals.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range
from bottleneck_operator_dev.familys.scenario import Scenario
from bottleneck_operator_dev.familys.timeline import TICK, Segment

FloatArray = npt.NDArray[np.float64]
PAGE = 4096.0
CFS_PERIOD = 0.1  # seconds: the kernel's default cpu.cfs_period_us


class Track:
    """A pod's window as a sequence of blocks (training stretches and pauses), each a painted segment.

    :meth:`integral` gives any channel's running integral at any time in one lookup per time.
    """

    def __init__(self, starts: FloatArray, kinds: npt.NDArray[np.int64], rates: list[dict[str, FloatArray]]) -> None:
        """Blocks start at ``starts`` (increasing); block ``j`` is segment ``kinds[j]``, whose rates are ``rates[kinds[j]]``."""
        self.starts = starts
        self._kind_index = kinds
        self._row = {name: i for i, name in enumerate(rates[0])}
        # every kind's running integral of every channel, laid end to end: one lookup serves all blocks
        cums = [
            np.concatenate(
                [np.zeros((len(r), 1)), np.cumsum(np.stack([r[nm] for nm in self._row]), axis=1) * TICK], axis=1
            )
            for r in rates
        ]
        self._size = np.array([c.shape[1] for c in cums], dtype=np.int64)
        self._offset = np.concatenate([[0], np.cumsum(self._size[:-1])]).astype(np.int64)
        self._flat = np.concatenate(cums, axis=1)
        totals = np.stack([c[:, -1] for c in cums], axis=1)[:, kinds]  # (channels, blocks)
        self._base = np.concatenate([np.zeros((len(self._row), 1)), np.cumsum(totals, axis=1)], axis=1)
        self._lookups: dict[bytes, tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], FloatArray]] = {}

    def _lookup(self, t: FloatArray) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], FloatArray]:
        """Where each time falls: its block, its tick, and how far into that tick; the same for every channel."""
        key = t.tobytes()
        hit = self._lookups.get(key)
        if hit is None:
            k = np.searchsorted(self.starts, t, side="right") - 1
            k = np.minimum(np.maximum(k, 0), len(self.starts) - 1)
            kind = self._kind_index[k]
            x = np.minimum(np.maximum((t - self.starts[k]) / TICK, 0.0), self._size[kind] - 1.0)
            i = np.maximum(np.minimum(x.astype(np.int64), self._size[kind] - 2), 0)
            hit = (k, self._offset[kind] + i, x - i)
            self._lookups[key] = hit
        return hit

    def integral(self, name: str, t: FloatArray) -> FloatArray:
        """The channel's integral from the track's start to each time in ``t`` (linear within a tick)."""
        row = self._row[name]
        flat = self._flat[row]
        k, j, frac = self._lookup(t)
        return np.asarray(self._base[row][k] + flat[j] + frac * (flat[j + 1] - flat[j]))

    def mean(self, name: str, t: FloatArray, span: float) -> FloatArray:
        """The channel's average over ``[t - span, t]``."""
        # rates are never negative; the max only removes float rounding of two large integrals
        return np.maximum((self.integral(name, t) - self.integral(name, t - span)) / span, 0.0)


def _link_rates(sc: Scenario) -> tuple[float, float]:
    """Bytes per second each GPU sends over NVLink and over the network while its collective runs."""
    g, n_all = sc.gpus_per_pod, sc.gpus_per_pod * sc.pods
    if n_all < 2:
        return 0.0, 0.0
    rate = 2 * (n_all - 1) / n_all * sc.comm_bytes / max(float(np.mean(sc.costs.collective)), 1e-9)
    inter = rate * (sc.pods - 1) / (n_all - 1) if sc.pods > 1 else 0.0
    intra = rate - inter if sc.gpu.nvlink_bps > 0 and g > 1 else 0.0
    return intra, inter


def _gpu_rates(ch: Callable[[str], FloatArray], sc: Scenario, v: dict[str, float]) -> dict[str, FloatArray]:
    """What one GPU's units do, tick by tick: kernels by kind, NCCL, copies and link bytes."""
    comp, hbm, coll = np.minimum(ch("compute"), 1), np.minimum(ch("hbm"), 1), np.minimum(ch("collective"), 1)
    kern = np.minimum(comp + hbm, 1)
    coll_only = coll * (1 - kern)  # NCCL kernels alone on the GPU (exposed communication)
    intra, inter = _link_rates(sc)
    rdma = inter if sc.fabric in ("ib", "roce") else 0.0  # GPUDirect RDMA crosses PCIe both ways
    tensor_c = sc.workload.tensor * (1.0 if sc.amp else (0.35 if sc.gpu.tflops >= 300 else 0.0))
    return {
        "any": np.minimum(kern + coll, 1),
        "sm": np.minimum(comp * v["sm_c"] + hbm * v["sm_m"] + coll_only * v["sm_nccl"], 1),
        "occ": comp * v["occ_c"] + hbm * v["occ_m"] + coll_only * 0.05,
        "tensor": comp * tensor_c,
        "dram": np.minimum(comp * v["dram_c"] + hbm * v["dram_m"] + coll_only * 0.1, 1),
        "fp16": comp * (0.08 if sc.amp else 0.0) + hbm * (0.15 if sc.amp else 0.0),
        "fp32": comp * (0.04 if sc.amp else 0.45) + hbm * (0.05 if sc.amp else 0.25),
        "copy": np.minimum(comp * v["copy_c"] + hbm * 0.9 + coll_only * 0.3, 1),
        "pcie_rx": np.minimum(ch("h2d"), 1) * sc.h2d_bps + coll * rdma + 2e6,
        "pcie_tx": ch("d2h") * 10e9 + coll * rdma + 1e6,
        "nvlink": coll * intra,
        "ib": sc.gpus_per_pod * coll * rdma,
        "tcp": sc.gpus_per_pod * coll * inter if sc.fabric == "tcp" else 0 * coll,
    }


def _host_rates(ch: Callable[[str], FloatArray], sc: Scenario, zero: FloatArray) -> dict[str, FloatArray]:
    """What the pod's host side does, tick by tick: cores, throttling, pressure, faults, reads."""
    wait, tstall = np.minimum(ch("wait"), 1), np.minimum(ch("trainer_stall"), 1)
    read, wstall, dec, ckpt_cpu = ch("read"), ch("worker_stall"), ch("decode"), ch("ckpt_cpu")
    g, st = sc.gpus_per_pod, sc.storage
    per_reader = min(st.bps / (g * sc.workers), st.stream_bps)
    reader_cpu = 0.5 if st.kind == "object-store" else 0.1
    trainer = (1 - 0.7 * wait) * (1 - ckpt_cpu)  # spins on CUDA while busy, mostly sleeps on an empty queue
    stalled = wstall + tstall
    mmap_faults = read * per_reader / PAGE if sc.workload.mmap_features else zero
    return {
        "cpu": g * (np.minimum(dec, sc.worker_cores) + read * reader_cpu + wstall * 0.05 + trainer + 0.1) + ckpt_cpu,
        # shares of a tick: a CFS period is throttled while the pod wants more than its quota
        "throttled": np.clip(g * (dec + 1) - sc.cpu_limit, 0, 1) if sc.cpu_limit else zero,
        "psi_cpu": np.clip(dec - sc.worker_cores, 0, 1),
        "psi_io_some": np.minimum(read, 1) if st.psi else zero,
        "psi_io_full": np.minimum(read, 1) * (1 - np.minimum(dec, 1)) * wait if st.psi else zero,
        "psi_mem_some": np.minimum(stalled, 1),
        "psi_mem_full": np.minimum(tstall + np.minimum(wstall, 1) * wait * (1 - np.minimum(dec, 1)), 1),
        "swapin": g * stalled * sc.swap_pages_ps,
        "majfault": g * (stalled * sc.swap_pages_ps + mmap_faults),
        "block_read": g * read * per_reader if st.block else zero,
        "net_read": g * read * per_reader if st.network else zero,
        "disk_busy": np.minimum(read, 1) if st.block else zero,
        "running": g * (np.minimum(dec, sc.worker_cores) + (1 - wait)),
        "dstate": g * read if st.psi else zero,
        "decoding": dec,
        "trainer_busy": 1 - wait,
        "system": g * (stalled * 0.6 + read * 0.05) + 0.05 * g,
    }


def rates_of(seg: Segment, sc: Scenario, kernels: dict[str, float]) -> dict[str, FloatArray]:
    """Per-tick rates of everything the exporters publish, for one pod's representative GPU and its host."""
    n = round(seg.length / TICK)
    zero = np.zeros(n)

    def ch(name: str) -> FloatArray:
        return seg.channels.get(name, zero)

    r = _gpu_rates(ch, sc, kernels) | _host_rates(ch, sc, zero)
    r["net_rx"] = r["net_read"] + r["tcp"]
    r["one"], r["zero"] = np.ones(n), zero
    return r


@dataclass(frozen=True)
class Scrapes:
    """One exporter's sample times in and before the window, and where it restarted."""

    times: FloatArray
    reset_at: float | None
    sampler: Sampler


def scrapes(
    rng: np.random.Generator, start: float, at: FloatArray, step: float, si: float, *, misses: float, resets: float
) -> Scrapes:
    """Scrape times: every ``si`` seconds on the exporter's own phase, jittered, with misses and maybe a restart."""
    first = start - rate_range(step, si) - 2 * si - float(rng.uniform(0, si))
    t = first + si * np.arange(int((at[-1] - first) / si) + 2)
    t = t + rng.normal(0, 0.004 * si, t.size)
    keep = rng.random(t.size) >= misses
    reset_at = None
    if rng.random() < resets:
        reset_at = float(rng.uniform(at[0], at[-1]))
        keep &= ~((t > reset_at) & (t < reset_at + si * float(rng.uniform(1.0, 2.0))))
    t = np.sort(t[keep & (t <= at[-1])])
    t = t[np.concatenate([[True], np.diff(t) > 1e-3])]
    return Scrapes(t, reset_at, Sampler(t, at, range_seconds=rate_range(step, si), window=gauge_window(step, si)))


def counter(track: Track, name: str, sc_: Scrapes, offset: float, scale: float = 1.0) -> FloatArray:
    """A counter's samples: offset plus the running integral, from zero again after a restart."""
    v = track.integral(name, sc_.times) * scale
    if sc_.reset_at is None:
        return v + offset
    r = float(track.integral(name, np.array([sc_.reset_at]))[0]) * scale
    return np.where(sc_.times > sc_.reset_at, v - r, v + offset)


Reader = Callable[[FloatArray], FloatArray]
