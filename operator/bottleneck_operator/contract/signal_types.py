"""The vocabulary of the signal table (contract/signals.py): families, exporters, layouts, kinds.

A family groups signals by the exporter (and exporter configuration) that provides them; the first
family of each exporter stands for the exporter as a whole, whose label layout and scrape interval
every family of it shares. Nothing here names a signal: the table does.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Layout(StrEnum):
    """How an exporter labels its series, which decides how a plain read combines them per pod."""

    GPU = "gpu"  # one series per GPU, the workload in namespace/pod (or exported_*): mean over the pod's GPUs
    CONTAINER = "container"  # one series per container (cAdvisor): summed over the workload's containers
    POD = "pod"  # one series per pod, or per container of it (kube-state-metrics, the collector)
    NODE = "node"  # one series per node, CPU or device (node-exporter): the pod's node


class Family(StrEnum):
    """Where a signal comes from; a cluster may lack any of them.

    The first family of each exporter also stands for the exporter as a whole (its label layout,
    its scrape interval): ``Family.DCGM`` is dcgm-exporter, named by the DEV fields every GPU has.
    """

    DCGM_DEV = "dcgm_dev"  # dcgm-exporter DEV fields: present on every NVIDIA GPU
    DCGM_PROF = "dcgm_prof"  # PROF fields of dcgm-exporter's shipped counters files
    DCGM_PROF_SM = "dcgm_prof_sm"  # SM activity/occupancy: only with a custom counters file
    DCGM_PROF_NVLINK = "dcgm_prof_nvlink"  # NVLink PROF bytes: in neither shipped file
    DCGM_PROF_PIPES = "dcgm_prof_pipes"  # FP32/FP16 pipe activity: only with a custom counters file
    DCGM_POWER_CLOCKS = "dcgm_power_clocks"  # enforced power limit and clock-event reasons, where exported
    CADVISOR = "cadvisor"  # kubelet/cAdvisor container metrics
    CADVISOR_CFS = "cadvisor_cfs"  # CFS throttling: only for containers with a CPU limit
    KSM = "ksm"  # kube-state-metrics resource limits
    NODE = "node"  # node-exporter cpu/disk/memory/network
    NODE_PSI = "node_psi"  # node-exporter pressure (kernel >= 4.20)
    NODE_IB = "node_ib"  # node-exporter infiniband collector: RDMA traffic (InfiniBand, RoCE) netdev never sees
    SIDECAR = "sidecar"  # the collector injected into the pod
    # the pod's own network bytes: older collectors, and the project's recordings, lack them
    SIDECAR_NET = "sidecar_net"
    # An alias, not a member (iterating Family never yields it): dcgm-exporter as a whole.
    DCGM = "dcgm_dev"

    @property
    def exporter_name(self) -> str:
        """The exporter's short name ("dcgm", "cadvisor", "ksm", "node", "sidecar"), as settings spell it."""
        return self.value.split("_", 1)[0]

    @property
    def exporter(self) -> Family:
        """The family that stands for this family's exporter (its label layout and scrape interval)."""
        return EXPORTERS[self.exporter_name]

    @property
    def layout(self) -> Layout:
        """How this family's exporter labels its series."""
        return LAYOUTS[self.exporter_name]


# The exporters, in the order a pass probes them, by their short names.
EXPORTERS: dict[str, Family] = {
    "dcgm": Family.DCGM,
    "cadvisor": Family.CADVISOR,
    "ksm": Family.KSM,
    "node": Family.NODE,
    "sidecar": Family.SIDECAR,
}
LAYOUTS = {
    "dcgm": Layout.GPU,
    "cadvisor": Layout.CONTAINER,
    "ksm": Layout.POD,
    "node": Layout.NODE,
    "sidecar": Layout.POD,
}


class Kind(StrEnum):
    """How an exporter metric is read: a counter through ``rate()``, a gauge by its latest sample."""

    COUNTER = "counter"
    GAUGE = "gauge"


# Host-side virtual interfaces carry the same bytes as the physical NIC (pod veths, CNI bridges and
# tunnels): counting them would double the node's traffic.
VIRTUAL_NICS = "lo|veth.*|cali.*|cilium.*|lxc.*|flannel.*|cni.*|docker.*|br-.*|virbr.*|tunl.*|vxlan.*|genev.*|kube-ipvs.*|weave.*|azv.*|eni.*|gke.*"

Matcher = tuple[str, str, str]  # (label, operator, value), the value quoted by the data layer


@dataclass(frozen=True)
class SignalSpec:
    """One signal.

    Attributes:
        name: the signal's id.
        family: the exporter (and configuration) that provides it.
        unit: the unit of the signal (after ``scale``).
        description: what it is, in the exporter's terms.
        metrics: the exporter metrics it is computed from, in the order its query uses them.
        kind: how those metrics are read (counters through ``rate()``).
        scale: the exporter's value is divided by this (100 for a percentage read as a ratio).
        matchers: fixed label matchers of a plain read.
        combine: how one pod's (one node's) series combine: "avg", "sum" or "max"; "" for the
            layout's own rule (GPU: avg, container: sum, pod and node: max).
        alternates: another exporter's metrics that stand in for it where they exist (the kubelet's PSI).
        context: reported with the window but never read by the analysis: not among
            :data:`~bottleneck_operator.contract.signals.SIGNAL_NAMES`, so the model's inputs (and
            its feature schema) stay as they are.
        special: the query is hand-written in telemetry/ (a ratio, a bit test, a unit conversion,
            a join); it still takes its metric names from ``metrics``.
    """

    name: str
    family: Family
    unit: str
    description: str
    metrics: tuple[str, ...] = ()
    kind: Kind = Kind.GAUGE
    scale: float = 1.0
    matchers: tuple[Matcher, ...] = ()
    combine: str = ""
    alternates: tuple[str, ...] = ()
    context: bool = False
    special: bool = False

    @property
    def metric(self) -> str:
        """The one exporter metric of a plain read."""
        (metric,) = self.metrics
        return metric

    @property
    def how(self) -> str:
        """How the per-pod (per-node) series combine: :attr:`combine`, else the layout's rule."""
        return self.combine or COMBINE[self.family.layout]


COMBINE = {Layout.GPU: "avg", Layout.CONTAINER: "sum", Layout.POD: "max", Layout.NODE: "max"}
