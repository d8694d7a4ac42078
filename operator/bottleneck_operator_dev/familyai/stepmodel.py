"""The training step as overlapping stages, and what limits it, measured by making each ample.

Per pod and latent time, each stage has a duration per step (seconds):

- ``io``: reading the step's samples from storage; ``cpu``: decoding them in the loader workers
  (the two overlap within the workers, imperfectly);
- ``launch``: the host thread dispatching kernels; ``compute``: dense and tiny kernels; ``hbm``:
  memory-bound kernels; ``h2d``: host-to-device copies, partly hidden under device work;
- ``pcie_comm``, ``nvlink``, ``net``: the collectives inside a node (over PCIe or NVLink) and
  between nodes, hidden under the backward pass up to the Job's overlap;
- ``host_mem``: the trainer stalled on major faults under host memory pressure.

The input pipeline runs ahead of the device (prefetch), so a pod's step is the longer of the two
plus its stalls; the Job's step is its slowest pod's (collectives synchronise them). The limiting
class is the one whose stages, made ample (zero), raise the Job's steps per second the most.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyai.hardware import PCIE_BW
from bottleneck_operator_dev.familyai.plan import Plan
from bottleneck_operator_dev.familyai.timeline import Timeline

FloatArray = npt.NDArray[np.float64]
Stages = dict[str, FloatArray]
TRANSFERS = frozenset({"io", "h2d", "pcie_comm", "nvlink", "net"})

GROUPS: dict[Bottleneck, tuple[str, ...]] = {
    Bottleneck.IO: ("io",),
    Bottleneck.CPU: ("cpu",),
    Bottleneck.INTERCONNECT: ("h2d", "pcie_comm", "nvlink", "net"),
    Bottleneck.GPU: ("compute", "launch"),
    Bottleneck.MEMORY: ("hbm", "host_mem"),
}
SUBGROUPS: dict[Bottleneck, dict[Mechanism, tuple[str, ...]]] = {
    Bottleneck.INTERCONNECT: {
        Mechanism.PCIE: ("h2d", "pcie_comm"),
        Mechanism.NVLINK: ("nvlink",),
        Mechanism.NETWORK: ("net",),
    },
    Bottleneck.GPU: {Mechanism.COMPUTE: ("compute",), Mechanism.LAUNCH_BOUND: ("launch",)},
    Bottleneck.MEMORY: {Mechanism.HBM_BANDWIDTH: ("hbm",), Mechanism.HOST_MEMORY_PRESSURE: ("host_mem",)},
}


@dataclass(frozen=True)
class Links:
    """Per-GPU link figures the stages and the counters share (B/s, one direction)."""

    pcie: float
    nvlink: float
    intra_bytes: float  # collective bytes per GPU per step inside a node, each direction
    node_bytes: float  # collective bytes per node per step between nodes, each direction


def links(plan: Plan) -> Links:
    g, m = plan.gpus_per_pod, plan.pods
    share = 0.5 if g >= 2 and plan.gpu.per_node == 8 else 1.0  # two GPUs behind one PCIe switch
    grads = plan.grad_bytes * (g if plan.tp_bytes > 0 else 1)
    return Links(
        pcie=PCIE_BW[plan.gpu.pcie_gen] * share,
        nvlink=plan.gpu.nvlink_bw / 2,
        intra_bytes=plan.comm_factor * 2 * plan.grad_bytes * (g - 1) / g + plan.tp_bytes,
        node_bytes=(plan.comm_factor * 2 * grads * (m - 1) / m) if m > 1 else 0.0,
    )


def cpu_caps(plan: Plan, tl: Timeline) -> dict[Mechanism, FloatArray]:
    """Cores the loaders can use, by what caps them (P, N)."""
    main = plan.gpus_per_pod * (1.0 if plan.spin_sync else 0.5)
    shape = tl.neigh_cpu.shape
    limit = np.inf if plan.cpu_limit is None else max(plan.cpu_limit - main, 0.3)
    return {
        Mechanism.TOO_FEW_WORKERS: np.full(shape, float(plan.workers)),
        Mechanism.THROTTLED: np.full(shape, limit),
        Mechanism.SATURATED: np.maximum(plan.ncpu * (1.0 - tl.neigh_cpu) - main - 1.0, 0.3),
    }


def stage_series(plan: Plan, tl: Timeline, clock: FloatArray) -> Stages:
    """Each stage's seconds per step, per pod and latent time (P, N); ``clock`` is per pod (P,)."""
    g, gpu, lk = plan.gpus_per_pod, plan.gpu, links(plan)
    peak = gpu.dense_bf16 * (0.5 if plan.tf32 else 1.0) * plan.mfu
    ones = np.ones_like(tl.neigh_cpu)
    cores = np.minimum.reduce(list(cpu_caps(plan, tl).values())) * plan.par_eff
    intra_bw = lk.nvlink * 0.8 if gpu.nvlink_bw else lk.pcie * 0.65
    st: Stages = {
        "compute": ones * (plan.flop / (peak * clock[:, None]) + plan.kernels * plan.k_exec),
        "launch": ones * plan.kernels * plan.launch_cost,
        "hbm": ones * plan.hbm_bytes / (gpu.hbm_bw * 0.85),
        "h2d": ones * plan.batch * plan.decoded_bytes / (lk.pcie * plan.h2d_eff),
        "nvlink": ones * (lk.intra_bytes / intra_bw if gpu.nvlink_bw else 0.0),
        "pcie_comm": ones * (0.0 if gpu.nvlink_bw else lk.intra_bytes / intra_bw),
        "net": ones * (lk.node_bytes / plan.node_net_bw if plan.pods > 1 else 0.0),
        "io": plan.batch * g * plan.stored_bytes * (1 - plan.cache_hit) / (plan.storage_bw * (1.0 - tl.neigh_io)),
        "cpu": plan.batch * g * plan.cpu_s / cores,
        "host_mem": ones * plan.fault_per_step * plan.fault_latency,
    }
    ev = tl.evaluating[None, :]
    for name, factor in (("compute", 0.35), ("hbm", 0.4), ("launch", 0.4), ("cpu", 0.7)):
        st[name] = np.where(ev, st[name] * factor, st[name])
    for name in ("nvlink", "pcie_comm", "net"):
        st[name] = np.where(ev, st[name] * 0.03, st[name])
    # transfers only ever get slower than their links allow (contention), never faster
    return {k: v * (np.maximum(tl.mult[k], 1.0) if k in TRANSFERS else tl.mult[k]) for k, v in st.items()}


@dataclass(frozen=True)
class Step:
    """The step's timing per latent time: the Job's step ``T`` (N,) and each pod's parts (P, N)."""

    T: FloatArray
    local: FloatArray
    exposed: FloatArray
    wait: FloatArray
    device: FloatArray
    inputs: FloatArray


def step_times(st: Stages, plan: Plan, alive: npt.NDArray[np.bool_], ample: tuple[str, ...] = ()) -> Step:
    """The Job's step time with the ``ample`` stages taking no time."""
    s = {k: (np.zeros_like(v) if k in ample else v) for k, v in st.items()}
    inputs = np.maximum(s["io"], s["cpu"]) + 0.15 * np.minimum(s["io"], s["cpu"])
    device = np.maximum(s["launch"], s["compute"] + s["hbm"])
    o = plan.h2d_overlap
    fed = np.maximum(device, s["h2d"]) + (1 - o) * np.minimum(device, s["h2d"])
    local = np.maximum(inputs, fed) + s["host_mem"]
    comm = s["pcie_comm"] + s["nvlink"] + s["net"]
    exposed = np.maximum(comm - plan.overlap * 0.66 * (s["compute"] + s["hbm"]), 0.0)
    per_pod = np.where(alive, local + exposed, 0.0)
    # no pod running: no steps (a step "as long as forever", so every per-step rate is zero)
    t = np.where(alive.any(axis=0), np.maximum(per_pod.max(axis=0), 1e-6), 1e9)
    wait = np.where(alive, t[None, :] - per_pod, 0.0)
    return Step(T=t, local=local, exposed=exposed, wait=wait, device=device, inputs=inputs)


def _progress(st: Stages, plan: Plan, tl: Timeline, weight: FloatArray, ample: tuple[str, ...]) -> float:
    return float(np.sum(weight / step_times(st, plan, tl.alive, ample).T))


def measure(
    st: Stages, plan: Plan, tl: Timeline, weight: FloatArray
) -> tuple[Bottleneck, Mechanism, dict[Bottleneck, float]]:
    """The class whose stages, made ample, speed the Job up most; its mechanism; every class's speed-up."""
    base = _progress(st, plan, tl, weight, ())
    speedups = {c: _progress(st, plan, tl, weight, stages) / base for c, stages in GROUPS.items()}
    label = max(speedups, key=lambda c: speedups[c])
    if label in SUBGROUPS:
        subs = SUBGROUPS[label]
        mechanism = max(subs, key=lambda m: _progress(st, plan, tl, weight, subs[m]))
    elif label is Bottleneck.IO:
        mechanism = Mechanism.LOCAL_DISK if plan.storage.local else Mechanism.NETWORK_STORAGE
    else:
        caps = cpu_caps(plan, tl)
        mechanism = min(caps, key=lambda m: float(np.mean(caps[m])))
    return label, mechanism, speedups
