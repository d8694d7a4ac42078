"""Where one running step's wall time goes: the timeline the exporters observe while the Job trains.

:mod:`.stages` says how long each stage takes; this module lays them on one step as they overlap
(the same rules as :func:`.stages.step_time`, pauses left out: those are phases of their own) and
turns them into the shares of time each engine is busy.
"""

from __future__ import annotations

from dataclasses import dataclass

from bottleneck_operator_dev.familyab.config import Config
from bottleneck_operator_dev.familyab.stages import MAIN_CORES, Stages

# Phases of the Job's timeline; exporters see different levels in each.
TRAIN, CKPT, EVAL, DOWN = 0, 1, 2, 3
PHASES = 4


@dataclass(frozen=True)
class Breakdown:
    """One training step laid out in time (seconds), and rates per second derived from it.

    Attributes:
        step: wall seconds of one step while training (memory stalls included, pauses not).
        math, hbm: GPU seconds in math-bound and memory-bound kernels.
        comm: seconds NCCL kernels run (overlapped or not); ``comm_exposed`` the part that is not hidden.
        h2d: seconds of host-to-device copies.
        read_wait: share of time a loader worker spends blocked on storage.
        loader_cores: cores the loaders keep busy.
        main_cores: cores the training processes keep busy (loop, launches, sockets).
        stall: share of time the pod's tasks stall on memory.
    """

    step: float
    math: float
    hbm: float
    comm: float
    comm_exposed: float
    h2d: float
    read_wait: float
    loader_cores: float
    main_cores: float
    stall: float

    @property
    def busy(self) -> float:
        """Share of the step some compute kernel runs."""
        return min(1.0, (self.math + self.hbm) / self.step)

    @property
    def kernel_share(self) -> float:
        """Share of the step any kernel runs (compute or communication): what GPU_UTIL measures."""
        return min(1.0, (self.math + self.hbm + self.comm_exposed) / self.step)


def breakdown(cfg: Config, st: Stages) -> Breakdown:
    """The training step of ``cfg`` as its exporters would see it."""
    loader = max(st.read, st.cpu) + st.coupling * min(st.read, st.cpu)
    busy = st.math + st.hbm
    gpu = max(busy, st.launch)
    h2d_exposed = st.h2d * (1 - st.overlap_h2d) + max(0.0, st.h2d * st.overlap_h2d - gpu)
    comm = st.intra + st.inter
    comm_exposed = max(comm * st.tail, comm - st.overlap_comm * (2.0 / 3.0) * gpu)
    core = max(loader, gpu + h2d_exposed + comm_exposed)
    step = core / (1.0 - min(0.9, st.host_mem))
    flows = st.flows
    loader_cores = min(flows.cores, flows.cpu_work / step)
    # Most of a core per training process, all of it when it spends the step launching kernels;
    # TCP collectives cost about a core per 10 Gb/s (assumed).
    launch_share = min(1.0, st.launch / step)
    tcp = 0.0
    if cfg.nic and not cfg.nic.rdma:
        tcp = flows.inter_bytes_node / min(cfg.pods, cfg.pods_per_node) / step / 1.25e9
    main = cfg.gpus_per_pod * (MAIN_CORES + (1.0 - MAIN_CORES) * launch_share) + tcp
    return Breakdown(
        step=step,
        math=st.math,
        hbm=st.hbm,
        comm=comm,
        comm_exposed=comm_exposed,
        h2d=st.h2d,
        read_wait=min(1.0, st.read / step) if cfg.storage.kernel_client else 0.0,
        loader_cores=loader_cores,
        main_cores=main,
        stall=min(0.9, st.host_mem),
    )
