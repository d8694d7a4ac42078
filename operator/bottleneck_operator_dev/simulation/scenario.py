"""The scenario of one simulated job: its hardware, workload and cluster conditions (drawn by :mod:`.draw`).

A scenario is drawn for a target class: first the hardware (GPU x storage x NIC, kept disjoint between
training and holdout draws), the workload and the node shapes, then the per-step time of every class
relative to the GPU's math time (the target slowest by the drawn margin, a runner-up, the rest below),
and finally the physical knobs that realise those times within published ranges (storage throughput,
decode cost, CPU quota, PCIe payload, gradient size, fault rate). Knobs that hit a physical limit
change the times; the label is then recomputed from the realised times and a draw whose label or
margin misses is redrawn.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import asdict, dataclass, field
from typing import Any

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.simulation import catalog as cat
from bottleneck_operator_dev.simulation.environment import Environment
from bottleneck_operator_dev.simulation.stages import StageTimes

MECHANISMS: dict[Bottleneck, tuple[str, ...]] = {
    Bottleneck.IO: ("io-storage",),
    Bottleneck.CPU: ("cpu-decode", "cpu-throttle"),
    Bottleneck.MEMORY: ("mem-host", "mem-dram"),
    Bottleneck.INTERCONNECT: ("ic-h2d", "ic-comm"),
    Bottleneck.GPU: ("gpu",),  # and "gpu-launch", chosen by the job's seed (see launch_bound)
}


def in_holdout(gpu: str, storage: str, nic_gbps: int) -> bool:
    """Whether a hardware combination is reserved for holdout draws (about one in five, by a stable hash)."""
    return zlib.crc32(f"{gpu}|{storage}|{nic_gbps}".encode()) % 5 == 0


@dataclass(frozen=True)
class Scenario:
    """Everything that defines one simulated job; plain values so it serialises as JSON.

    Per-step times are per GPU batch; rates are bytes/s; see ``stages.StageTimes`` for the stages.
    ``kernel_duty`` is the share of the GPU's step time in which kernels actually run: below 1 for
    launch-bound jobs, whose small kernels leave the GPU idle while the host launches the next one.
    """

    seed: int
    target: str
    mechanism: str
    workload: str
    gpu: str
    gpus_per_pod: int
    n_pods: int
    pods_per_node: int
    gpus_per_node: int
    node_cpus: int
    node_mem_bytes: float
    storage: str
    storage_cap_bps: float
    storage_bw_bps: float
    nic_gbps: int
    batch: int
    gpu_sps: float
    bytes_per_sample: float
    decode_core_s: float
    loader_cores: float
    cpu_limit: float | None
    h2d_bytes: float
    pcie_eff: float
    grad_bytes: float
    dram_ratio: float
    faults_per_sample: float
    fault_latency_s: float
    overlap_slack: float
    tensor_eff: float
    sm_eff: float
    kernel_duty: float
    times: StageTimes
    label: str
    margin: float
    runner_up: str
    env: Environment
    tags: tuple[str, ...] = field(default=())

    @property
    def n_nodes(self) -> int:
        return math.ceil(self.n_pods / self.pods_per_node)

    @property
    def world(self) -> int:
        return self.gpus_per_pod * self.n_pods

    @property
    def cpu_share(self) -> float:
        """The node's cores per pod on it: what a loader may use before it competes with its neighbours."""
        return self.node_cpus / self.pods_per_node

    @property
    def dcgm_fieldset(self) -> str:
        return self.env.dcgm_fieldset

    @property
    def scrape_interval(self) -> float:
        return self.env.scrape_interval

    def as_dict(self) -> dict[str, Any]:
        """The scenario as JSON-friendly data (for ``--labels`` files and debugging)."""
        return asdict(self)


def comm_seconds_per_byte(sc_gpu: str, gpus_on_node: int, n_nodes: int, nic_gbps: int) -> float:
    """Seconds a ring all-reduce takes per gradient byte (NVLink or PCIe in the node, the NIC between nodes)."""
    spec = cat.GPU_KINDS[sc_gpu].spec
    t = 0.0
    if gpus_on_node > 1:
        # NVLink figures are both directions summed; ~80 % bus efficiency. Without NVLink, P2P copies go
        # through the PCIe root complex at roughly a third of the link rate.
        intra = spec.nvlink_bps / 2 * 0.8 if spec.nvlink_bps else spec.pcie_bps * 0.35
        t += 2 * (gpus_on_node - 1) / gpus_on_node / intra
    if n_nodes > 1:
        t += 2 * (n_nodes - 1) / n_nodes / (nic_gbps * 1e9 / 8 * 0.85)
    return t


# One GPU-bound job in this many is launch-bound: small kernels the host cannot queue fast enough.
LAUNCH_BOUND_EVERY = 3


def launch_bound(target: Bottleneck, seed: int) -> bool:
    """Whether a job drawn for ``target`` is launch-bound.

    Decided by the job's seed rather than by a draw, so the other GPU-bound jobs of a seeded set keep
    every draw they had before launch-bound jobs existed.
    """
    return target is Bottleneck.GPU and seed % LAUNCH_BOUND_EVERY == 0


# Loader workers below this share of the pod's cores leave cores idle: the job has too few workers.
FEW_WORKERS_SHARE = 0.75


def true_mechanism(sc: Scenario) -> Mechanism | None:
    """How the scenario's bounding stage limits it, from the stage that is slowest and its cause."""
    label = Bottleneck(sc.label)
    t = sc.times
    if label is Bottleneck.GPU:
        return Mechanism.LAUNCH_BOUND if sc.mechanism == "gpu-launch" else Mechanism.COMPUTE
    if label is Bottleneck.IO:
        return Mechanism.NETWORK_STORAGE if cat.STORAGE_KINDS[sc.storage].network else Mechanism.LOCAL_DISK
    if label is Bottleneck.CPU:
        # A CFS quota below what the loader workers would use throttles them.
        if sc.cpu_limit is not None and (sc.mechanism == "cpu-throttle" or sc.cpu_limit < sc.loader_cores):
            return Mechanism.THROTTLED
        return Mechanism.TOO_FEW_WORKERS if sc.loader_cores < FEW_WORKERS_SHARE * sc.cpu_share else Mechanism.SATURATED
    if label is Bottleneck.MEMORY:
        return Mechanism.HOST_MEMORY_PRESSURE if t.host_mem >= t.dram else Mechanism.HBM_BANDWIDTH
    return _interconnect_mechanism(sc)


def _interconnect_mechanism(sc: Scenario) -> Mechanism:
    """PCIe for host-to-device copies; for the all-reduce, whichever link its time goes to."""
    if sc.times.h2d >= sc.times.comm:
        return Mechanism.PCIE
    spec = cat.GPU_KINDS[sc.gpu].spec
    gpn = sc.gpus_per_pod * sc.pods_per_node
    intra = comm_seconds_per_byte(sc.gpu, gpn, 1, sc.nic_gbps)
    inter = comm_seconds_per_byte(sc.gpu, 1, sc.n_nodes, sc.nic_gbps)
    if inter >= intra:
        return Mechanism.NETWORK
    return Mechanism.NVLINK if spec.nvlink_bps else Mechanism.PCIE
