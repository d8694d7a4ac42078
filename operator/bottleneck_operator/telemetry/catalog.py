"""The query catalog: one named PromQL expression per signal of :mod:`contract.signals`.

Every expression selects *all* pods (or nodes) of a pass at once, through an escaped regex
alternation, and aggregates ``by`` the labels that identify a pod (``namespace``, ``pod``) or a node;
the caller splits the answer per Job in Python. Each entry is one request per segment of a pass
(normally one, see :mod:`.windows`); pods whose exporters are scraped at different intervals fall
into buckets, and an entry's request joins its buckets' expressions with ``or``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from bottleneck_operator.contract.signals import SIGNALS, Family
from bottleneck_operator.telemetry.gpu_queries import CLOCK_REASONS as CLOCK_REASONS
from bottleneck_operator.telemetry.gpu_queries import (
    clock_slowdown,
    dcgm_avg,
    fb_used_frac,
    gpus,
    nvlink_total,
    unmapped_gpus,
)
from bottleneck_operator.telemetry.names import add_matchers, quote
from bottleneck_operator.telemetry.selectors import (
    COLLECTOR_CONTAINER,
    INTERNAL_CPU_MODES,
    INTERNAL_GPUS,
    INTERNAL_ON_NODE,
    INTERNAL_UNMAPPED,
    SYSTEM_OWNER_KINDS,
    VIRTUAL_NICS,
    Group,
    QueryContext,
    sel,
)


@dataclass(frozen=True)
class Entry:
    """One named query.

    Attributes:
        name: the signal (contract/signals.py) or an internal name starting with "_".
        group: the exporter it reads (its label layout and scrape intervals).
        build: the expression for a context.
        merge: how a node's instances combine ("sum" or "max"), for node-exporter entries.
    """

    name: str
    group: Group
    build: Callable[[QueryContext], str]
    merge: str = "max"

    @property
    def family(self) -> Family | None:
        spec = SIGNALS.get(self.name)
        return spec.family if spec else None


# --- the catalog ----------------------------------------------------------------------------


# The kubelet serves the CPU and working-set series again under /metrics/resource when
# kube-prometheus-stack's ``kubelet.serviceMonitor.resource`` is on, with fewer labels (no id, image,
# name). One value per container (and device) before the containers are summed keeps either copy
# from counting twice; the pod-level cgroup (container="") is excluded by the selector.
ONE_PATH = "max by (namespace, pod, container, device)"
SPEC_SEEN = "1h"  # cAdvisor publishes container_spec_* for a pod when it has any sample in this range


def _cad_rate(metric: str) -> Callable[[QueryContext], str]:
    def build(c: QueryContext) -> str:
        rate = f"rate({c.containersel(metric)}[{c.rate_range(Group.CADVISOR)}])"
        return f"sum by (namespace, pod) ({ONE_PATH} ({rate}))"

    return build


def _cad_sum(metric: str) -> Callable[[QueryContext], str]:
    def build(c: QueryContext) -> str:
        return f"sum by (namespace, pod) ({ONE_PATH} ({c.last(Group.CADVISOR, c.containersel(metric))}))"

    return build


def _mem_limit(c: QueryContext) -> str:
    # cAdvisor reports 0 for "no limit": one unlimited container makes the pod unlimited (NaN).
    limits = f"{ONE_PATH} ({c.last(Group.CADVISOR, c.containersel('container_spec_memory_limit_bytes'))})"
    cadvisor = f"sum by (namespace, pod) ({limits}) unless on (namespace, pod) ({limits} == 0)"
    # kube-prometheus-stack drops container_spec_*: kube-state-metrics' limits (no series for an
    # unlimited container), else the collector's pod cgroup memory.max (its own 64Mi included).
    ksm = c.podsel(
        "kube_pod_container_resource_limits", 'resource="memory"', f"container!={quote(COLLECTOR_CONTAINER)}"
    )
    sidecar = c.podsel("bottleneck_sidecar_memory_max_bytes")
    # Those exporters' scrape intervals are not estimated for this entry: a limit read within the
    # cAdvisor rate range (at least four cAdvisor intervals) is still the pod's limit.
    # Only for pods cAdvisor publishes no limit for at all: a missed cAdvisor scrape stays a gap.
    r = c.rate_range(Group.CADVISOR)
    spec = c.containersel("container_spec_memory_limit_bytes")
    fallback = (
        f"(sum by (namespace, pod) (last_over_time({ksm}[{r}]))"
        f" or on (namespace, pod) max by (namespace, pod) (last_over_time({sidecar}[{r}])))"
    )
    return f"({cadvisor}) or ({fallback} unless on (namespace, pod) group by (namespace, pod) (last_over_time({spec}[{SPEC_SEEN}])))"


def _throttled(c: QueryContext) -> str:
    r = c.rate_range(Group.CADVISOR)
    throttled = c.containersel("container_cpu_cfs_throttled_periods_total")
    periods = c.containersel("container_cpu_cfs_periods_total")
    return (
        f"sum by (namespace, pod) ({ONE_PATH} (rate({throttled}[{r}])))"
        f" / sum by (namespace, pod) ({ONE_PATH} (rate({periods}[{r}])))"
    )


def _cpu_limit(c: QueryContext) -> str:
    sel = c.podsel("kube_pod_container_resource_limits", 'resource="cpu"', f"container!={quote(COLLECTOR_CONTAINER)}")
    return f"sum by (namespace, pod) ({c.last(Group.KSM, sel)})"


def _on_node(c: QueryContext) -> str:
    series = sel("kube_pod_info", f"node=~{quote(c.nodes)}", f"created_by_kind!~{quote(SYSTEM_OWNER_KINDS)}")
    return f"max by (namespace, pod, node) ({c.last(Group.KSM, series)})"


# node-exporter expressions are aggregated by ``node_unit``: the node label when one is configured,
# else ``instance``, which the pass maps to nodes in Python through node_uname_info (see nodes.py).
# Joining in PromQL instead (``* on (instance) group_left (nodename)``) costs Prometheus more than
# the rest of the expression on a large cluster: a new label set per series and step.


def _node_cpu_modes(c: QueryContext) -> str:
    # One query for every mode: node_cpu_seconds_total is the largest node-exporter family
    # (CPUs x modes), so it is read once and the shares are computed in Python (see assembly).
    return f"sum by ({c.node_unit}, mode) ({c.node_rate('node_cpu_seconds_total')})"


def _node_cpus(c: QueryContext) -> str:
    idle = c.node_last("node_cpu_seconds_total", 'mode="idle"')
    return f"count by ({c.node_unit}) ({idle})"


def _node_agg(agg: str, metric: str, *extra: str) -> Callable[[QueryContext], str]:
    def build(c: QueryContext) -> str:
        return f"{agg} by ({c.node_unit}) ({c.node_rate(metric, *extra)})"

    return build


def _node_gauge(c: QueryContext, metric: str) -> str:
    return f"max by ({c.node_unit}) ({c.node_last(metric)})"


def _node_mem_avail(c: QueryContext) -> str:
    return f"{_node_gauge(c, 'node_memory_MemAvailable_bytes')} / {_node_gauge(c, 'node_memory_MemTotal_bytes')}"


def _node_swap(c: QueryContext) -> str:
    free, total = _node_gauge(c, "node_memory_SwapFree_bytes"), _node_gauge(c, "node_memory_SwapTotal_bytes")
    # No swap (total 0) is "0 used", not 0/0.
    return f"(1 - {free} / ({total} > 0)) or ({total} * 0)"


def node_names(c: QueryContext, window: str = "") -> str:
    """Series labelled ``instance`` and ``nodename`` (the Kubernetes node) for the pass's nodes.

    ``uname`` join: node_uname_info's own ``nodename``. ``pod`` join (hostname overrides, cloud or
    upper-case kernel names): the exporter pod's ``namespace``/``pod`` on node_uname_info, placed on
    its node by kube_pod_info, as kube-prometheus-stack's recording rules join them.

    Args:
        c: the pass's selectors.
        window: a range (e.g. ``600000ms``) to read the latest sample within; "" for the bare
            selectors (one lookback delta, as a PromQL join sees them).
    """

    def read(selector: str) -> str:
        return f"last_over_time({selector}[{window}])" if window else selector

    if c.labels.node_exporter_join != "pod":
        return f"max by (instance, nodename) ({read(sel('node_uname_info', f'nodename=~{quote(c.nodes)}'))})"
    exporter_pods = sel("node_uname_info", 'pod!=""')
    exporters = f"max by (instance, namespace, pod) ({read(exporter_pods)})"
    placed = f"max by (namespace, pod, node) ({read(sel('kube_pod_info', f'node=~{quote(c.nodes)}'))})"
    joined = f"{exporters} * on (namespace, pod) group_left (node) {placed}"
    return f'max by (instance, nodename) (label_replace({joined}, "nodename", "$1", "node", "(.+)"))'


def _node_uname(c: QueryContext) -> str:
    # Which instance is which node at each step: the same selectors (and lookback) as a PromQL join.
    return node_names(c)


def _sc_rate(metric: str, *extra: str) -> Callable[[QueryContext], str]:
    def build(c: QueryContext) -> str:
        return f"max by (namespace, pod) (rate({c.podsel(metric, *extra)}[{c.rate_range(Group.SIDECAR)}]))"

    return build


def _sc_throttled(c: QueryContext) -> str:
    return f"{_sc_rate('bottleneck_sidecar_cpu_throttled_periods_total')(c)} / {_sc_rate('bottleneck_sidecar_cpu_periods_total')(c)}"


def _sc_gauge(metric: str, *extra: str) -> Callable[[QueryContext], str]:
    def build(c: QueryContext) -> str:
        return f"max by (namespace, pod) ({c.last(Group.SIDECAR, c.podsel(metric, *extra))})"

    return build


def _psi(resource: str, kind: str) -> Callable[[QueryContext], str]:
    metric = f"bottleneck_sidecar_pressure_{kind}_seconds_total"
    return _sc_rate(metric, f"resource={quote(resource)}")


def _kubelet_psi(resource: str, kind: str) -> Callable[[QueryContext], str]:
    # The kubelet's cAdvisor (KubeletPSI, on by default from Kubernetes 1.34, cgroup v2 nodes only):
    # the pod's own cgroup (container="") is what the collector reads; where relabelling dropped
    # it, the pod's most pressured workload container stands in.
    metric = f"container_pressure_{resource}_{kind}_seconds_total"

    def build(c: QueryContext) -> str:
        r = c.rate_range(Group.CADVISOR)
        pod_cgroup = c.podsel(metric, 'container=""')
        pod_level = f"max by (namespace, pod) (rate({pod_cgroup}[{r}]))"
        containers = f"max by (namespace, pod) ({ONE_PATH} (rate({c.containersel(metric)}[{r}])))"
        return f"{pod_level} or on (namespace, pod) {containers}"

    return build


# The collector's pod PSI signals and the kubelet's entries that fill them where the kubelet serves
# PSI (assembly prefers the kubelet's; the collector's fill its gaps). waiting = some, stalled = full.
KUBELET_PSI: dict[str, str] = {
    "sc_psi_cpu_some": "_kubelet_psi_cpu_some",
    "sc_psi_io_some": "_kubelet_psi_io_some",
    "sc_psi_io_full": "_kubelet_psi_io_full",
    "sc_psi_mem_some": "_kubelet_psi_mem_some",
    "sc_psi_mem_full": "_kubelet_psi_mem_full",
}
_PSI_SOURCES = {"cpu": "cpu", "io": "io", "mem": "memory"}


def _kubelet_psi_entry(signal: str) -> Entry:
    _, _, resource, kind = signal.split("_")
    return Entry(
        KUBELET_PSI[signal],
        Group.CADVISOR,
        _kubelet_psi(_PSI_SOURCES[resource], "waiting" if kind == "some" else "stalled"),
    )


# Bytes/s of one unit of DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL (docs/telemetry.md, "What the signals mean").
INTERNAL_UNAME = "_node_uname"  # which node-exporter instance is which node, per step

G = Group
CATALOG: tuple[Entry, ...] = (
    # dcgm-exporter: mean over the pod's GPUs (fb_used_frac: the fullest GPU)
    Entry("gpu_util", G.DCGM, dcgm_avg("DCGM_FI_DEV_GPU_UTIL", 100.0)),
    Entry("mem_copy_util", G.DCGM, dcgm_avg("DCGM_FI_DEV_MEM_COPY_UTIL", 100.0)),
    Entry("fb_used_frac", G.DCGM, fb_used_frac),
    Entry("power_w", G.DCGM, dcgm_avg("DCGM_FI_DEV_POWER_USAGE")),
    Entry("sm_clock_mhz", G.DCGM, dcgm_avg("DCGM_FI_DEV_SM_CLOCK")),
    Entry("nvlink_total_bps", G.DCGM, nvlink_total),
    Entry("gr_engine_active", G.DCGM, dcgm_avg("DCGM_FI_PROF_GR_ENGINE_ACTIVE")),
    Entry("tensor_active", G.DCGM, dcgm_avg("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")),
    Entry("dram_active", G.DCGM, dcgm_avg("DCGM_FI_PROF_DRAM_ACTIVE")),
    Entry("pcie_tx_bps", G.DCGM, dcgm_avg("DCGM_FI_PROF_PCIE_TX_BYTES")),
    Entry("pcie_rx_bps", G.DCGM, dcgm_avg("DCGM_FI_PROF_PCIE_RX_BYTES")),
    Entry("sm_active", G.DCGM, dcgm_avg("DCGM_FI_PROF_SM_ACTIVE")),
    Entry("sm_occupancy", G.DCGM, dcgm_avg("DCGM_FI_PROF_SM_OCCUPANCY")),
    Entry("nvlink_tx_bps", G.DCGM, dcgm_avg("DCGM_FI_PROF_NVLINK_TX_BYTES")),
    Entry("nvlink_rx_bps", G.DCGM, dcgm_avg("DCGM_FI_PROF_NVLINK_RX_BYTES")),
    Entry("fp32_active", G.DCGM, dcgm_avg("DCGM_FI_PROF_PIPE_FP32_ACTIVE")),
    Entry("fp16_active", G.DCGM, dcgm_avg("DCGM_FI_PROF_PIPE_FP16_ACTIVE")),
    Entry("power_limit_w", G.DCGM, dcgm_avg("DCGM_FI_DEV_POWER_MGMT_LIMIT")),
    Entry("clock_slowdown_frac", G.DCGM, clock_slowdown),
    Entry(INTERNAL_GPUS, G.DCGM, gpus),
    Entry(INTERNAL_UNMAPPED, G.DCGM, unmapped_gpus),
    # kubelet/cAdvisor: the workload containers of the pod
    Entry("cpu_cores", G.CADVISOR, _cad_rate("container_cpu_usage_seconds_total")),
    Entry("mem_working_set_bytes", G.CADVISOR, _cad_sum("container_memory_working_set_bytes")),
    Entry("mem_limit_bytes", G.CADVISOR, _mem_limit),
    Entry("fs_read_bps", G.CADVISOR, _cad_rate("container_fs_reads_bytes_total")),
    Entry("cpu_throttled_frac", G.CADVISOR, _throttled),
    *(_kubelet_psi_entry(signal) for signal in KUBELET_PSI),
    # kube-state-metrics
    Entry("cpu_limit_cores", G.KSM, _cpu_limit),
    Entry(INTERNAL_ON_NODE, G.KSM, _on_node),
    # node-exporter on the pods' nodes
    Entry(INTERNAL_UNAME, G.NODE, _node_uname),  # join mode only: instance -> node
    Entry("node_cpus", G.NODE, _node_cpus, "sum"),
    Entry(INTERNAL_CPU_MODES, G.NODE, _node_cpu_modes, "sum"),  # node_cpu_{busy,iowait,system}_frac
    Entry("node_disk_read_bps", G.NODE, _node_agg("sum", "node_disk_read_bytes_total"), "sum"),
    Entry("node_disk_reads_ps", G.NODE, _node_agg("sum", "node_disk_reads_completed_total"), "sum"),
    Entry("node_disk_busy_frac", G.NODE, _node_agg("max", "node_disk_io_time_seconds_total")),
    Entry("node_mem_avail_frac", G.NODE, _node_mem_avail),
    Entry("node_swap_used_frac", G.NODE, _node_swap),
    Entry("node_majfault_ps", G.NODE, _node_agg("max", "node_vmstat_pgmajfault")),
    Entry(
        "node_net_rx_bps",
        G.NODE,
        _node_agg("sum", "node_network_receive_bytes_total", f"device!~{quote(VIRTUAL_NICS)}"),
        "sum",
    ),
    Entry(
        "node_net_tx_bps",
        G.NODE,
        _node_agg("sum", "node_network_transmit_bytes_total", f"device!~{quote(VIRTUAL_NICS)}"),
        "sum",
    ),
    Entry("node_psi_cpu_some", G.NODE, _node_agg("max", "node_pressure_cpu_waiting_seconds_total")),
    Entry("node_psi_io_some", G.NODE, _node_agg("max", "node_pressure_io_waiting_seconds_total")),
    Entry("node_psi_io_full", G.NODE, _node_agg("max", "node_pressure_io_stalled_seconds_total")),
    Entry("node_psi_mem_some", G.NODE, _node_agg("max", "node_pressure_memory_waiting_seconds_total")),
    Entry("node_psi_mem_full", G.NODE, _node_agg("max", "node_pressure_memory_stalled_seconds_total")),
    # RDMA (InfiniBand, RoCE) bytes of every HCA port of the node: traffic the netdev counters never see
    Entry("ib_rx_bps", G.NODE, _node_agg("sum", "node_infiniband_port_data_received_bytes_total"), "sum"),
    Entry("ib_tx_bps", G.NODE, _node_agg("sum", "node_infiniband_port_data_transmitted_bytes_total"), "sum"),
    # the collector sidecar (its pod's own cgroup)
    Entry("sc_cpu_cores", G.SIDECAR, _sc_rate("bottleneck_sidecar_cpu_usage_seconds_total")),
    Entry("sc_throttled_frac", G.SIDECAR, _sc_throttled),
    Entry("sc_psi_cpu_some", G.SIDECAR, _psi("cpu", "waiting")),
    Entry("sc_psi_io_some", G.SIDECAR, _psi("io", "waiting")),
    Entry("sc_psi_io_full", G.SIDECAR, _psi("io", "stalled")),
    Entry("sc_psi_mem_some", G.SIDECAR, _psi("memory", "waiting")),
    Entry("sc_psi_mem_full", G.SIDECAR, _psi("memory", "stalled")),
    Entry("sc_io_read_bps", G.SIDECAR, _sc_rate("bottleneck_sidecar_io_read_bytes_total")),
    Entry("sc_majfault_ps", G.SIDECAR, _sc_rate("bottleneck_sidecar_memory_major_faults_total")),
    Entry("sc_swapin_ps", G.SIDECAR, _sc_rate("bottleneck_sidecar_memory_swapins_total")),
    Entry("sc_oom_kills", G.SIDECAR, _sc_rate("bottleneck_sidecar_memory_oom_kills_total")),
    Entry("sc_procs_running", G.SIDECAR, _sc_gauge("bottleneck_sidecar_processes", 'state="running"')),
    Entry("sc_procs_iowait", G.SIDECAR, _sc_gauge("bottleneck_sidecar_processes", 'state="iowait"')),
    Entry("sc_procs_busy", G.SIDECAR, _sc_gauge("bottleneck_sidecar_busy_processes")),
)

ENTRIES: dict[str, Entry] = {e.name: e for e in CATALOG}
MERGE: dict[str, str] = {e.name: e.merge for e in CATALOG if e.group is Group.NODE}


def entries_of(group: Group) -> tuple[Entry, ...]:
    """The catalog entries that read one exporter."""
    return tuple(e for e in CATALOG if e.group is group)


def tag(expr: str, label: str, value: str) -> str:
    """``expr`` with a constant label added (``label_replace`` on the always-empty label "")."""
    return f'label_replace({expr}, {quote(label)}, {quote(value)}, "", "")'


def entry_query(entry: Entry, contexts: Iterable[QueryContext]) -> str:
    """The request of one entry: its expression for each scrape-interval bucket, joined by ``or``.

    Args:
        entry: the catalog entry.
        contexts: one context per bucket (selectors and ranges of its pods/nodes); buckets select
            disjoint pods, so ``or`` only concatenates.

    Returns:
        One PromQL expression.
    """
    parts = [(entry.build(ctx), ctx.labels.selector_matchers) for ctx in contexts]
    return " or ".join(add_matchers(expr, matchers) for expr, matchers in parts)
