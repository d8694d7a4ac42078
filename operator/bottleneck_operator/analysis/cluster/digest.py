"""What the cluster analysis knows of one Job: its verdict, where it ran, and its peers' summaries."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# Symptoms a hot spot can concentrate. IO and Interconnect are verdict classes; Throttled is a
# GPU clock held down by power-cap, thermal or hardware-slowdown clock-event reasons (a power-capped
# rack leaves its Jobs GPU-bound, only slower, so no class can show it).
SYMPTOMS: tuple[str, ...] = ("IO", "Interconnect", "Throttled")
# Where a hot spot can sit, most specific first. ``node``: the Job's nodes; ``storage``: the storage
# classes of its volumes; ``fabric``: the network fabric its nodes sit on; ``rack``: the racks
# (or zones) of its nodes.
DIMENSIONS: tuple[str, ...] = ("node", "storage", "fabric", "rack")


@dataclass(frozen=True)
class PeerSample:
    """One peer of a multi-pod Job (a GPU, or a pod when the GPUs are not told apart) over a window.

    Every figure is a mean over the window; None where the exporter did not provide it.

    Attributes:
        pod: the pod's name.
        node: its node, None when unknown.
        gpu: the GPU's index or UUID within the pod, None when the pod's GPUs are read together.
        activity: GPU activity 0..1 (SM activity, else GR engine active, else GPU utilisation).
        clock_mhz: SM clock.
        slowdown: share of the time with a power-cap, thermal or hardware-slowdown clock-event reason.
        net_bps: network bytes per second (netdev plus InfiniBand) of the pod's node.
        read_bps: storage reads per second of the pod (its cgroup, else its containers).
        io_wait: share of the time the pod's tasks waited on IO (cgroup io pressure "some").
    """

    pod: str
    node: str | None = None
    gpu: str | None = None
    activity: float | None = None
    clock_mhz: float | None = None
    slowdown: float | None = None
    net_bps: float | None = None
    read_bps: float | None = None
    io_wait: float | None = None


@dataclass(frozen=True)
class JobDigest:
    """One Job's verdict and placement, as the cluster analysis reads them.

    Attributes:
        namespace, name, kind: the workload.
        bottleneck: its verdict class (IO, CPU, Interconnect, GPU, Memory, Unknown).
        gpus: GPUs it holds.
        seconds: seconds of the Job's run this digest stands for.
        gpu_active: mean GPU activity 0..1 over those seconds; None when unmeasured.
        throttled: share of its GPU time with a clock-event slowdown reason; None when not exported.
        workload: the stratum of comparable Jobs (the same training code): hot spots are judged
            within strata, so a node that simply runs heavier Jobs is not one.
        locations: dimension (see :data:`DIMENSIONS`) -> the places the Job touched there.
        action: the first recommendation's action, None when none.
        headroom: the headroom range's low end (speed-up factor >= 1), None when none.
        peers: per-GPU (or per-pod) summaries, for stragglers; empty for a one-pod Job.
        end: when the digest's window ended (unix seconds): the book forgets old Jobs by it.
    """

    namespace: str
    name: str
    bottleneck: str
    gpus: int = 0
    seconds: float = 0.0
    gpu_active: float | None = None
    kind: str = "Job"
    throttled: float | None = None
    workload: str = ""
    locations: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    action: str | None = None
    headroom: float | None = None
    peers: tuple[PeerSample, ...] = ()
    end: float = 0.0

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.namespace, self.kind, self.name)

    @property
    def gpu_hours(self) -> float:
        return self.gpus * self.seconds / 3600.0

    @property
    def idle_gpu_hours(self) -> float:
        """GPU-hours spent idle: (1 - activity) x GPUs x time; 0 when activity is unmeasured."""
        if self.gpu_active is None:
            return 0.0
        return max(0.0, 1.0 - self.gpu_active) * self.gpu_hours

    def shows(self, symptom: str) -> bool:
        """Whether the Job shows a hot-spot symptom (a verdict class, or mostly throttled clocks)."""
        if symptom == "Throttled":
            # "Most of the time": a clock held down for a minority of the window is weather, not a cap.
            return self.throttled is not None and self.throttled > 0.5
        return self.bottleneck == symptom
