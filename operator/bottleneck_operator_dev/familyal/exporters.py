"""The exporters' series, derived from the per-second activity with each exporter's semantics.

Counters are cumulative (with an offset from before the Job and a restart that resets them where
drawn), gauges are the value at the sample, and dcgm-exporter's profiling fields are the average
over its collection interval, the DEV fields the value at the collection; a scrape repeats the
latest collection. This module holds the shared pieces and dcgm-exporter; :mod:`.hostexp` the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyal.activity import Activity, Timeline
from bottleneck_operator_dev.familyal.draws import Setup
from bottleneck_operator_dev.familyal.observe import Observation

F = npt.NDArray[np.float64]
D, P = "DCGM_FI_DEV_", "DCGM_FI_PROF_"
IDLE_POWER_SHARE = 0.14  # idle draw as a share of TDP (modelling choice, see the doc)


@dataclass(frozen=True)
class Series:
    """One exporter's series for one pod, at its scrape times.

    Attributes:
        exporter: "dcgm", "node", "cadvisor", "ksm" or "sidecar".
        times: scrape times, strictly increasing (n,).
        gauges: metric (with labels, ``name{label="v"}``) -> values, (n,) or per GPU (G, n).
        counters: the same for counters.
        reset_at: the restart that reset the counters, or None.
    """

    exporter: str
    times: F
    gauges: dict[str, F] = field(default_factory=dict)
    counters: dict[str, F] = field(default_factory=dict)
    reset_at: float | None = None


@dataclass(frozen=True)
class Bins:
    """Reads per-second bins at arbitrary times."""

    bin0: float
    nbins: int

    def cum(self, x: F, t: F) -> F:
        """Running total of ``x`` (nbins, ...) at times t, linear inside a bin: shape (len(t), ...)."""
        c = np.concatenate([np.zeros((1, *x.shape[1:])), np.cumsum(x, axis=0)])
        pos = np.clip(np.asarray(t) - self.bin0, 0.0, float(self.nbins))
        i = np.minimum(pos.astype(np.int64), self.nbins - 1)
        frac = (pos - i).reshape(-1, *([1] * (x.ndim - 1)))
        res: F = c[i] + (c[i + 1] - c[i]) * frac
        return res

    def mean(self, x: F, t: F, width: float) -> F:
        """Average per second of ``x`` over (t - width, t]."""
        return (self.cum(x, t) - self.cum(x, t - width)) / width

    def at(self, x: F, t: F) -> F:
        """The last complete bin before t (an instantaneous reading)."""
        i = np.clip((np.asarray(t) - self.bin0).astype(np.int64) - 1, 0, self.nbins - 1)
        res: F = x[i]
        return res


def scrape_times(rng: np.random.Generator, t0: float, t1: float, si: float, miss: float, reset: float | None) -> F:
    """Scrape times of one target from t0 to t1: a phase, small jitter, missed scrapes, a restart gap."""
    base = t0 + float(rng.uniform(0.0, si)) + np.arange(0.0, max(t1 - t0, 0.0), si)
    t = base + rng.uniform(-0.05, 0.05, base.size) * min(si, 1.0)
    keep = rng.random(t.size) >= miss
    if reset is not None:
        keep &= ~((t >= reset) & (t < reset + si))
    out: F = t[keep & (t <= t1)]
    return out


def counter(bins: Bins, rate: F, t: F, offset: float, reset: float | None) -> F:
    """A counter from its per-second increments: cumulative, offset, reset to 0 at a restart."""
    c = bins.cum(rate, t)
    if reset is None:
        res: F = c + offset
        return res
    at_reset = bins.cum(rate, np.array([reset]))[0]
    after = (t >= reset).reshape(-1, *([1] * (rate.ndim - 1)))
    res2: F = np.where(after, c - at_reset, c + offset)
    return res2


def _gpu_power_clock(s: Setup, act: Activity, ranks: slice, rng: np.random.Generator) -> dict[str, F]:
    """Per-GPU, per-second power, SM clock and clock-event reasons (nbins, G)."""
    board, d = s.cluster.board, s.disturbances
    g = {k: np.clip(v[:, ranks], 0.0, None) for k, v in act.gpu.items()}
    busy = np.clip(g["busy_t"], 0.0, 1.0)
    clk_busy = np.where(g["busy_t"] > 1e-6, g["clock_t"] / np.maximum(g["busy_t"], 1e-9), 1.0)
    clock = np.clip(busy * clk_busy + (1.0 - busy) * 0.97, 0.1, 1.0) * board.max_clock_mhz
    clock = clock * (1.0 - np.abs(rng.normal(0.0, 0.01, clock.shape)))
    load = 0.15 * np.clip(g["kern"], 0, 1) + 0.6 * np.clip(g["sm"], 0, 1) + 0.25 * np.clip(g["dram"], 0, 1) / 0.8
    idle = IDLE_POWER_SHARE * board.tdp_w
    demand = idle + (board.tdp_w - idle) * 1.15 * load * rng.lognormal(0.0, 0.03, load.shape)
    limit = d.power_cap * board.tdp_w
    power = np.minimum(demand, limit * rng.uniform(0.97, 1.0, load.shape))
    reasons = np.where(demand >= limit, 0x4, 0) | np.where(np.clip(g["kern"], 0, 1) < 0.05, 0x1, 0)
    lo = ranks.start or 0
    if d.straggler is not None and lo <= d.straggler < (ranks.stop or 0):
        j = d.straggler - lo
        slowed = clk_busy[:, j] < 0.85 * np.median(clk_busy)
        bit = {"thermal": 0x20 | 0x40, "power-brake": 0x80, "slow-board": 0x8}[d.straggler_kind]
        reasons[:, j] |= np.where(slowed | (d.straggler_kind == "slow-board"), bit, 0)
    return {"power": power, "clock": clock, "reasons": reasons.astype(np.float64)}


def _fb(s: Setup, rng: np.random.Generator, bins: Bins, job_start: float, warmup: float) -> tuple[F, F]:
    """FB_USED and FB_FREE in MiB per second and GPU: the caching allocator holds 85-98 % once loaded."""
    gpus = s.cluster.gpus
    total = s.cluster.board.mem_gb * 1e9 / (1024.0 * 1024.0)
    target = rng.uniform(0.85, 0.98, gpus) * total
    t = bins.bin0 + np.arange(bins.nbins) + 0.5
    ramp = np.clip((t - job_start) / max(warmup, 1.0), 0.0, 1.0)[:, None]
    used = np.round(ramp * target[None, :] + (t >= job_start)[:, None] * 500.0)
    reserved = np.round(0.006 * total)
    return used, np.maximum(total - used - reserved, 0.0)


def dcgm_series(s: Setup, obs: Observation, act: Activity, tl: Timeline, pod: int, rng: np.random.Generator) -> Series:
    """dcgm-exporter's series of one pod's GPUs (values per GPU, (G, n))."""
    bins = Bins(tl.bin0, tl.nbins)
    g0 = pod * s.cluster.gpus
    ranks = slice(g0, g0 + s.cluster.gpus)
    reset = obs.resets.get("dcgm")
    end = tl.bin0 + tl.nbins - 1
    t = scrape_times(rng, tl.job_start + 2.0, end, obs.scrape["dcgm"], obs.miss, reset)
    col = obs.dcgm_collect
    phase = float(rng.uniform(0.0, col))
    # The latest collection at or before each scrape: a scrape faster than collection repeats it.
    ct = phase + np.floor((t - phase) / col) * col
    ct = np.maximum(ct, tl.job_start)
    g = {k: v[:, ranks] for k, v in act.gpu.items()}
    pc = _gpu_power_clock(s, act, ranks, rng)
    used, free = _fb(s, rng, bins, tl.job_start, tl.edges[0] - tl.job_start)

    def inst(x: F) -> F:
        return bins.at(x, ct).T

    def avg(x: F) -> F:
        return np.clip(bins.mean(x, ct, col).T, 0.0, None)

    gauges = {
        f"{D}GPU_UTIL": np.round(100.0 * np.clip(inst(g["kern"]), 0.0, 1.0)),
        f"{D}MEM_COPY_UTIL": np.round(100.0 * np.clip(1.2 * inst(g["dram"]) + 0.05 * inst(g["kern"]), 0.0, 1.0)),
        f"{D}FB_USED": inst(used),
        f"{D}FB_FREE": inst(free),
        f"{D}POWER_USAGE": np.round(inst(pc["power"]), 3),
        f"{D}SM_CLOCK": np.round(inst(pc["clock"])),
        # typed a counter, but an instantaneous rate over all lanes (KB/s per dcgm-exporter issue #472)
        f"{D}NVLINK_BANDWIDTH_TOTAL": 2.0 * inst(g["nvlink"]) / 1e3,
        f"{D}XID_ERRORS": np.full((s.cluster.gpus, t.size), float(obs.xid)),
    }
    if obs.field_set != "dev-only":
        gauges |= {
            f"{P}GR_ENGINE_ACTIVE": np.clip(avg(g["kern"]), 0.0, 1.0),
            f"{P}PIPE_TENSOR_ACTIVE": np.clip(avg(g["tensor"]), 0.0, 1.0),
            f"{P}DRAM_ACTIVE": np.clip(avg(g["dram"]), 0.0, 1.0),
            f"{P}PCIE_TX_BYTES": avg(g["pcie_tx"]),
            f"{P}PCIE_RX_BYTES": avg(g["pcie_rx"]),
        }
    if obs.field_set == "full":
        gauges |= {
            f"{P}SM_ACTIVE": np.clip(avg(g["sm"]), 0.0, 1.0),
            f"{P}SM_OCCUPANCY": np.clip(avg(g["occ"]), 0.0, 1.0),
            f"{P}PIPE_FP32_ACTIVE": np.clip(avg(g["fp32"]), 0.0, 1.0),
            f"{P}PIPE_FP16_ACTIVE": np.clip(avg(g["fp16"]), 0.0, 1.0),
        }
    if obs.nvlink_prof:
        gauges |= {f"{P}NVLINK_TX_BYTES": avg(g["nvlink"]), f"{P}NVLINK_RX_BYTES": avg(g["nvlink"])}
    if obs.power_clocks:
        gauges[f"{D}POWER_MGMT_LIMIT"] = np.full(
            (s.cluster.gpus, t.size), s.disturbances.power_cap * s.cluster.board.tdp_w
        )
        gauges[f"{D}CLOCKS_EVENT_REASONS"] = inst(pc["reasons"])
    return Series("dcgm", t, gauges, {}, reset)
