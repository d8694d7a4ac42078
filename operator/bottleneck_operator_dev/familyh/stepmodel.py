"""One training iteration as a pipeline of stages, and which stage bounds it.

The account (per rank, one micro-batch; seconds):

- the input pipeline runs in ``workers`` loader processes ahead of the trainer. Each worker reads a
  batch (``read_s``: latency and transfer, during which it uses no CPU), decodes it (``decode_s``
  CPU-seconds on one core) and may stall on memory (``worker_stall_s``). The loader delivers a batch
  every ``max((read + decode + stall) / workers, bytes / storage share, decode / cores)``: the
  workers' own pace, the storage's bandwidth, the cores the pod may use.
- the trainer's path: the exposed part of the host-to-device copy (``h2d_s``), the GPU's kernels
  (``tensor_s`` bound by math, ``hbm_s`` bound by memory bandwidth), the pipeline bubble as a share
  of them, the exposed collective time after overlap and gradient accumulation (``comm_s``) and
  the trainer's own memory stalls (``main_stall_s``).
- with prefetching the two run side by side: the iteration takes the longer of the two.

The label is the class whose stages, removed, shorten the iteration most (shared/DESIGN.md):
IO removes reading, CPU removes decoding, Interconnect removes copies and collectives, GPU removes
math-bound kernel time, Memory removes bandwidth-bound kernel time and memory stalls.
"""

from __future__ import annotations

from dataclasses import dataclass

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism


@dataclass(frozen=True)
class Stages:
    """Per-rank stage times of one iteration (see the module).

    Attributes:
        read_s: one worker's read time for one batch (latency plus transfer at its own pace).
        storage_s: the batch's bytes over the rank's share of the storage bandwidth.
        decode_s: CPU-seconds to decode and augment one batch on one core.
        worker_stall_s: memory stall (reclaim, swap-in) per batch in a worker.
        workers: loader processes per rank.
        cores: cores the rank's loader can use (limit or free cores, after the trainer's own).
        cores_from_limit: whether ``cores`` is set by a CPU limit (CFS throttling) rather than the node.
        h2d_s: exposed host-to-device copy time.
        tensor_s: math-bound kernel time.
        hbm_s: memory-bandwidth-bound kernel time.
        bubble: pipeline-parallel idle as a share of kernel time.
        comm_s: exposed collective time.
        comm_scope: where the collective's bytes go: "nvlink", "pcie" or "network".
        main_stall_s: the trainer's own memory stalls.
    """

    read_s: float
    storage_s: float
    decode_s: float
    worker_stall_s: float
    workers: int
    cores: float
    cores_from_limit: bool
    h2d_s: float
    tensor_s: float
    hbm_s: float
    bubble: float
    comm_s: float
    comm_scope: str
    main_stall_s: float

    @property
    def input_s(self) -> float:
        """Seconds between batches the loader can deliver."""
        own_pace = (self.read_s + self.decode_s + self.worker_stall_s) / max(self.workers, 1)
        return max(own_pace, self.storage_s, self.decode_s / max(self.cores, 1e-3))

    @property
    def kernels_s(self) -> float:
        return (self.tensor_s + self.hbm_s) * (1.0 + self.bubble)

    @property
    def trainer_s(self) -> float:
        """Seconds the trainer's own path takes per iteration."""
        return self.h2d_s + self.kernels_s + self.comm_s + self.main_stall_s

    @property
    def step_s(self) -> float:
        return max(self.input_s, self.trainer_s)


def _step(s: Stages, io: bool, cpu: bool, link: bool, gpu: bool, mem: bool) -> float:
    """The iteration time with the stages of the flagged classes removed (written out: it runs in bisections)."""
    read, storage = (0.0, 0.0) if io else (s.read_s, s.storage_s)
    decode = 0.0 if cpu else s.decode_s
    w_stall, m_stall, hbm = (0.0, 0.0, 0.0) if mem else (s.worker_stall_s, s.main_stall_s, s.hbm_s)
    tensor = 0.0 if gpu else s.tensor_s
    h2d, comm = (0.0, 0.0) if link else (s.h2d_s, s.comm_s)
    loader = max((read + decode + w_stall) / max(s.workers, 1), storage, decode / max(s.cores, 1e-3))
    return max(loader, h2d + (tensor + hbm) * (1.0 + s.bubble) + comm + m_stall)


LABELLED = (Bottleneck.IO, Bottleneck.CPU, Bottleneck.INTERCONNECT, Bottleneck.GPU, Bottleneck.MEMORY)


def speedups(stages: Stages) -> dict[Bottleneck, float]:
    """How much faster the iteration gets with each class's stages removed (factors >= 1).

    IO removes reading, CPU decoding, Interconnect copies and collectives, GPU math-bound kernel
    time, Memory bandwidth-bound kernel time and memory stalls.
    """
    step = _step(stages, False, False, False, False, False)
    out = {}
    for k, cls in enumerate(LABELLED):
        flags = [j == k for j in range(len(LABELLED))]
        out[cls] = step / max(_step(stages, *flags), 1e-12)
    return out


def label_of(stages: Stages) -> tuple[Bottleneck, float, float]:
    """The bounding class, its speed-up when removed, and the runner-up's speed-up."""
    ranked = sorted(speedups(stages).items(), key=lambda kv: kv[1], reverse=True)
    return ranked[0][0], ranked[0][1], ranked[1][1]


def mechanism_of(stages: Stages, cls: Bottleneck, remote_storage: bool) -> Mechanism:
    """Which of the class's stages dominates, in the contract's mechanism names."""
    if cls is Bottleneck.IO:
        return Mechanism.NETWORK_STORAGE if remote_storage else Mechanism.LOCAL_DISK
    if cls is Bottleneck.CPU:
        own_pace = (stages.read_s + stages.decode_s + stages.worker_stall_s) / max(stages.workers, 1)
        if own_pace >= stages.decode_s / max(stages.cores, 1e-3):
            return Mechanism.TOO_FEW_WORKERS
        return Mechanism.THROTTLED if stages.cores_from_limit else Mechanism.SATURATED
    if cls is Bottleneck.INTERCONNECT:
        if stages.h2d_s >= stages.comm_s:
            return Mechanism.PCIE
        return {"nvlink": Mechanism.NVLINK, "pcie": Mechanism.PCIE}.get(stages.comm_scope, Mechanism.NETWORK)
    if cls is Bottleneck.MEMORY:
        stalls = stages.main_stall_s + stages.worker_stall_s / max(stages.workers, 1)
        return (
            Mechanism.HBM_BANDWIDTH if stages.hbm_s * (1 + stages.bubble) > stalls else Mechanism.HOST_MEMORY_PRESSURE
        )
    return Mechanism.COMPUTE
