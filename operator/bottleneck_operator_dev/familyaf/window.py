"""Assembling one Job's contract window from its cluster, stage times and exporters."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.signals import SIGNALS
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.familyaf.cluster import Cluster
from bottleneck_operator_dev.familyaf.exporters import Setup, draw_setup, sample_pod
from bottleneck_operator_dev.familyaf.gpu_signals import gpu_levels
from bottleneck_operator_dev.familyaf.host_signals import host_levels
from bottleneck_operator_dev.familyaf.stepmodel import job_step
from bottleneck_operator_dev.familyaf.timeline import CELL, Level, draw_timeline, render
from bottleneck_operator_dev.familyaf.workload import composition, cpu_budget

FloatArray = npt.NDArray[np.float64]
SHORT = (90.0, 420.0)  # seconds of a window too short to judge
LONG = (900.0, 5400.0)
_CHARS = "bcdfghjklmnpqrstvwxz2456789"


def _names(rng: np.random.Generator, job: str, pods: int) -> tuple[list[str], list[str]]:
    """Pod names (PyTorchJob workers or indexed Job pods) and node names."""
    if rng.random() < 0.5:
        pod_names = [f"{job}-worker-{k}" for k in range(pods)]
    else:
        pod_names = [f"{job}-{k}-" + "".join(rng.choice(list(_CHARS), 5)) for k in range(pods)]
    pool = ("gpu-a", "gpu-b", "train", "hgx")[int(rng.integers(4))]
    nodes = [f"{pool}-{int(n):03d}" for n in rng.choice(400, pods, replace=False)]
    return pod_names, nodes


def _grid(rng: np.random.Generator, start: float, step: float) -> tuple[FloatArray, bool]:
    """The window's timestamps, and whether it is too short to judge."""
    short = bool(rng.random() < 0.06)
    duration = rng.uniform(*(SHORT if short else LONG))
    count = max(2, int(duration // step) + 1)
    return start + step * np.arange(count, dtype=np.float64), short


def _levels(rng: np.random.Generator, cl: Cluster, t: Mapping[str, FloatArray]) -> dict[str, Level]:
    step = job_step(t, composition(cl))
    levels = {**gpu_levels(cl, t, step, rng), **host_levels(cl, t, step, cpu_budget(cl), rng)}
    if cl.cpu_limit is None:
        del levels["cpu_limit_cores"]  # kube-state-metrics publishes no limit series without a limit
    return {name: levels[name] for name in SIGNALS if name in levels}


def _tags(setup: Setup, pauses: tuple[str, ...], short: bool) -> list[str]:
    tags = [f"scrape:{setup.interval['dcgm']:g}s", f"fields:{setup.fields}", f"collect:{setup.collect:g}s"]
    tags += [f"layout:{k}={v}" for k, v in sorted(setup.layout.items())]
    tags += [f"reset:{k}" for k, _ in setup.resets]
    tags += [f"outage:{setup.outage[0]}"] if setup.outage else []
    tags += [f"pause:{p}" for p in pauses]
    tags += [f"miss:{setup.miss:g}"] if setup.miss else []
    tags += ["too-short"] if short else []
    return tags


def _notes(setup: Setup) -> tuple[str, ...]:
    notes = []
    if setup.fields == "dev-only":
        notes.append("no PROF fields")
    if setup.collect > setup.interval["dcgm"]:
        notes.append(f"dcgm-exporter collects every {setup.collect:g} s")
    if all(f.exporter_name != "sidecar" for f in setup.families):
        notes.append("no collector")
    return tuple(notes)


def build_window(
    rng: np.random.Generator,
    cl: Cluster,
    t: Mapping[str, FloatArray],
    *,
    namespace: str,
    job: str,
    start: float,
    step: float,
) -> tuple[JobWindow, list[str]]:
    """The Job's window, one pod window per pod, and the tags of what its exporters drew."""
    ts, short = _grid(rng, start, step)
    end = float(ts[-1])
    setup = draw_setup(rng, cl, start, end)
    lookback = max(240.0, step + 60.0) + 60.0
    tl = draw_timeline(rng, start - lookback, end + CELL, cl.pods)
    grids = {name: render(tl, lv, rng) for name, lv in _levels(rng, cl, t).items()}
    pod_names, nodes = _names(rng, job, cl.pods)
    pods = []
    for k in range(cl.pods):
        signals = sample_pod(rng, setup, tl, {n: g[k] for n, g in grids.items()}, ts, step)
        for name, v in signals.items():
            if SIGNALS[name].unit == "ratio":
                signals[name] = np.clip(v, 0.0, 1.0)
        if "power_w" in signals:  # the board enforces its limit within milliseconds
            signals["power_w"] = np.minimum(signals["power_w"], cl.power_cap_w * 1.01)
        block = SignalBlock.of(signals, len(ts))
        pods.append(PodWindow(pod_names[k], nodes[k], cl.gpu.model, cl.gpus, block, cl.neighbours))
    families, coverage = families_and_coverage(pods)
    quality = DataQuality(families, coverage, setup.interval["dcgm"], _notes(setup), dict(setup.layout))
    window = JobWindow(namespace, job, start, end, step, ts, tuple(pods), quality)
    return window, _tags(setup, tl.pauses, short)
