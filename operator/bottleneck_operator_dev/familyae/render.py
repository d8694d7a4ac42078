"""A labelled Job rendered as the contract's window: every exporter scraped, every signal read.

Targets are laid out as a cluster runs them: one dcgm-exporter, kubelet and node-exporter per node,
one kube-state-metrics for the cluster, one collector per pod. A pod's GPU, container and pod-cgroup
signals come from its own series; its node signals are its node's, shared with the Job's other pods
there and moved by the neighbours.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from bottleneck_operator.contract.sampling import rate_range
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, families_and_coverage
from bottleneck_operator_dev.familyae.activity import Activity, build_activity
from bottleneck_operator_dev.familyae.dcgm import dcgm_levels
from bottleneck_operator_dev.familyae.host import PodHost, cadvisor_levels, ksm_levels, pod_host, sidecar_levels
from bottleneck_operator_dev.familyae.label import Labelled
from bottleneck_operator_dev.familyae.node import node_levels
from bottleneck_operator_dev.familyae.readout import read_target
from bottleneck_operator_dev.familyae.scrape import Scraped, scrape, scrape_times
from bottleneck_operator_dev.familyae.stages import Arr
from bottleneck_operator_dev.familyae.telemetry import Telemetry
from bottleneck_operator_dev.familyae.timeline import Timeline, build_timeline, make_grid


@dataclass(frozen=True)
class Rendered:
    """A rendered Job: its window, the raw scraped targets (for checks), and what the render drew."""

    window: JobWindow
    targets: tuple[Scraped, ...]
    tags: tuple[str, ...]


def _restart(rng: np.random.Generator, tl: Timeline, first: float, end: float) -> tuple[Timeline, float]:
    """A trainer container restart: the Job stops for a minute or two while the ranks rejoin."""
    at = float(rng.uniform(first + 0.3 * (end - first), first + 0.8 * (end - first)))
    gone = (tl.grid.t >= at) & (tl.grid.t < at + float(rng.uniform(30.0, 120.0)))
    return replace(tl, paused=tl.paused | gone), at


class _Targets:
    """Scrape times per target, drawn once so that series of one target share them."""

    def __init__(self, rng: np.random.Generator, tele: Telemetry, first: float, last: float) -> None:
        self.rng, self.tele, self.first, self.last = rng, tele, first, last
        self.cache: dict[tuple[str, int], Arr] = {}

    def times(self, exporter: str, index: int) -> Arr:
        key = (exporter, index)
        if key not in self.cache:
            t = self.tele
            outage = t.outage == exporter and index == 0
            self.cache[key] = scrape_times(self.rng, self.first, self.last, t.si[exporter], t.miss, outage)
        return self.cache[key]


def _pod_targets(
    lab: Labelled, act: Activity, ph: PodHost, tg: _Targets, tl: Timeline, pod: int, node: int, reset: float | None
) -> list[Scraped]:
    cfg, tele, rng, grid = lab.cfg, tg.tele, tg.rng, tl.grid
    out = [
        scrape("dcgm", dcgm_levels(cfg, act, rng, tele.field_set, tele.power_clocks), grid, tg.times("dcgm", node), rng,
               tele.si["dcgm"], collect=tele.collect),
        scrape("cadvisor", cadvisor_levels(cfg, ph, tele.ksm or tele.sidecar), grid, tg.times("cadvisor", node), rng,
               tele.si["cadvisor"], resets=() if reset is None else (reset,)),
    ]  # fmt: skip
    if tele.ksm and cfg.cpu_limit > 0:
        out.append(scrape("ksm", ksm_levels(cfg, grid.size), grid, tg.times("ksm", 0), rng, tele.si["ksm"]))
    if tele.sidecar:
        out.append(
            scrape(
                "sidecar",
                sidecar_levels(cfg, ph, tele.sidecar_net),
                grid,
                tg.times("sidecar", pod),
                rng,
                tele.si["sidecar"],
            )
        )
    return out


def render(
    rng: np.random.Generator, lab: Labelled, tele: Telemetry, names: tuple[str, str, tuple[str, ...], tuple[str, ...]],
    at: Arr, step: float,
) -> Rendered:  # fmt: skip
    """Render a labelled Job on the window timestamps `at`."""
    cfg = lab.cfg
    namespace, job, pod_names, node_names = names
    slowest = max(tele.si.values())
    first = float(at[0]) - rate_range(step, slowest) - 2 * slowest
    tl = build_timeline(rng, lab, make_grid(first, float(at[-1]) + step))
    reset, restarted = None, -1
    if tele.restart:
        tl, reset = _restart(rng, tl, float(at[0]), float(at[-1]))
        restarted = int(rng.integers(0, cfg.pods))
    act = build_activity(cfg, tl)
    tg = _Targets(rng, tele, first, float(at[-1]) + 1.0)
    node_targets: dict[int, list[Scraped]] = {}
    pods, targets = [], []
    for p in range(cfg.pods):
        node = p // cfg.pods_per_node
        ph = pod_host(cfg, act, tl, rng)
        if node not in node_targets and tele.node:
            nb = np.clip(tl.neighbour * float(rng.uniform(0.7, 1.3)), 0.0, 1.0)
            levels = node_levels(cfg, ph, nb, rng, psi=tele.node_psi, ib=any(f.rdma for f in cfg.node.fabrics))
            node_targets[node] = [scrape("node", levels, tl.grid, tg.times("node", node), rng, tele.si["node"])]
        own = _pod_targets(lab, act, ph, tg, tl, p, node, reset if p == restarted else None)
        signals: dict[str, Arr] = {}
        for sc in own + node_targets.get(node, []):
            signals |= read_target(sc, at, step)
        targets += own
        pods.append(
            PodWindow(pod_names[p], node_names[node], cfg.gpu.model_name, cfg.gpus_per_pod, signals, cfg.neighbours)
        )
    targets += [sc for scs in node_targets.values() for sc in scs]
    families, coverage = families_and_coverage(pods)
    quality = DataQuality(families=families, coverage=coverage, scrape_interval=tele.si["dcgm"])
    window = JobWindow(namespace, job, float(at[0]), float(at[-1]), step, at, tuple(pods), quality)
    return Rendered(window, tuple(targets), tl.tags)
