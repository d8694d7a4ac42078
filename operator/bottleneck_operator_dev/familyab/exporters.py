"""From per-phase levels to the samples exporters publish and the window Prometheus answers.

A Job's timeline is drawn second by second (training, checkpoints, evaluations, restarts after
OOM kills). Each exporter is scraped on its own grid: counters accumulate what each second added
(with jitter per scrape interval, and from zero again when a container restarts), gauges report the
phase at the scrape instant (dcgm-exporter the value it collected last). The window is then read
exactly as the contract's sampling says: ``rate()`` of counters, ``last_over_time`` of gauges.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range
from bottleneck_operator.contract.signals import SIGNALS, Kind
from bottleneck_operator_dev.familyab.breakdown import CKPT, DOWN, EVAL, PHASES
from bottleneck_operator_dev.familyab.config import Config, Practices
from bottleneck_operator_dev.familyab.gpu_levels import Levels, Rng
from bottleneck_operator_dev.familyab.stages import Stages

FloatArray = npt.NDArray[np.float64]

# Signals whose value is exact (a configuration, a count of CPUs, a code): no jitter.
EXACT = {"node_cpus", "power_limit_w", "cpu_limit_cores", "mem_limit_bytes", "xid_code", "node_swap_used_frac"}
# Counted things, reported as integers.
COUNTS = {"sc_procs_running", "sc_procs_iowait", "sc_procs_busy"}


@dataclass(frozen=True)
class Timeline:
    """The Job's phase each second from ``t0``, and when the OOM killer struck (seconds from ``t0``)."""

    t0: float
    phase: npt.NDArray[np.int8]
    kills: tuple[float, ...]
    restarts_end: tuple[float, ...]

    def cumulative(self, times: FloatArray) -> FloatArray:
        """Seconds spent in each phase from ``t0`` to each time: shape (PHASES, len(times))."""
        grid = np.arange(self.phase.size + 1, dtype=np.float64)
        rel = np.clip(times - self.t0, 0.0, float(self.phase.size))
        out = np.empty((PHASES, times.size))
        for p in range(PHASES):
            cum = np.concatenate([[0.0], np.cumsum(self.phase == p)])
            out[p] = np.interp(rel, grid, cum)
        return out

    def at(self, times: FloatArray) -> npt.NDArray[np.int64]:
        """The phase at each time."""
        idx = np.clip((times - self.t0).astype(np.int64), 0, self.phase.size - 1)
        return self.phase[idx].astype(np.int64)


def _mark(phase: npt.NDArray[np.int8], rng: Rng, every: float, length: float, value: int) -> None:
    """Set ``value`` over ``length`` seconds once every ``every`` seconds, from a random offset."""
    if every <= 0 or length <= 0:
        return
    for start in np.arange(rng.uniform(0.0, every), phase.size, every):
        phase[int(start) : int(start + length)] = value


def draw_timeline(rng: Rng, cfg: Config, st: Stages, t0: float, seconds: int) -> Timeline:
    """Checkpoints, evaluations and OOM-kill restarts laid over ``seconds`` of training."""
    phase = np.zeros(seconds, dtype=np.int8)
    _mark(phase, rng, cfg.ckpt_every_s, st.flows.ckpt_s, CKPT)
    _mark(phase, rng, cfg.eval_every_s, cfg.eval_s, EVAL)
    kills: list[float] = []
    ends: list[float] = []
    every, restart = st.flows.oom_every_s, st.flows.restart_s
    if every > 0:
        t = float(rng.uniform(0.0, every))
        while t < seconds:
            kills.append(t)
            phase[int(t) : int(t + restart)] = DOWN
            ends.append(t + restart)
            t += restart + every * float(rng.uniform(0.7, 1.3))
    return Timeline(t0, phase, tuple(kills), tuple(ends))


def gauge_samples(rng: Rng, name: str, levels: Levels, phases: npt.NDArray[np.int64], noise: float) -> FloatArray:
    """A gauge's samples at instants in the given phases, with the exporter's jitter."""
    values = levels[phases]
    if name in EXACT:
        return values.copy()
    if name in COUNTS:
        return rng.poisson(np.maximum(values, 0.0)).astype(np.float64)
    if SIGNALS[name].unit == "ratio":
        return np.clip(values + rng.normal(0.0, noise, values.size) * (values > 0), 0.0, 1.0)
    return values * rng.lognormal(0.0, 0.04, values.size)


def counter_samples(rng: Rng, name: str, levels: Levels, cum: FloatArray, base: float) -> FloatArray:
    """A counter's samples: per-phase rates times seconds in each phase, jittered per interval.

    Counters of shares of time (pressure, CPU modes, throttled periods) never advance faster than
    the wall clock, so their rate stays within [0, 1].
    """
    values = levels @ cum
    steps = np.diff(values, prepend=values[:1]) * rng.lognormal(0.0, 0.06, values.size)
    if SIGNALS[name].unit == "ratio":
        wall = np.diff(cum.sum(axis=0), prepend=cum.sum(axis=0)[:1])
        steps = np.minimum(steps, wall)
    return base + np.cumsum(steps)


def restart_counters(values: FloatArray, times: FloatArray, t0: float, ends: tuple[float, ...]) -> FloatArray:
    """A counter that starts again from zero at each of ``ends`` (seconds from ``t0``): a restarted
    container, or a collector that counts from its own start."""
    out = values.copy()
    for end in ends:
        after = times - t0 >= end
        first = int(np.argmax(after))
        if after.any() and first > 0:
            out[after] = out[after] - out[first - 1]
    return out


def sample_exporter(
    rng: Rng,
    tl: Timeline,
    levels: dict[str, Levels],
    times: FloatArray,
    at: FloatArray,
    step: float,
    prac: Practices,
    *,
    container: bool = False,
    collect: float = 0.0,
    noise: float = 0.02,
    resets: tuple[float, ...] = (),
) -> dict[str, FloatArray]:
    """One exporter's signals for one pod (or node), read over the window as Prometheus would.

    ``collect`` > 0: the exporter publishes what it collected last on its own grid (dcgm-exporter);
    ``container``: series of the trainer container, absent while it is down and reset after;
    ``resets``: other times (seconds from the timeline's start) the exporter's counters restart.
    """
    if container:
        times = times[tl.at(times) != DOWN]
    sampler = Sampler(
        times, at, range_seconds=rate_range(step, prac.scrape_s), window=gauge_window(step, prac.scrape_s)
    )
    instants = times
    if collect > 0:  # the latest collection at or before each scrape
        offset = float(rng.uniform(0.0, collect))
        instants = np.floor((times - tl.t0 - offset) / collect) * collect + tl.t0 + offset
    # One value per collection: a scrape between two collections repeats the cached value.
    unique, inverse = np.unique(instants, return_inverse=True)
    phases = tl.at(unique)
    cum = tl.cumulative(times)
    out: dict[str, FloatArray] = {}
    for name, lev in levels.items():
        if SIGNALS[name].kind is Kind.COUNTER:
            values = counter_samples(rng, name, lev, cum, float(rng.uniform(1e3, 1e7)) * max(lev.max(), 1e-3))
            if container and tl.restarts_end:
                values = restart_counters(values, times, tl.t0, tl.restarts_end)
            if resets:
                values = restart_counters(values, times, tl.t0, resets)
            out[name] = sampler.rate(values)
        else:
            out[name] = sampler.last(gauge_samples(rng, name, lev, phases, noise)[inverse])
    return out
