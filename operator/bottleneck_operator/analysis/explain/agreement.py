"""Whether what a verdict says agrees with itself: its mechanism against its evidence, capacity and advice.

A verdict's mechanism and the items that explain it are built by different functions; they must read
the same definitions (:mod:`.datapath` for IO, :class:`..checks.reads.Reads` through the step account
for the measured waits), so that a report never names one mechanism and shows the signals of another.
:func:`disagreements` lists every such contradiction in one verdict; the tests and the evaluation's
invariants require none.
"""

from __future__ import annotations

from bottleneck_operator.analysis.explain.account import LINKS, link_wait
from bottleneck_operator.analysis.explain.advice import COMPUTE_ADVICE, LAUNCH_ADVICE
from bottleneck_operator.analysis.explain.candidates import speaks_for
from bottleneck_operator.analysis.explain.datapath import NETWORK_READS, STORAGE_READS
from bottleneck_operator.contract.verdict import Bottleneck, Mechanism, Verdict

# The data path's rates, each named by the way it says the data came (the candidates say their own).
_RATES: dict[str, Mechanism] = {
    "node_net_rx_bps": Mechanism.NETWORK_STORAGE,
    "sc_net_rx_bps": Mechanism.NETWORK_STORAGE,
    "read_bps": Mechanism.LOCAL_DISK,
}
_CARRIERS = {NETWORK_READS: Mechanism.NETWORK_STORAGE, STORAGE_READS: Mechanism.LOCAL_DISK}
_LINKS = {link: mech for mech, link in LINKS.items()}
# GPU advice whose precondition is one mechanism's: CUDA graphs for launches, more GPUs for compute.
_GPU_ADVICE = {LAUNCH_ADVICE: Mechanism.LAUNCH_BOUND, COMPUTE_ADVICE: Mechanism.COMPUTE}


def disagreements(v: Verdict) -> tuple[str, ...]:
    """Every item of ``v`` that speaks for another mechanism of its class than the one it names.

    Args:
        v: a verdict with its details.

    Returns:
        One sentence per contradiction; empty when the verdict agrees with itself (always for Unknown
        and for a verdict that names no mechanism).
    """
    mech, cls = v.mechanism, v.bottleneck
    if mech is None or cls is Bottleneck.UNKNOWN:
        return ()
    out = [
        f"evidence {e.signal} speaks for {other.value}"
        for e in v.evidence
        if (other := _speaks_for(cls, e.signal, e.message)) is not None and other is not mech
    ]
    for c in v.capacity:
        for what, other in _CARRIERS.items():
            if cls is Bottleneck.IO and f" of {what};" in c.message and other is not mech:
                out.append(f"capacity {c.resource} counts {what}, which is {other.value}")
    if cls is Bottleneck.GPU:
        for r in v.recommendations:
            other = _GPU_ADVICE.get(r.action)
            if other is not None and other is not mech:
                out.append(f"advice {r.action!r} is for {other.value}")
    if v.headroom is not None and cls is Bottleneck.INTERCONNECT:
        other = _link_of(v.headroom.basis)
        if other is not None and other is not mech:
            out.append(f"headroom measured on the link of {other.value}")
    return tuple(f"{cls.value}/{mech.value}: {s}" for s in out)


def _speaks_for(cls: Bottleneck, signal: str, message: str) -> Mechanism | None:
    if cls is Bottleneck.INTERCONNECT and signal == "wait_share":
        return _link_of(message)
    if cls is Bottleneck.IO and signal in _RATES:
        return _RATES[signal]
    return speaks_for(cls, signal)


def _link_of(text: str) -> Mechanism | None:
    """The mechanism of the link a measured interconnect wait names (its ``what``: "<link> bytes ...")."""
    for link, mech in _LINKS.items():
        if link_wait(link) in text:
            return mech
    return None
