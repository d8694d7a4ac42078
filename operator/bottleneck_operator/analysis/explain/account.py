"""Where the step time goes, from measured waits only.

A share enters the account only when something measured it: the pod's PSI "some" share for IO, CPU
and host memory (the kernel's PSI documentation: the share of time at least one task of the cgroup
was stalled on that resource), the CFS throttled share for a CPU limit, and for the links the bytes
they carried against their capacity (:mod:`..checks.reads`), the link of the verdict's mechanism. A host stall can cost no more than the
time the GPUs were idle, so its share is capped there; link time is not, since collectives run as
kernels that keep the GPUs busy while they wait. Where no measured share exists, the only honest
figure is the bare ceiling ``1 / busy``: the speed-up if every idle moment went away. A measured
share under XProf's 5 % bar is left out the same way: it measured some other wait than the stall's.
The same bar bounds what is left: a step whose remaining work is read under 5 % of it gives x20
(``MAX_SPEEDUP``), said as "or more", since the telemetry does not resolve a stage that small.
"""

from __future__ import annotations

from dataclasses import dataclass

from bottleneck_operator.analysis.checks.reads import Reads
from bottleneck_operator.analysis.features.levels import WAITED_ON
from bottleneck_operator.contract.verdict import Bottleneck, Mechanism

# What is left of the step is read as no less than XProf's 5 % bar: a stage under it is not resolved.
MAX_SPEEDUP = 1.0 / WAITED_ON


@dataclass(frozen=True)
class Wait:
    """A measured share of wall time spent waiting, and what measured it."""

    share: float
    what: str
    signal: str  # the signal the evidence names it by


@dataclass(frozen=True)
class StepAccount:
    """The GPUs' busy share and the measured waits of one window.

    Attributes:
        busy: the GPUs' busy share over training samples (their lower reading: an upper bound on what
            removing idle time can give must allow for every reading), None unread.
        waits: stall class -> its measured wait, for the classes something measured.
    """

    busy: float | None
    waits: dict[Bottleneck, Wait]

    @property
    def idle(self) -> float | None:
        return None if self.busy is None else max(0.0, 1.0 - self.busy)

    def speedup(self, cls: Bottleneck) -> float:
        """The speed-up from removing ``cls``'s measured wait, else the bare ceiling 1/busy (1 for GPU)."""
        w = self.waits.get(cls)
        if w is not None:
            return 1.0 / max(1.0 - w.share, 1.0 / MAX_SPEEDUP)
        return self.ceiling() if cls is not Bottleneck.GPU else 1.0

    def ceiling(self) -> float:
        """1/busy: the speed-up if every idle moment of the GPUs went away."""
        if self.busy is None:
            return 1.0
        return 1.0 / max(self.busy, 1.0 / MAX_SPEEDUP)

    def describe(self) -> str:
        """The account in one sentence, for the verdict's notes."""
        if self.busy is None:
            return "The GPUs' busy share was not read."
        parts = [f"GPUs busy {100 * self.busy:.0f} % of training time"]
        parts += [f"{c.value} waits measured at {100 * w.share:.0f} % ({w.what})" for c, w in self.waits.items()]
        return "Step time: " + ", ".join(parts) + "."


def _capped(share: float, idle: float | None) -> float:
    return max(0.0, min(share, idle if idle is not None else share))


def _worth(wait: Wait) -> bool:
    """A measured wait under XProf's 5 % bar measures some other wait than the stall's (a socket read shows
    no io.pressure): the account then gives the bare ceiling rather than promise nothing."""
    return wait.share >= WAITED_ON


def step_account(r: Reads, mechanism: Mechanism | None = None) -> StepAccount:
    """The account of one window from its measured quantities (``mechanism``: the verdict's, whose
    link is the Interconnect wait)."""
    idle = r.idle
    waits: dict[Bottleneck, Wait] = {}
    if r.io_wait is not None:
        waits[Bottleneck.IO] = Wait(_capped(r.io_wait, idle), "the pod's io.pressure", "sc_psi_io_some")
    cpu = [
        Wait(v, what, signal)
        for v, what, signal in (
            (r.cpu_wait, "the pod's cpu.pressure", "sc_psi_cpu_some"),
            (r.throttled, "CFS throttling", "cpu_throttled_frac"),
        )
        if v is not None
    ]
    if cpu:
        # the larger reading names the wait, then the GPUs' idle time caps it
        top = max(cpu, key=lambda w: (w.share, w.what))
        waits[Bottleneck.CPU] = Wait(_capped(top.share, idle), top.what, top.signal)
    if r.mem_wait is not None:
        waits[Bottleneck.MEMORY] = Wait(_capped(r.mem_wait, idle), "the pod's memory.pressure", "sc_psi_mem_some")
    name = link_of(mechanism, r.links)
    if name is not None:
        share = min(r.links[name], 1.0 - 1.0 / MAX_SPEEDUP)
        waits[Bottleneck.INTERCONNECT] = Wait(share, link_wait(name) + CAPACITY_TAKEN.get(name, ""), "wait_share")
    return StepAccount(r.busy_low, {c: w for c, w in waits.items() if _worth(w)})


# The link each interconnect mechanism waits on, as checks/reads.py names the links it measures. A job
# across nodes waits on the fabric between them: its RDMA ports, read against InfiniBand's capacity
# (an Ethernet NIC's is not exported, so its wait is never measured).
LINKS: dict[Mechanism, str] = {Mechanism.PCIE: "PCIe", Mechanism.NVLINK: "NVLink", Mechanism.NETWORK: "InfiniBand"}
# How a link's capacity was taken where the metric contract gives none. node-exporter's infiniband
# collector also exports each port's rate (node_infiniband_rate_bytes_per_second), but the contract
# (DESIGN.md) reads only its byte counters, summed over every port; so the fabric is read against one
# port at the slowest rate: the share is then the most the link can have been busy, and faster or more
# ports make it smaller.
CAPACITY_TAKEN: dict[str, str] = {
    "InfiniBand": ", taken as one EDR port (the slowest rate; port rates are not read, so it is the most the fabric was busy)"
}


def link_wait(link: str) -> str:
    """How a measured link wait is named (its ``what``): the words :mod:`.agreement` reads the link back from."""
    return f"{link} bytes against its capacity"


def link_of(mechanism: Mechanism | None, links: dict[str, float]) -> str | None:
    """The measured link whose bytes are the Interconnect wait: the mechanism's own link, so the wait,
    its evidence and the headroom speak of the link the mechanism names; with no mechanism, the busiest.
    None where that link was not read."""
    if mechanism in LINKS:
        name = LINKS[mechanism]
        return name if name in links else None
    return max(links, key=lambda k: links[k]) if links else None
