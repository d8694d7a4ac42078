"""A pod's life as segments: before the Job, start-up, training (with drift), checkpoints, evaluations.

Training repeats the steady-state profile of the event simulation; each stretch of a minute or
two re-enters it at a random phase with the cycle stretched by a few per cent (step times drift),
so that short sample periods (GPU utilisation over 1 s or 1/6 s) see the step's structure the way
a real exporter would, without the window being one long copy of a single cycle.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator_dev.familyag.host import HostCosts
from bottleneck_operator_dev.familyag.hostlevels import node_totals
from bottleneck_operator_dev.familyag.observe import Observation
from bottleneck_operator_dev.familyag.profile import BINS, GPU_CHANNELS, HOST_CHANNELS, PodTimeline, Profile, Segment
from bottleneck_operator_dev.familyag.scenario import Scenario

PRE_START = 900.0  # node-level series exist this long before the Job (they belong to the node)
_GPU_ROW = {name: i for i, name in enumerate(GPU_CHANNELS)}


def _flat(gpu: dict[str, float], host: dict[str, float], sc: Scenario, period: float = 10.0) -> Profile:
    """A profile with constant levels (pauses), the node's totals added to the host channels."""
    node_totals(sc, host)
    g = np.zeros((len(GPU_CHANNELS), BINS))
    for name, value in gpu.items():
        g[_GPU_ROW[name]] = value
    h = np.asarray([host.get(name, 0.0) for name in HOST_CHANNELS], dtype=np.float64)
    return Profile.of(period, g, h)


def _host_base() -> dict[str, float]:
    keys = ("cpu", "sys", "dstate", "swapin", "majflt", "pod_rx", "pod_tx", "host_rx", "psi_cpu", "psi_io")
    more = ("psi_io_full", "psi_mem", "psi_mem_full", "n_disk_rd", "n_disk_ops", "n_disk_busy")
    return dict.fromkeys((*keys, *more), 0.0)


def idle_profile(sc: Scenario) -> Profile:
    """The node before the Job's pods run: only the neighbours and the system."""
    return _flat({}, _host_base(), sc)


def startup_profile(sc: Scenario, hc: HostCosts, obs: Observation) -> Profile:
    """Imports, CUDA initialisation and loading the weights: a core or two per rank, the GPU idle."""
    ranks = sc.gpus_per_pod
    weights = sc.model.params * 2.0 * (1.0 if sc.model.kind == "llm-finetune" else 0.05)
    rate = ranks * weights / max(obs.startup, 1.0)
    host = _host_base() | {"cpu": 1.5 * ranks, "running": 1.0 * ranks, "busyp": 1.0 * ranks}
    host["periods"] = 10.0 if sc.cpu_limit is not None else 0.0
    if sc.storage.block:
        host["fs_rd"] = host["n_disk_rd"] = rate
        host["n_disk_ops"] = rate / 1e6
        host["n_disk_busy"] = min(1.0, rate / sc.storage_bps)
    elif sc.storage.pod_net:
        host["pod_rx"] = rate
    else:
        host["host_rx"] = rate
    gpu = {"pcie_rx": weights / max(obs.startup, 1.0) + 2e6, "pcie_tx": 1e6, "busy": 0.01, "memutil": 0.01}
    return _flat(gpu, host, sc)


def checkpoint_profile(sc: Scenario, length: float) -> Profile:
    """Writing a checkpoint: state copied off the GPUs, serialised by one core per rank, sent to storage."""
    ranks = sc.gpus_per_pod
    shard = sc.model.params * (2.0 + 12.0 * sc.model.trainable / sc.model.params) / sc.ranks * sc.gpus_per_pod
    rate = shard / max(length, 1.0)
    host = _host_base() | {"cpu": 1.1 * ranks, "running": 1.0 * ranks, "busyp": 1.0 * ranks}
    host["periods"] = 10.0 if sc.cpu_limit is not None else 0.0
    host["pod_tx"] = rate if sc.storage.pod_net else 0.0
    host["host_tx"] = rate if sc.storage.host_net else 0.0
    gpu = {"pcie_tx": rate / ranks + 1e6, "pcie_rx": 2e6, "busy": 0.02, "memutil": 0.02}
    return _flat(gpu, host, sc)


def eval_profile(train: Profile) -> Profile:
    """Evaluation: the loader as in training, forward passes only, no gradient traffic."""
    gpu = train.levels[: len(GPU_CHANNELS)].copy()
    for name, scale in (("busy", 0.6), ("sm", 0.55), ("occ", 0.55), ("tensor", 0.45), ("dram", 0.5), ("memutil", 0.5)):
        gpu[_GPU_ROW[name]] *= scale
    for name in ("nvl_tx", "nvl_rx"):
        gpu[_GPU_ROW[name]] = 0.0
    host = train.levels[len(GPU_CHANNELS) :, 0].copy()
    for name in ("ib_rx", "ib_tx"):
        host[HOST_CHANNELS.index(name)] = 0.0
    return Profile.of(train.period, gpu, host)


def _training(rng: np.random.Generator, t0: float, t1: float, train: Profile) -> list[Segment]:
    """Training from t0 to t1 as stretches of 30-180 s, each at a random phase and a drifted cycle."""
    out: list[Segment] = []
    t = t0
    while t < t1:
        end = min(t1, t + float(rng.uniform(30.0, 180.0)))
        scale = float(rng.uniform(0.97, 1.03))
        out.append(Segment(t, end, train, float(rng.uniform(0.0, train.period * scale)), scale))
        t = end
    return out


def pod_timeline(
    rng: np.random.Generator, sc: Scenario, hc: HostCosts, obs: Observation, train: Profile, start: float
) -> PodTimeline:
    """One pod's segments from before the Job to the end of the window (absolute times)."""
    segs = [Segment(start - PRE_START, start, idle_profile(sc), 0.0)]
    begin = start + obs.startup
    segs.append(Segment(start, begin, startup_profile(sc, hc, obs), 0.0))
    t = begin
    lengths = [length for kind, _, length in obs.pauses if kind == "checkpoint"]
    saving = checkpoint_profile(sc, float(np.mean(lengths))) if lengths else None
    evaluating = eval_profile(train)
    for kind, at, length in obs.pauses:
        segs += _training(rng, t, start + at, train)
        pause = saving if kind == "checkpoint" and saving is not None else evaluating
        segs.append(Segment(start + at, start + at + length, pause, 0.0))
        t = start + at + length
    segs += _training(rng, t, start + obs.duration + 1.0, train)
    return PodTimeline(segs)
