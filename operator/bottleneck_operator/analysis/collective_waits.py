"""Whose are the GPUs' collective waits: the links', or a slowed GPU's.

NCCL's kernels stay resident while they wait, so a GPU waiting in a collective reads busy on
``GPU_UTIL`` and the graphics engine with its SMs idle. Busy only with such kernels while the links
carry the collectives' traffic, the GPUs wait on the links, whatever a model reads into the busy time.
But synchronous data parallelism also runs at its slowest GPU's pace: a throttled or failing GPU keeps
its peers waiting inside their collectives with the links nearly quiet, which reads like communication
until the clock is read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from bottleneck_operator.analysis.evidence_gates import GATES, GateInput, GateResult, links_carry_traffic
from bottleneck_operator.contract.verdict import Bottleneck

# A busy GPU's SM clock falls below its maximum for one of two reasons: the board at its power limit
# (bf16 matmuls on an H200 held 0.99 of its 700 W with the clock at 0.75 of 1980 MHz, and HBM streaming
# at 0.72 of the limit kept the full clock: recordings/README.md), or a slowdown that is not power:
# heat, a hardware slowdown, a failing part (NVML names which among its clock-event reasons). Only a GPU
# busy nearly all the time (STEADY_BUSY) shows which: a sample of one busy part of the time averages
# bursts at the limit with idle gaps, and its clock and power both read in between (an H200 loop
# starved half the time read its clock at 0.87 of the maximum and its power at 0.58 of the limit,
# tests/data/gpu-objectstore-busy). Busy throughout, a clock under CLOCK_SLOW of the maximum with the
# boards under POWER_FREE of their limit is slowed by the second kind.
STEADY_BUSY = 0.85
CLOCK_SLOW = 0.95
POWER_FREE = 0.85


def slowed_clock(f: Callable[[str], float | None], busy: float | None) -> float | None:
    """The slowest pod's SM clock over its maximum, when something other than power holds it down.

    Args:
        f: reads a feature by name (None when missing).
        busy: the GPUs' busy share over training samples.

    Returns:
        The clock share, or None when it is not held down, the GPUs are not busy throughout, or the
        part's clock or power limit is unknown.
    """
    clock, power = f("clock_frac.mean.podmin"), f("power_tdp_frac.p90")
    if busy is None or clock is None or power is None or busy < STEADY_BUSY:
        return None
    return clock if clock < CLOCK_SLOW and power < POWER_FREE else None


def links_near_capacity(g: GateInput) -> bool:
    """A link itself near its capacity (PCIe either way, NVLink, or copies filling the idle time):
    Interconnect then binds whatever else the GPUs wait on."""
    return any(
        (lv := gate.level(g)) is not None and lv >= 1.0
        for gate in GATES[Bottleneck.INTERCONNECT]
        if gate.name in _LINK_CAPACITY
    )


_LINK_CAPACITY = frozenset({"pcie_rx_bps", "pcie_tx_bps", "pcie_busy_during_wait", "nvlink_bps"})


def waits_behind_a_slowed_gpu(
    g: GateInput, gates: Mapping[Bottleneck, GateResult], probs: dict[str, float]
) -> list[str]:
    """Collective waits behind a slowed GPU are the GPU's: Interconnect's probability moves to GPU.

    Only while the GPUs are busy enough to bind and no link is near its capacity: a slow peer does not
    explain a saturated link. ``probs`` (class name -> probability) is changed in place; returns the
    note for the verdict when the move dethrones the model's favourite.
    """
    clock = slowed_clock(g.f, g.busy)
    inter = Bottleneck.INTERCONNECT
    if clock is None or probs[inter.value] <= 0 or not gates[Bottleneck.GPU].holds or links_near_capacity(g):
        return []
    return move_probability(
        probs,
        inter,
        Bottleneck.GPU,
        f"The GPUs wait in their collectives, but the slowest pod's GPUs run at {100 * clock:.0f} % of their "
        "maximum clock with the boards under their power limit (heat or a hardware slowdown): the peers wait "
        "for a slowed GPU, not for the links, so the job is GPU-bound.",
    )


# Share of wall time in communication-only kernels (the GPU busy, its SMs idle) from which the links,
# not the math, pace the step. Tiny kernels leave the SMs as idle, but a loop bound by their launches
# keeps its GPU busy only about half the time (0.49 and 0.54 on an H200, tests/data/gpu-launch*), and
# a launch-bound four-pod Job of the simulator read 0.6 with its all-reduce overlapped: above
# COMM_BOUND no launch overhead explains the time.
COMM_BOUND = 0.7


def waits_on_the_links(g: GateInput, gates: Mapping[Bottleneck, GateResult], probs: dict[str, float]) -> list[str]:
    """GPUs busy mostly with NCCL's resident kernels wait on the links: GPU's probability moves to Interconnect.

    Only where the GPUs are busy throughout, communication-only kernels fill ``COMM_BOUND`` of the wall
    time or more (measured: SM activity at hand), Interconnect's own evidence holds with the links
    carrying real volume (a trickle of traffic keeps no collective waiting) and no slowed GPU explains
    the waits. ``probs`` is changed in place; returns the note for the verdict when the move dethrones
    the model's favourite.
    """
    gpu, comm = Bottleneck.GPU, g.comm
    if comm is None or g.busy is None or g.busy < STEADY_BUSY or comm < COMM_BOUND or probs[gpu.value] <= 0:
        return []
    if (
        not gates[Bottleneck.INTERCONNECT].holds
        or not links_carry_traffic(g.f)
        or slowed_clock(g.f, g.busy) is not None
    ):
        return []
    return move_probability(
        probs,
        gpu,
        Bottleneck.INTERCONNECT,
        f"The GPUs are busy {100 * g.busy:.0f} % of the time, but for {100 * comm:.0f} % of it only communication "
        "kernels ran (their SMs idle) while the links carry the collectives' traffic: the GPUs wait on the links, "
        "so the job is Interconnect-bound.",
    )


# Power over the board's limit under which a GPU reading busy does no math: every real loop that
# computed drew 0.72 of an H200's 700 W or more while busy (HBM streaming 0.72, bf16 and fp32 products
# 0.99), while pinned copies each way held GPU_UTIL at 0.99 at 0.19, the idle board's draw
# (tests/data/gpu-h2d-pinned, gpu-d2h-pinned; recordings/README.md).
IDLE_POWER = 0.25
# Busy share over training samples from which the GPU has no idle time to speak of: a launch-bound loop
# also draws an idle board's power (0.19, tests/data/gpu-launch) but is busy only about half the time.
BUSY_THROUGHOUT = 0.9


def busy_at_idle_power(g: GateInput, gates: Mapping[Bottleneck, GateResult], probs: dict[str, float]) -> list[str]:
    """A GPU busy throughout at an idle board's power, with no field to say kernels ran, is moving bytes.

    Without the graphics-engine and SM fields, ``GPU_UTIL`` is all that reads busy, and it counts the
    copy engines' time and NCCL's waiting kernels as it counts math. Math draws power; copies and
    waits draw what an idle board draws. GPU's probability moves to Interconnect where its evidence is
    not ruled out (without the PCIe fields, copies are unobserved). ``probs`` is changed in place;
    returns the note when the move dethrones the model's favourite.
    """
    gpu, link = Bottleneck.GPU, Bottleneck.INTERCONNECT
    power = g.f("power_tdp_frac.mean")
    kernels_seen = g.f("gr_engine_active.mean") is not None or g.f("sm_active.mean") is not None
    if kernels_seen or power is None or g.busy is None or g.busy < BUSY_THROUGHOUT or probs[gpu.value] <= 0:
        return []
    if power >= IDLE_POWER or not (gates[link].holds or gates[link].unobserved is not None):
        return []
    return move_probability(
        probs,
        gpu,
        link,
        f"The GPUs read busy {100 * g.busy:.0f} % of the time at {100 * power:.0f} % of their power limit, what "
        "an idle board draws: no math runs, so the busy time is copies or collective waits, and the job is "
        "Interconnect-bound.",
    )


def move_probability(probs: dict[str, float], source: Bottleneck, target: Bottleneck, why: str) -> list[str]:
    """``source``'s probability moves to ``target``; the note when that dethrones the model's favourite."""
    notes = [why] if probs[source.value] >= max(probs.values()) else []
    probs[target.value] += probs[source.value]
    probs[source.value] = 0.0
    return notes
