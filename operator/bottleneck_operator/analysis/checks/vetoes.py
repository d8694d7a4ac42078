"""Physical vetoes: the only rules after the classifier, and they may only rule a class out.

A class is ruled out when a documented capacity or definition shows that its stage neither saturates
nor is waited on. Each veto reads measured quantities (:mod:`.reads`) and cites its source; none is a
level placed from this project's own data (docs/analysis.md lists every number on the class path
with its source). Where a stage's signals were not collected, nothing is ruled out: the classifier's
probability stands.

The bars come from TensorBoard's input-pipeline analysis (XProf): input time of 5 % of the step or more
makes a step "moderately input-bound", 20 % or more "highly input-bound" (TELEMETRY.md, "Peers' rules").
A stage waited on less than 5 % of the time is therefore not what bounds the step. GPU itself is never
ruled out: its class holds kernels bound by their own launches or a slowed clock, whose GPUs idle
between kernels, and nothing measured tells that idle time from an input stall's. Interconnect is
never ruled out either: link bytes against capacity bound a transfer's bandwidth term, not its latency
term, and a collective of many small messages waits on latency while its links carry few bytes (NCCL's
alpha-beta cost); the metric contract has no message counts to bound that term.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bottleneck_operator.analysis.checks.reads import Reads
from bottleneck_operator.analysis.features.levels import DRAM_PEAK, WAITED_ON
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck

DRAM_HALF = DRAM_PEAK / 2  # below half its practical peak the HBM interface is mostly idle: not saturated


@dataclass(frozen=True)
class Veto:
    """One class ruled out: what was read, and the documented fact that rules it out."""

    cls: Bottleneck
    reason: str


def _pct(v: float) -> str:
    return f"{100 * v:.0f} %"


def gpus_never_wait(r: Reads) -> str | None:
    """The GPUs were busy more than 95 % of the time by both readings: no input stage costs 5 %."""
    if r.busy_low is None or r.busy_low < 1.0 - WAITED_ON:
        return None
    return (
        f"the GPUs ran kernels {_pct(r.busy_low)} of the time, so no input stage kept them waiting "
        f"{_pct(WAITED_ON)} of it (XProf's bar for an input-bound step)"
    )


def _hbm(r: Reads) -> str | None:
    if r.dram is None or r.dram >= DRAM_HALF:
        return None
    return (
        f"DRAM activity {_pct(r.dram)}, under half its practical peak of {_pct(DRAM_PEAK)} (DCGM): HBM is not saturated"
    )


def _host_memory(r: Reads) -> str | None:
    if r.mem_wait is None or r.mem_wait >= WAITED_ON:
        return None
    if (r.swapins or 0.0) > 0.0 or (r.oom_kills or 0.0) > 0.0:
        return None
    return f"the pod's processes waited on memory {_pct(r.mem_wait)} of the time (memory.pressure), with no OOM kill"


def _cpu(r: Reads) -> str | None:
    if r.cpu_wait is None or r.throttled is None or r.procs_busy is None:
        return None
    if r.cpu_wait >= WAITED_ON or r.throttled >= WAITED_ON or r.procs_busy >= 1.0:
        return None
    return (
        f"no trainer process held a full core, {_pct(r.throttled)} of CFS periods were throttled and the pod "
        f"waited for CPU {_pct(r.cpu_wait)} of the time (cpu.pressure): no CPU stage saturated"
    )


def vetoes(r: Reads) -> dict[Bottleneck, Veto]:
    """The classes the window's measurements rule out.

    Args:
        r: the window's measured quantities.

    Returns:
        Class -> its veto, for the classes ruled out.
    """
    never_wait = gpus_never_wait(r)
    found: dict[Bottleneck, str | None] = {
        Bottleneck.IO: never_wait,
        Bottleneck.CPU: never_wait or _cpu(r),
    }
    hbm, host = _hbm(r), never_wait or _host_memory(r)
    if hbm is not None and host is not None:
        found[Bottleneck.MEMORY] = f"{hbm}; and {host}"
    return {c: Veto(c, why) for c, why in found.items() if why is not None}


def apply_vetoes(probabilities: Mapping[str, float], ruled_out: Mapping[Bottleneck, Veto]) -> dict[str, float]:
    """The probabilities with the ruled-out classes at 0 and the rest renormalised (all 0 when none is left)."""
    probs = {c.value: 0.0 if c in ruled_out else float(probabilities.get(c.value, 0.0)) for c in CLASSES}
    total = sum(probs.values())
    return {k: v / total for k, v in probs.items()} if total > 0 else probs
