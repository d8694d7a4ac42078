"""Whose is the wait of a pod with processes pinned at a full core while its GPUs idle: the CPU's.

A reader waiting on storage sleeps (in D state on a file system, in S state on a socket), so none of
its processes holds a core: in both scenario families' IO-bound Jobs the share of the pod's CPU time in
processes at a full core (the collector's ``busy_core_share``) is under 0.17 at its 95th percentile,
in the real IO recordings 0.00. A loader's workers, or a ``num_workers=0`` main process, hold theirs:
family A's too-few-workers Jobs 0.72-1.13 (5th-95th percentile), family B's 0.19-0.99, the real
loader loops 0.79-1.0 (tests/data/gpu-loader-busy, gpu-workers0*, real-loader). So a pod that keeps
processes at a full core while its GPUs wait is paced by its CPU, whatever IO pressure its workers'
reads between decodes add.
"""

from __future__ import annotations

from collections.abc import Mapping

from bottleneck_operator.analysis.collective_waits import move_probability
from bottleneck_operator.analysis.evidence_gates import GPUS_WAIT, GateInput, GateResult
from bottleneck_operator.contract.verdict import Bottleneck

# The share of the pod's CPU time in processes at a full core from which it is not waiting on storage.
PINNED_SHARE = 0.3


def pinned_while_gpus_wait(g: GateInput, gates: Mapping[Bottleneck, GateResult], probs: dict[str, float]) -> list[str]:
    """A pod with processes pinned at a full core while its GPUs wait is CPU-bound: IO's probability moves to CPU.

    Only where the collector reports ``PINNED_SHARE`` of the pod's CPU time or more in processes at a
    full core and the GPUs are busy ``GPUS_WAIT`` of training samples or less. ``probs`` (class name ->
    probability) is changed in place; returns the note for the verdict when the move dethrones the
    model's favourite.
    """
    io, cpu = Bottleneck.IO, Bottleneck.CPU
    pinned = g.f("busy_core_share.mean")
    if pinned is None or pinned < PINNED_SHARE or g.busy is None or g.busy > GPUS_WAIT or probs[io.value] <= 0:
        return []
    return move_probability(
        probs,
        io,
        cpu,
        f"The pod waits on reads, but {100 * min(pinned, 1.0):.0f} % of its CPU time is in processes at a full core "
        f"while the GPUs are busy {100 * g.busy:.0f} % of the time: a reader waiting on storage holds no core, so "
        "the loader's CPU paces the job.",
    )
