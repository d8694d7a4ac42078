"""Where a step's time goes, and the counterfactual that names the bottleneck.

A step is a pipeline (shared/DESIGN.md): storage reads and CPU decode run ahead of the GPU in loader
processes; the GPU copies its batch in, runs its kernels and synchronises gradients, hiding part of
that sync behind the backward pass; some host work (environment steps, an offloaded optimiser) and
host-memory stalls hold everything up; a synchronous checkpoint stops the GPU while it writes.
Data-parallel pods wait for the slowest one. The bottleneck is the stage whose removal speeds the
window's work up most (DESIGN.md's definition), computed here for every class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism


@dataclass(frozen=True)
class StageTimes:
    """Seconds one pod spends per step in each stage (before waiting for its peers).

    Attributes:
        io: storage reads (prefetched: overlaps the GPU).
        cpu: decode/augment/collate (prefetched: overlaps the GPU).
        cpu_serial: host work the GPU waits for.
        h2d: host-to-device copy time not overlapped with compute.
        flops: compute-bound kernels.
        launch: host time to issue the kernels; the GPU is launch-bound when it exceeds flops + hbm.
        hbm: bandwidth-bound kernels.
        sync_intra, sync_inter: gradient sync inside the node / between nodes (can hide behind backward).
        crit_intra, crit_inter: collectives on the critical path (tensor-parallel, embedding all-to-all).
        overlap: share of kernel time the gradient sync can hide behind.
        host_mem: stalls on host memory pressure (reclaim, refaults, swap-in).
        pause: a synchronous checkpoint write or model load (storage-bound, GPU idle).
        intra_nvlink: the intra-node collectives ride NVLink (else PCIe through the host).
        cpu_bound_by: what caps the loader's cores: "throttled", "saturated" or "too-few-workers".
        remote: the storage is a network file system or object store.
    """

    io: float = 0.0
    cpu: float = 0.0
    cpu_serial: float = 0.0
    h2d: float = 0.0
    flops: float = 0.0
    launch: float = 0.0
    hbm: float = 0.0
    sync_intra: float = 0.0
    sync_inter: float = 0.0
    crit_intra: float = 0.0
    crit_inter: float = 0.0
    overlap: float = 0.0
    host_mem: float = 0.0
    pause: float = 0.0
    intra_nvlink: bool = True
    cpu_bound_by: str = "saturated"
    remote: bool = False

    @property
    def kernels(self) -> float:
        """GPU time in kernels, or issuing them when launches are the limit."""
        return max(self.flops + self.hbm, self.launch)

    @property
    def exposed_comm(self) -> float:
        sync = self.sync_intra + self.sync_inter
        hidden = min(sync, self.overlap * (self.flops + self.hbm))
        return sync - hidden + self.crit_intra + self.crit_inter

    @property
    def gpu_side(self) -> float:
        return self.h2d + self.kernels + self.exposed_comm

    @property
    def input(self) -> float:
        return max(self.io, self.cpu)

    @property
    def step(self) -> float:
        """The pod's own step time."""
        return max(self.input, self.gpu_side) + self.cpu_serial + self.host_mem + self.pause


# What removing each class's stage means: its times go to zero.
REMOVES: dict[Bottleneck, tuple[str, ...]] = {
    Bottleneck.IO: ("io", "pause"),
    Bottleneck.CPU: ("cpu", "cpu_serial"),
    Bottleneck.INTERCONNECT: ("h2d", "sync_intra", "sync_inter", "crit_intra", "crit_inter"),
    Bottleneck.GPU: ("flops", "launch"),
    Bottleneck.MEMORY: ("hbm", "host_mem"),
}


def without(st: StageTimes, fields: Sequence[str]) -> StageTimes:
    """The same pod with some stages taking no time."""
    changes: dict[str, float] = dict.fromkeys(fields, 0.0)
    return replace(st, **changes)  # type: ignore[arg-type]


def job_step(pods: Sequence[StageTimes], fields: Sequence[str] = ()) -> float:
    """A synchronous Job's step: the slowest pod's, with ``fields`` removed everywhere."""
    return max(without(p, fields).step if fields else p.step for p in pods)


Regime = tuple[float, Sequence[StageTimes]]  # (seconds of the window in it, each pod's stage times)


def speedups(regimes: Sequence[Regime], fields_by: Mapping[object, Sequence[str]] | None = None) -> dict[object, float]:
    """How much faster the window's work would finish with each set of stages removed.

    Work in a regime is its duration over its step time; removing stages rescales each regime's time
    by the ratio of the step times.
    """
    sets = fields_by if fields_by is not None else REMOVES
    total = sum(d for d, _ in regimes)
    out: dict[object, float] = {}
    for key, fields in sets.items():
        after = 0.0
        for dur, pods in regimes:
            base = job_step(pods)
            after += dur * (job_step(pods, fields) / base if base > 0 else 1.0)
        out[key] = total / after if after > 0 else float("inf")
    return out


def label_of(regimes: Sequence[Regime]) -> tuple[Bottleneck, dict[Bottleneck, float]]:
    """The class whose removal speeds the window up most, and every class's speed-up."""
    gains = speedups(regimes)
    by_class = {Bottleneck(str(k)): v for k, v in gains.items()}
    best = max(by_class, key=lambda c: (by_class[c], -list(REMOVES).index(c)))
    return best, by_class


def is_close_call(gains: Mapping[Bottleneck, float]) -> bool:
    """Removing the bottleneck gains little, or the runner-up would gain nearly as much."""
    first, second = sorted(gains.values(), reverse=True)[:2]
    return first < 1.2 or second * 1.15 >= first


def mechanism_of(label: Bottleneck, regimes: Sequence[Regime]) -> Mechanism:
    """How the class limits the Job: the sub-stage whose removal gains most, read like the label."""
    pods = max(regimes, key=lambda r: r[0])[1]
    lead = max(pods, key=lambda p: p.step)
    if label is Bottleneck.IO:
        return Mechanism.NETWORK_STORAGE if lead.remote else Mechanism.LOCAL_DISK
    if label is Bottleneck.CPU:
        return Mechanism(lead.cpu_bound_by)  # the cap on the loader's cores: limit, node or worker count
    if label is Bottleneck.GPU:
        return Mechanism.LAUNCH_BOUND if lead.launch > lead.flops + lead.hbm else Mechanism.COMPUTE
    if label is Bottleneck.MEMORY:
        gains = speedups(regimes, {"hbm": ("hbm",), "host": ("host_mem",)})
        return Mechanism.HOST_MEMORY_PRESSURE if gains["host"] > gains["hbm"] else Mechanism.HBM_BANDWIDTH
    gains = speedups(
        regimes, {"pcie": ("h2d",), "intra": ("sync_intra", "crit_intra"), "inter": ("sync_inter", "crit_inter")}
    )
    best = max(gains, key=lambda k: gains[k])
    if best == "inter":
        return Mechanism.NETWORK
    if best == "intra":
        return Mechanism.NVLINK if lead.intra_nvlink else Mechanism.PCIE
    return Mechanism.PCIE
