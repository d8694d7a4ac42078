"""The classifier's probabilities checked against the step-time account and the evidence gates.

Waits go first to whom they belong: collective waits to GPU behind a slowed GPU, to Interconnect
where the GPUs are busy mostly with communication-only kernels (:mod:`.collective_waits`); the busy
time of GPUs whose device memory is read or written most of it, with no DRAM field, to Memory
(:mod:`.memory_streams`); CPU waits on a node whose cores serve page faults, and reads of pages coming
back from swap, to Memory (:mod:`.fault_waits`); the reads of a pod whose processes sit at a full core
while its GPUs wait to CPU (:mod:`.pinned_waits`). Then a class whose own evidence does not hold
(:mod:`.evidence_gates`) is ruled out: its probability becomes 0. A stall class whose removal would
gain less than ``STALL_FLOOR`` is a pattern without a cost: its probability moves to GPU, since the
GPUs are the stage that binds (Memory only as host memory: kernels streaming HBM keep the GPUs busy).
The rest is renormalised, so the verdict, its confidence and the headroom read the same account.
When no class is left the verdict is Unknown, says which way the evidence points, and points to the
one stall class whose evidence holds where the model's favourite has plainly none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from bottleneck_operator.analysis.collective_waits import (
    busy_at_idle_power,
    waits_behind_a_slowed_gpu,
    waits_on_the_links,
)
from bottleneck_operator.analysis.evidence_gates import GPUS_WAIT, GateInput, GateResult, holding, streams_hbm
from bottleneck_operator.analysis.fault_waits import cpu_waits_on_faults, io_waits_on_swap
from bottleneck_operator.analysis.headroom_account import (
    STALL_FLOOR,
    StepAccount,
    exposed_comm,
    stall_ceiling,
    step_account,
)
from bottleneck_operator.analysis.memory_streams import busy_streaming_memory
from bottleneck_operator.analysis.pinned_waits import pinned_while_gpus_wait
from bottleneck_operator.analysis.summary_phases import segment_phases
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.contract.window import FloatArray, JobWindow

_STALLS = (Bottleneck.IO, Bottleneck.CPU, Bottleneck.INTERCONNECT, Bottleneck.MEMORY)
# When the model's favourite is ruled out, a runner-up it gave less than this is no verdict either:
# renormalising would turn noise into confidence.
RUNNER_UP_MIN = 0.15


@dataclass(frozen=True)
class Checked:
    """Probabilities after the checks, the account, the gates and what changed, in words."""

    probabilities: dict[str, float]
    account: StepAccount | None
    gates: Mapping[Bottleneck, GateResult]
    notes: tuple[str, ...]
    hbm: bool = False  # Memory through GPU memory bandwidth (:func:`_hbm`)
    computing: float | None = None  # the GPUs' busy share where their DRAM activity says it is compute

    def hbm_bound(self) -> bool:
        """Memory through GPU memory bandwidth (in-kernel), not host memory pressure; also when unobservable."""
        return self.hbm


def _hbm(reads: GateInput, g: GateResult) -> bool:
    """HBM-bound kernels keep the GPUs busy: their cost is not idle time, so the x1.15 floor does not apply.

    Their evidence holding counts whatever else holds beside it: a node faulting pages for another
    reason does not make the kernels' own memory traffic a host-memory stall.
    """
    return streams_hbm(reads) or (not g.holds and g.unobserved is not None)


def _computing(reads: GateInput) -> float | None:
    """The GPUs' busy share where they are busy (over ``GPUS_WAIT``) and their DRAM activity is read.

    HBM-bound kernels keep the GPUs busy and show in DRAM activity: where Memory's evidence then fails,
    the busy time is compute.
    """
    busy = reads.busy
    return busy if busy is not None and busy > GPUS_WAIT and reads.f("dram_active.mean") is not None else None


def check_window(window: JobWindow, x: FloatArray, probabilities: Mapping[str, float]) -> Checked:
    """Gate the classifier's probabilities of one window by its evidence and its step-time account.

    Args:
        window: the job window.
        x: its feature row.
        probabilities: class name -> the classifier's probability.

    Returns:
        The checked probabilities (summing to 1, or all 0 when no class's evidence holds).
    """
    phases = segment_phases(window)
    reads = GateInput(x, phases.busy, exposed_comm(phases), phases.cpu_plateau)
    gates = holding(reads)
    # A class whose mechanism is unobservable here is neither confirmed nor ruled out.
    open_classes = {c: r.holds or r.unobserved is not None for c, r in gates.items()}
    probs = {c.value: float(probabilities.get(c.value, 0.0)) for c in CLASSES}
    notes = list(phases.notes()) + _waits_to_their_owners(reads, gates, probs)
    # the account shares the idle time by the probabilities the waits' owners left, so the stall floor
    # below reads the class the moves named
    account = step_account(phases, probs, open_classes)
    top = max(CLASSES, key=lambda c: probs[c.value])
    for c in CLASSES:
        if probs[c.value] > 0 and not gates[c].holds:
            if c is top:
                notes.append(_ruled_out(c, gates[c]) if not open_classes[c] else _unconfirmed(c, gates[c]))
            if not open_classes[c]:
                probs[c.value] = 0.0
    hbm = _hbm(reads, gates[Bottleneck.MEMORY])
    if account is not None:
        for c in _STALLS:
            if c is Bottleneck.MEMORY and hbm:
                continue
            gain = stall_ceiling(c, x, account)
            if probs[c.value] > 0 and gain < STALL_FLOOR:
                # The mass goes to GPU only when the GPUs are busy enough to bind; several small stalls
                # sharing a large idle time are not a GPU-bound job.
                gpu_binds = gates[Bottleneck.GPU].holds
                if c is top:
                    notes.append(
                        f"The {c.value} pattern is there, but removing it would gain at most x{gain:.2f} "
                        f"(< x{STALL_FLOOR:.2f})" + (": the GPUs bind, so the job is GPU-bound." if gpu_binds else ".")
                    )
                if gpu_binds:
                    probs[Bottleneck.GPU.value] += probs[c.value]
                probs[c.value] = 0.0
        notes.append(account.describe())
    if not open_classes[top] and max(probs.values()) < RUNNER_UP_MIN:
        probs = dict.fromkeys(probs, 0.0)
    named = max(CLASSES, key=lambda c: probs[c.value])
    if named is not top and probs[named.value] > 0 and not gates[named].holds:
        # the runner-up named in the favourite's place is open only because its signal was not
        # collected: the verdict says so, as it does for a favourite
        notes.append(_unconfirmed(named, gates[named]))
    total = sum(probs.values())
    if total > 0:
        probs = {k: v / total for k, v in probs.items()}
    return Checked(probs, account, gates, tuple(notes), hbm, _computing(reads))


def _waits_to_their_owners(g: GateInput, gates: Mapping[Bottleneck, GateResult], probs: dict[str, float]) -> list[str]:
    """Each wait's probability moved to the class it belongs to (``probs`` in place); the notes."""
    rules = (
        waits_behind_a_slowed_gpu,
        waits_on_the_links,
        busy_at_idle_power,
        busy_streaming_memory,
        cpu_waits_on_faults,
        io_waits_on_swap,
        pinned_while_gpus_wait,
    )
    return [note for rule in rules for note in rule(g, gates, probs)]


def _ruled_out(cls: Bottleneck, g: GateResult) -> str:
    unread = f"; {g.unread}" if g.unread else ""
    if g.best is None:
        return f"{cls.value} ruled out: {g.what}{unread}."
    return (
        f"{cls.value} ruled out: its best evidence ({g.what}, {g.best}) reads {100 * g.level:.0f} % of the level "
        f"that implies it{unread}."
    )


def _unconfirmed(cls: Bottleneck, g: GateResult) -> str:
    return f"{cls.value} not confirmed: {g.unobserved}, and no other signal implies it; the verdict rests on the model."


# A favourite whose best evidence reads under this share of its level is plainly absent, not at a
# knife-edge (remote reads flat at 0.98 of their plateau level, a right favourite just missing).
PLAINLY_ABSENT = 0.5


def leans_to(checked: Checked, original: Mapping[str, float]) -> Bottleneck:
    """The class a verdict with no class left points to: the one stall class whose evidence holds where
    the model's favourite has plainly none, else the model's favourite.

    The reason then names that class ("the evidence points most towards IO"), and the pointer (and the
    evidence shown beside an abstention) says the same rather than a class the checks ruled out. With
    several stalls' evidence holding, or none, the evidence does not choose; with the favourite's just
    under its level, the favourite is as likely right as the checks: the favourite stands.

    CPU and Memory are exceptions, where what would bind shows in what every such node collects. Loaders
    at their ceiling show in the CPU accounting (a flat plateau, throttling, a full node), so a CPU
    favourite whose evidence fails beside IO's points to IO: a reader's waits can leave no trace (readers
    asleep on sockets raise no IO pressure), so IO's evidence failing stays a knife-edge. A CPU favourite
    whose evidence is plainly absent, with no one stall's evidence holding, gives way to the model's next
    choice. HBM-bound kernels show in DRAM activity, so a Memory favourite whose evidence fails on busy
    GPUs whose DRAM activity is read points to GPU (:func:`_computing`).
    """
    return _pointer(checked, original)[0]


# Which rule of :func:`leans_to` chose the pointer: the reason (:func:`leaning`) says why by it.
_Rule = Literal["io", "computing", "held", "next", "favourite"]


def _pointer(checked: Checked, original: Mapping[str, float]) -> tuple[Bottleneck, _Rule]:
    favourite = Bottleneck(max(original.items(), key=lambda kv: kv[1])[0])
    held = [c for c in _STALLS if checked.gates[c].holds]
    own = checked.gates.get(favourite)
    if favourite is Bottleneck.CPU and _ruled_out_beside_io(checked):
        return Bottleneck.IO, "io"
    if favourite is Bottleneck.MEMORY and _ruled_out_on_computing_gpus(checked):
        return Bottleneck.GPU, "computing"
    if len(held) == 1 and (own is None or own.level < PLAINLY_ABSENT):
        return held[0], "held"
    if favourite is Bottleneck.CPU and _plainly_absent_cpu(checked):
        return _next_choice(original), "next"
    return favourite, "favourite"


def _plainly_absent_cpu(checked: Checked) -> bool:
    cpu = checked.gates[Bottleneck.CPU]
    return cpu.unobserved is None and cpu.level < PLAINLY_ABSENT


def _next_choice(original: Mapping[str, float]) -> Bottleneck:
    """The model's most probable class after CPU."""
    return max((c for c in CLASSES if c is not Bottleneck.CPU), key=lambda c: original.get(c.value, 0.0))


def _ruled_out_beside_io(checked: Checked) -> bool:
    cpu = checked.gates[Bottleneck.CPU]
    return not cpu.holds and cpu.unobserved is None and checked.gates[Bottleneck.IO].holds


def _ruled_out_on_computing_gpus(checked: Checked) -> bool:
    memory = checked.gates[Bottleneck.MEMORY]
    return not memory.holds and memory.unobserved is None and checked.computing is not None


def leaning(checked: Checked, original: Mapping[str, float]) -> str:
    """Which way the evidence points when no class is left: the classes whose gates come closest, or
    the class an exception of :func:`leans_to` points to."""
    ranked = sorted(
        ((g.level, c) for c, g in checked.gates.items() if c is not Bottleneck.GPU and g.best is not None),
        key=lambda t: -t[0],
    )
    model_top = max(original.items(), key=lambda kv: kv[1])
    favourite, (pointer, rule) = Bottleneck(model_top[0]), _pointer(checked, original)
    if rule == "computing" and checked.computing is not None:
        own = checked.gates[favourite]
        return (
            f"the model leaned to {favourite.value} ({model_top[1]:.2f}), whose evidence does not hold ({own.what}: "
            f"{100 * own.level:.0f} % of the level that implies it), on GPUs busy {100 * checked.computing:.0f} % "
            "of the time with their DRAM activity read: HBM-bound kernels would show there, so the busy time is "
            "compute and the evidence points to GPU"
        )
    if rule == "next":
        own = checked.gates[favourite]
        return (
            f"the model leaned to CPU ({model_top[1]:.2f}), whose evidence is plainly absent ({own.what}: "
            f"{100 * own.level:.0f} % of the level that implies it), and CPU-bound loaders show in the CPU "
            f"accounting: the verdict points to the model's next choice, {pointer.value} "
            f"({original.get(pointer.value, 0.0):.2f})"
        )
    if not ranked:
        return f"the model leaned to {model_top[0]} ({model_top[1]:.2f}) but no signal implies any class"
    cls: Bottleneck
    level, cls = ranked[0]
    if rule == "io":  # IO for a CPU favourite, whatever reads higher
        level, cls = checked.gates[pointer].level, pointer
    g = checked.gates[cls]
    pointing = (
        f"the evidence points most towards {cls.value} ({g.what}: {100 * level:.0f} % of the level that implies it)"
    )
    top = checked.gates.get(Bottleneck(model_top[0]))
    if top is not None and top.holds:  # its evidence holds: the step-time account dropped it
        return (
            f"the model leaned to {model_top[0]} ({model_top[1]:.2f}), whose evidence holds ({top.what}: "
            f"{100 * top.level:.0f} % of the level that implies it), but removing it would gain less than "
            f"x{STALL_FLOOR:.2f} and the GPUs are not busy enough to bind"
        )
    if level >= 1.0:  # that class's evidence holds, but the model gives it too little to name it
        return (
            f"the model leaned to {model_top[0]} ({model_top[1]:.2f}), whose evidence does not hold; {pointing}, "
            f"a class the model gives {original.get(cls.value, 0.0):.2f}"
        )
    return f"no class's evidence holds: the model leaned to {model_top[0]} ({model_top[1]:.2f}); {pointing}"
