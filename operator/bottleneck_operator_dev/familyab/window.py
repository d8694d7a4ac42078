"""A Job's contract window: every exporter of every pod and node, read over one time range.

Exporters run per node (dcgm-exporter, the kubelet's cAdvisor, node-exporter), per pod (the
collector) or once per cluster (kube-state-metrics), each on its own scrape grid. Pods on one node
share that node's node-exporter series; neighbours move them as much as the Job does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range
from bottleneck_operator.contract.signals import SIGNAL_NAMES, SIGNALS, signals_of
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.familyab.breakdown import breakdown
from bottleneck_operator_dev.familyab.config import Config, Practices
from bottleneck_operator_dev.familyab.exporters import EXACT, FloatArray, Timeline, draw_timeline, sample_exporter
from bottleneck_operator_dev.familyab.gpu_levels import Levels, Rng, gpu_levels
from bottleneck_operator_dev.familyab.host_levels import node_busy, node_levels, pod_levels, pod_use
from bottleneck_operator_dev.familyab.practices import drop_signals, families_exported, scrape_times
from bottleneck_operator_dev.familyab.stages import Stages

ORDER = {name: i for i, name in enumerate((*SIGNAL_NAMES, *(n for n in SIGNALS if n not in SIGNAL_NAMES)))}


@dataclass(frozen=True)
class Grid:
    """Where and when the window is read: evaluation times, the timeline, the sampling rules."""

    at: FloatArray
    step: float
    tl: Timeline
    prac: Practices
    dcgm_noise: float

    def scrapes(self, rng: Rng) -> FloatArray:
        """One exporter instance's scrape times over the whole timeline."""
        t0 = self.tl.t0
        return scrape_times(rng, t0, t0 + self.tl.phase.size, self.prac.scrape_s, self.prac.drop)


def by_exporter(levels: dict[str, Levels], wanted: set[str]) -> dict[str, dict[str, Levels]]:
    """The wanted signals of ``levels``, grouped by the exporter that publishes them."""
    out: dict[str, dict[str, Levels]] = {}
    for name, lev in levels.items():
        if name in wanted:
            out.setdefault(SIGNALS[name].family.exporter_name, {})[name] = lev
    return out


def jitter_pod(rng: Rng, levels: dict[str, Levels]) -> dict[str, Levels]:
    """Pods of one Job differ a little (data, placement, clocks): a few percent per pod."""
    out = {}
    for name, lev in levels.items():
        if name in EXACT:
            out[name] = lev
            continue
        scaled = lev * float(rng.uniform(0.97, 1.03))
        out[name] = np.clip(scaled, 0.0, 1.0) if SIGNALS[name].unit == "ratio" else scaled
    return out


def oom_counter(grid: Grid, times: FloatArray, resets: tuple[float, ...]) -> FloatArray:
    """rate() of the pod cgroup's oom_kill count (memory.events survives container restarts)."""
    tl = grid.tl
    counts = np.searchsorted(np.asarray(tl.kills, dtype=np.float64), times - tl.t0, side="right").astype(np.float64)
    for reset in resets:  # a restarted collector counts from its own start
        after = times - tl.t0 >= reset
        if after.any() and int(np.argmax(after)) > 0:
            counts[after] -= counts[int(np.argmax(after)) - 1]
    prac = grid.prac
    sampler = Sampler(
        times,
        grid.at,
        range_seconds=rate_range(grid.step, prac.scrape_s),
        window=gauge_window(grid.step, prac.scrape_s),
    )
    return sampler.rate(counts)


def pod_signals(
    rng: Rng, grid: Grid, groups: dict[str, dict[str, Levels]], node_scrapes: dict[str, FloatArray], wanted: set[str]
) -> dict[str, FloatArray]:
    """All exporters' signals of one pod (node-exporter's come from its node, elsewhere)."""
    prac, tl = grid.prac, grid.tl
    out: dict[str, FloatArray] = {}
    if "dcgm" in groups:
        out |= sample_exporter(
            rng,
            tl,
            groups["dcgm"],
            node_scrapes["dcgm"],
            grid.at,
            grid.step,
            prac,
            collect=prac.dcgm_collect_s,
            noise=grid.dcgm_noise,
        )
    if "cadvisor" in groups:
        out |= sample_exporter(
            rng, tl, groups["cadvisor"], node_scrapes["cadvisor"], grid.at, grid.step, prac, container=True
        )
    if "ksm" in groups:
        out |= sample_exporter(rng, tl, groups["ksm"], node_scrapes["ksm"], grid.at, grid.step, prac)
    if "sidecar" in groups or "sc_oom_kills" in wanted:
        times = grid.scrapes(rng)
        resets = (float(rng.uniform(0.0, tl.phase.size)),) if prac.sidecar_reset else ()
        out |= sample_exporter(rng, tl, groups.get("sidecar", {}), times, grid.at, grid.step, prac, resets=resets)
        if "sc_oom_kills" in wanted:
            out["sc_oom_kills"] = oom_counter(grid, times, resets)
    return out


def clamp_shares(signals: dict[str, FloatArray]) -> dict[str, FloatArray]:
    """Shares of time held to [0, 1]: rate()'s extrapolation over jittered scrapes can overshoot a
    counter of seconds per second by a little, which no reader takes for more than all the time."""
    return {
        name: np.clip(values, 0.0, 1.0) if SIGNALS[name].unit == "ratio" else values for name, values in signals.items()
    }


def node_names(rng: Rng, cfg: Config) -> list[str]:
    """Names of the Job's nodes, as a cloud or on-premises cluster would give them."""
    pool = f"gpu-{cfg.gpu.key}"
    return [f"{pool}-{int(rng.integers(0, 16**5)):05x}" for _ in range(cfg.nodes)]


def job_window(
    rng: Rng, cfg: Config, st: Stages, prac: Practices, namespace: str, job: str, start: float, step: float
) -> tuple[JobWindow, Timeline]:
    """The window of ``cfg``'s pods from ``start``, every ``step`` seconds, long enough for at least
    25 scrape intervals, and the timeline it was read from."""
    si = prac.scrape_s
    n = max(int(np.ceil(25 * si / step)), 40) + int(rng.integers(0, 20))
    at = start + step * np.arange(n, dtype=np.float64)
    t0 = start - rate_range(step, si) - 2 * si
    tl = draw_timeline(rng, cfg, st, t0, int(np.ceil(float(at[-1]) - t0)) + 2)
    grid = Grid(at, step, tl, prac, 0.05 if cfg.gpu.prof == "multiplexed" else 0.02)
    wanted = drop_signals(cfg, {name for f in families_exported(cfg, prac) for name in signals_of(f, context=True)})
    b = breakdown(cfg, st)
    use = pod_use(cfg, st, b, rng)
    busy, _ = node_busy(cfg, use)
    base_pod = gpu_levels(cfg, st, b, prac, rng) | pod_levels(cfg, st, b, use, busy)
    base_node = node_levels(cfg, st, b, use, base_pod, rng)
    ksm = grid.scrapes(rng)
    pods: list[PodWindow] = []
    for node_index, node in enumerate(node_names(rng, cfg)):
        scrapes = {"dcgm": grid.scrapes(rng), "cadvisor": grid.scrapes(rng), "ksm": ksm}
        node_groups = by_exporter(jitter_pod(rng, base_node), wanted)
        node_series = sample_exporter(rng, tl, node_groups.get("node", {}), grid.scrapes(rng), at, step, prac)
        for k in range(node_index * cfg.pods_per_node, min(cfg.pods, (node_index + 1) * cfg.pods_per_node)):
            groups = by_exporter(jitter_pod(rng, base_pod), wanted)
            signals = clamp_shares(pod_signals(rng, grid, groups, scrapes, wanted) | node_series)
            names = sorted(signals, key=lambda name: ORDER[name])
            block = SignalBlock(names, np.stack([signals[name] for name in names]))
            pods.append(
                PodWindow(f"{job}-worker-{k}", node, cfg.gpu.model_name, cfg.gpus_per_pod, block, cfg.neighbours)
            )
    families, coverage = families_and_coverage(pods)
    notes = ("no PROF fields",) if not any(f.value.startswith("dcgm_prof") for f in families) else ()
    quality = DataQuality(families, coverage, si, notes)
    window = JobWindow(namespace, job, start, float(at[-1]), step, at, tuple(pods), quality)
    return window, tl
