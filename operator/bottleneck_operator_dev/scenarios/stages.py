"""The second family's stage-time model: one training step as GPU, input, communication and memory time.

A step takes ``t_gpu`` seconds of kernels, ``t_comm`` of collectives (a share ``overlap`` hidden
behind the backward pass), ``t_h2d`` of copying the batch host to device, ``t_cpu`` of
decoding/augmentation spread over the loader's cores, ``t_io`` of reading at the source's deliverable
bandwidth and ``t_mem`` of host-memory stalls (swap-in and reclaim, which block the whole process).
With loader workers the input runs beside the GPU; with ``num_workers=0`` it runs in the training
loop, in series with the kernels. Copies from pageable memory are synchronous, in series with the
kernels; from pinned memory with ``non_blocking`` they run on a copy engine beside them.

The ground truth is the stage whose removal speeds the step up most; a job is GPU-bound when no other
stage would gain more than 15 %. Plans are drawn with the target stage favoured and kept only when
the computed truth agrees, so the label always follows from the stage times, never from the draw.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from bottleneck_operator.contract.verdict import Bottleneck

GPU_GAIN = 1.15  # another stage's removal must gain more than this for the job not to be GPU-bound


@dataclass(frozen=True)
class StageTimes:
    """Seconds per step of each stage (at the job's nominal speed)."""

    t_gpu: float
    t_comm: float
    overlap: float
    t_cpu: float
    t_io: float
    t_mem: float
    serial_input: bool  # num_workers=0: the input runs in the training loop
    t_h2d: float = 0.0
    pinned: bool = True  # pinned host memory: copies overlap the kernels

    def exposed_comm(self) -> float:
        """Collective time the compute does not hide."""
        return max(self.t_comm * (1.0 - self.overlap), self.t_comm - self.t_gpu)

    def input_time(self) -> float:
        if self.serial_input:
            return self.t_cpu + self.t_io
        return max(self.t_cpu, self.t_io)

    def device_time(self) -> float:
        """Kernels, exposed collectives and the host-to-device copies the kernels wait for."""
        kernels = self.t_gpu + self.exposed_comm()
        return max(kernels, self.t_h2d) if self.pinned else kernels + self.t_h2d

    def step(self) -> float:
        """Seconds per step."""
        device = self.device_time()
        if self.serial_input:
            return device + self.input_time() + self.t_mem
        return max(device, self.input_time()) + self.t_mem


def _without(st: StageTimes, stage: str) -> StageTimes:
    # moving bytes between host and GPU or between GPUs is one class: removing it removes both
    return replace(
        st,
        t_comm=0.0 if stage == "t_comm" else st.t_comm,
        t_h2d=0.0 if stage == "t_comm" else st.t_h2d,
        t_cpu=0.0 if stage == "t_cpu" else st.t_cpu,
        t_io=0.0 if stage == "t_io" else st.t_io,
        t_mem=0.0 if stage == "t_mem" else st.t_mem,
    )


def gains(st: StageTimes) -> dict[Bottleneck, float]:
    """Speed-up of the step if each non-GPU stage took no time."""
    base = st.step()
    out = {
        Bottleneck.INTERCONNECT: base / _without(st, "t_comm").step(),
        Bottleneck.CPU: base / _without(st, "t_cpu").step(),
        Bottleneck.IO: base / _without(st, "t_io").step(),
        Bottleneck.MEMORY: base / _without(st, "t_mem").step(),
    }
    return out


def truth(st: StageTimes) -> tuple[Bottleneck, float]:
    """The bounding class and its margin (its gain over the runner-up's, as a ratio minus one)."""
    g = gains(st)
    ranked = sorted(g.items(), key=lambda kv: kv[1], reverse=True)
    (best, gain), (_, second) = ranked[0], ranked[1]
    if gain <= GPU_GAIN:
        return Bottleneck.GPU, GPU_GAIN / gain - 1.0
    return best, gain / max(second, GPU_GAIN) - 1.0
