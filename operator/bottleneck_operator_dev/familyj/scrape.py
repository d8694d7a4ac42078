"""From the truth on ticks to what Prometheus holds and returns: scrapes, counters, rate() and last_over_time().

Each exporter is scraped at its own interval and phase, with a few scrapes missed. Counters are
cumulative (a random value since boot, then the integral of the rate), and restart from zero when
their exporter restarts mid-window (that scrape is lost too). dcgm-exporter's gauges hold the value
of its last collection. The window's values are then read exactly as the contract says the data
layer asks Prometheus for them (``contract.sampling``): rate() for counters, last_over_time() for
gauges.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range
from bottleneck_operator_dev.familyj.plan import Plan, Rng
from bottleneck_operator_dev.familyj.variety import Grid, Telemetry

FloatArray = npt.NDArray[np.float64]


@dataclass
class Scrape:
    """The raw samples behind a window, kept so that tests can check them.

    Attributes:
        times: exporter -> its sample times.
        counters: "exporter/quantity" -> cumulative counter samples, shape (rows, samples).
        restarts: exporter -> the time it restarted (its counters start again from zero there).
    """

    times: dict[str, FloatArray] = field(default_factory=dict)
    counters: dict[str, FloatArray] = field(default_factory=dict)
    restarts: dict[str, float] = field(default_factory=dict)


class Scraper:
    """Scrapes truth held on ticks and reads it back at the window's timestamps."""

    def __init__(self, rng: Rng, plan: Plan, grid: Grid, tel: Telemetry, step: float) -> None:
        self.rng, self.plan, self.grid, self.tel = rng, plan, grid, tel
        self.raw = Scrape()
        self._samplers: dict[str, Sampler] = {}
        self._restart_rows: dict[str, tuple[float, int]] = {}
        if tel.restart is not None:
            who, node, share = tel.restart
            at = float(grid.timestamps[0] + share * (grid.timestamps[-1] - grid.timestamps[0]))
            self._restart_rows[who] = (at, node)
            self.raw.restarts[who] = at
        for name, si in tel.scrape.items():
            times = self._times(si, name)
            self.raw.times[name] = times
            self._samplers[name] = Sampler(
                times,
                grid.timestamps,
                range_seconds=rate_range(step, si),
                window=gauge_window(step, si),
                prometheus_major=tel.prometheus_major,
            )

    def _times(self, si: float, exporter: str) -> FloatArray:
        first, last = self.grid.ticks[0], self.grid.ticks[-1] + self.grid.dt
        times = first + self.rng.uniform(0.0, si) + si * np.arange(int((last - first) / si))
        times = times + self.rng.normal(0.0, 0.003 * si, times.size)  # scrape jitter of a few ms
        keep = self.rng.random(times.size) >= self.tel.missed
        if exporter in self._restart_rows:
            at = self._restart_rows[exporter][0]
            keep &= ~((times >= at) & (times < at + si))  # the scrape during the restart is lost
        out = np.round(times[keep & (times < last)], 3)
        return np.asarray(out[np.concatenate([[True], np.diff(out) > 0])])

    def _index(self, times: FloatArray) -> FloatArray:
        return np.asarray(np.clip((times - self.grid.ticks[0]) / self.grid.dt, 0.0, self.grid.ticks.size - 1e-9))

    def counter(self, exporter: str, name: str, rate: FloatArray, node_rows: bool) -> FloatArray:
        """Window rate() of a quantity whose per-second truth is ``rate`` (rows, ticks)."""
        rate = np.maximum(np.asarray(rate, dtype=np.float64), 0.0)
        times = self.raw.times[exporter]
        pos = self._index(times)
        i = pos.astype(np.int64)
        cum = np.concatenate([np.zeros((rate.shape[0], 1)), np.cumsum(rate * self.grid.dt, axis=1)], axis=1)
        values = cum[:, i] + rate[:, i] * (pos - i) * self.grid.dt
        if exporter in self._restart_rows:
            at, node = self._restart_rows[exporter]
            owner = np.arange(rate.shape[0]) if node_rows else np.arange(rate.shape[0]) // self.plan.pods_per_node
            rows = np.flatnonzero(owner == node)
            after = times >= at
            at_pos = float(self._index(np.array([at]))[0])
            j = int(at_pos)
            base = cum[rows, j] + rate[rows, j] * (at_pos - j) * self.grid.dt
            values[np.ix_(rows, after)] -= base[:, None]
            values[np.ix_(rows, ~after)] += self._since_boot(rate[rows])[:, None]
            others = np.flatnonzero(owner != node)
            values[others] += self._since_boot(rate[others])[:, None]
        else:
            values += self._since_boot(rate)[:, None]
        self.raw.counters[f"{exporter}/{name}"] = values
        return self._samplers[exporter].rate(values)

    def _since_boot(self, rate: FloatArray) -> FloatArray:
        uptime = self.rng.uniform(3e3, 3e6, rate.shape[0])
        return np.asarray(np.round(rate.mean(axis=1) * uptime))

    def gauge(self, exporter: str, truth: FloatArray) -> FloatArray:
        """Window last_over_time() of a gauge whose truth is ``truth`` (rows, ticks)."""
        times = self.raw.times[exporter]
        if exporter == "dcgm":
            # dcgm-exporter serves the value of its last collection, not the instant of the scrape
            c = self.tel.dcgm_collect
            times = np.floor((times - self.grid.ticks[0]) / c) * c + self.grid.ticks[0]
        values = np.asarray(truth, dtype=np.float64)[:, self._index(times).astype(np.int64)]
        return self._samplers[exporter].last(values)

    def ratio(self, exporter: str, name: str, part: FloatArray, whole: FloatArray, node_rows: bool) -> FloatArray:
        """rate(part) / rate(whole) of two counters (CFS throttled / total periods)."""
        num = self.counter(exporter, f"{name}_part", part, node_rows)
        den = self.counter(exporter, f"{name}_whole", whole, node_rows)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(np.where(den > 0, np.clip(num / den, 0.0, 1.0), np.nan))
