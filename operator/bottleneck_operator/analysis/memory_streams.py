"""Busy GPUs whose device memory is read or written most of the time stream HBM.

Without DCGM's profiling fields nothing says what a busy GPU's kernels do: ``GPU_UTIL`` counts a
kernel that streams memory as it counts one that computes. NVML's memory utilization
(``DCGM_FI_DEV_MEM_COPY_UTIL``), which every GPU reports, says how much of the time device memory was
read or written: the real HBM-bound loops read 1.00 and 0.72 of the time, the compute-bound ones 0.06-0.42
(tests/data/gpu-hbm, gpu-streamed; gpu-compute-fp32, gpu-compute, gpu-transformer). Where the DRAM
activity field is collected, the classifier weighs it against the tensor pipes' and this move does not apply.
"""

from __future__ import annotations

from collections.abc import Mapping

from bottleneck_operator.analysis.collective_waits import BUSY_THROUGHOUT, move_probability
from bottleneck_operator.analysis.evidence_gates import MEMORY_BUSY, GateInput, GateResult, memory_busy
from bottleneck_operator.contract.verdict import Bottleneck


def busy_streaming_memory(g: GateInput, gates: Mapping[Bottleneck, GateResult], probs: dict[str, float]) -> list[str]:
    """GPUs busy throughout with device memory busy 0.55 of the time or more, and no DRAM field: GPU's
    probability moves to Memory (HBM bandwidth). ``probs`` is changed in place; returns the note when
    the move dethrones the model's favourite.

    It reads the device memory's gate itself (:func:`.evidence_gates.memory_busy`, None where DRAM
    activity is read) rather than ``gates``' best reading: Memory's evidence holds on it whichever of
    Memory's gates (a node faulting pages for another reason) reads highest.
    """
    gpu, memory = Bottleneck.GPU, Bottleneck.MEMORY
    share = memory_busy(g)
    if share is None or share < MEMORY_BUSY or probs[gpu.value] <= 0:
        return []
    if g.busy is None or g.busy < BUSY_THROUGHOUT:
        return []
    return move_probability(
        probs,
        gpu,
        memory,
        f"The GPUs read busy {100 * g.busy:.0f} % of the time with device memory read or written "
        f"{100 * share:.0f} % of it: the kernels stream GPU memory, so the job is bound by HBM bandwidth.",
    )
