"""The signal table: every per-pod signal declared once, with the exporter metrics it is read from.

A signal is one time series per pod, aligned on the window's timestamps, in the unit given here.
The data layer (``telemetry/``) derives its PromQL from a signal's declaration (its metrics, their
kind and the label layout its family is published in) and writes by hand only the queries that are
more than a plain read; the simulators (``simulation/``, ``scenarios/``) take the exporters' metric
names from here; the analysis only ever sees signals, and only those of :data:`SIGNAL_NAMES`:
context signals (:data:`CONTEXT_SIGNALS`) travel with the window for the reader, outside the model's
inputs. GPU signals are the mean over the pod's GPUs unless the declaration combines them otherwise.

Families group signals by the exporter (and exporter configuration) that provides them; any family
may be absent on a given cluster, and the analysis must degrade gracefully. A family's exporter
(:attr:`Family.exporter`) decides the label layout and the scrape interval its series are read with.
"""

from __future__ import annotations

from bottleneck_operator.contract.names import COLLECTOR_CONTAINER

# The table's vocabulary, re-exported: every part imports signals and families from here.
from bottleneck_operator.contract.signal_types import EXPORTERS as EXPORTERS
from bottleneck_operator.contract.signal_types import VIRTUAL_NICS as VIRTUAL_NICS
from bottleneck_operator.contract.signal_types import Family as Family
from bottleneck_operator.contract.signal_types import Kind as Kind
from bottleneck_operator.contract.signal_types import Layout as Layout
from bottleneck_operator.contract.signal_types import Matcher as Matcher
from bottleneck_operator.contract.signal_types import SignalSpec as SignalSpec

# dcgm-exporter's name for NVML's clock-event reasons (DCGM >= 3.3) and the name releases built on an
# older DCGM publish the same field (112) under; a counters file lists the one its release knows.
CLOCK_REASONS = ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")

G, C = Kind.GAUGE, Kind.COUNTER
F, D, S = Family, "DCGM_FI_DEV_", "bottleneck_sidecar_"
NOT_COLLECTOR: Matcher = ("container", "!=", COLLECTOR_CONTAINER)


def _psi(scope: str, resource: str, kind: str, text: str) -> SignalSpec:
    """A pressure signal: the collector's pod cgroup (the kubelet's where it serves PSI), or the node's."""
    some_full = "some" if kind == "waiting" else "full"
    short = {"memory": "mem"}.get(resource, resource)
    if scope == "node":
        name, metric = f"node_psi_{short}_{some_full}", f"node_pressure_{resource}_{kind}_seconds_total"
        return SignalSpec(name, F.NODE_PSI, "ratio", f"rate of {metric}", (metric,), C)
    kubelet = f"container_pressure_{resource}_{kind}_seconds_total"
    return SignalSpec(
        f"sc_psi_{short}_{some_full}",
        F.SIDECAR,
        "ratio",
        text,
        (f"{S}pressure_{kind}_seconds_total",),
        C,
        matchers=(("resource", "=", resource),),
        alternates=(kubelet,),
    )


_SPECS: tuple[SignalSpec, ...] = (
    # --- dcgm-exporter, DEV fields
    SignalSpec(
        "gpu_util", F.DCGM_DEV, "ratio", f"{D}GPU_UTIL / 100: time any kernel ran", (f"{D}GPU_UTIL",), scale=100.0
    ),
    SignalSpec("mem_copy_util", F.DCGM_DEV, "ratio", f"{D}MEM_COPY_UTIL / 100", (f"{D}MEM_COPY_UTIL",), scale=100.0),
    SignalSpec(
        "fb_used_frac",
        F.DCGM_DEV,
        "ratio",
        "FB_USED / (FB_USED + FB_FREE), max over GPUs",
        (f"{D}FB_USED", f"{D}FB_FREE"),
        combine="max",
        special=True,
    ),
    SignalSpec("power_w", F.DCGM_DEV, "W", f"{D}POWER_USAGE", (f"{D}POWER_USAGE",)),
    SignalSpec("sm_clock_mhz", F.DCGM_DEV, "MHz", f"{D}SM_CLOCK", (f"{D}SM_CLOCK",)),
    SignalSpec(
        "nvlink_total_bps",
        F.DCGM_DEV,
        "B/s",
        f"rate of {D}NVLINK_BANDWIDTH_TOTAL",
        (f"{D}NVLINK_BANDWIDTH_TOTAL",),
        special=True,
    ),
    # --- dcgm-exporter, PROF fields in the shipped counters files
    *(
        SignalSpec(name, F.DCGM_PROF, unit, text or f"DCGM_FI_PROF_{field}", (f"DCGM_FI_PROF_{field}",))
        for name, unit, field, text in (
            ("gr_engine_active", "ratio", "GR_ENGINE_ACTIVE", ""),
            ("tensor_active", "ratio", "PIPE_TENSOR_ACTIVE", ""),
            ("dram_active", "ratio", "DRAM_ACTIVE", ""),
            ("pcie_tx_bps", "B/s", "PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_TX_BYTES (device to host)"),
            ("pcie_rx_bps", "B/s", "PCIE_RX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES (host to device)"),
        )
    ),
    # --- dcgm-exporter, PROF fields that need a custom counters file
    SignalSpec("sm_active", F.DCGM_PROF_SM, "ratio", "DCGM_FI_PROF_SM_ACTIVE", ("DCGM_FI_PROF_SM_ACTIVE",)),
    SignalSpec("sm_occupancy", F.DCGM_PROF_SM, "ratio", "DCGM_FI_PROF_SM_OCCUPANCY", ("DCGM_FI_PROF_SM_OCCUPANCY",)),
    SignalSpec(
        "nvlink_tx_bps", F.DCGM_PROF_NVLINK, "B/s", "DCGM_FI_PROF_NVLINK_TX_BYTES", ("DCGM_FI_PROF_NVLINK_TX_BYTES",)
    ),
    SignalSpec(
        "nvlink_rx_bps", F.DCGM_PROF_NVLINK, "B/s", "DCGM_FI_PROF_NVLINK_RX_BYTES", ("DCGM_FI_PROF_NVLINK_RX_BYTES",)
    ),
    SignalSpec(
        "fp32_active", F.DCGM_PROF_PIPES, "ratio", "DCGM_FI_PROF_PIPE_FP32_ACTIVE", ("DCGM_FI_PROF_PIPE_FP32_ACTIVE",)
    ),
    SignalSpec(
        "fp16_active", F.DCGM_PROF_PIPES, "ratio", "DCGM_FI_PROF_PIPE_FP16_ACTIVE", ("DCGM_FI_PROF_PIPE_FP16_ACTIVE",)
    ),
    # --- dcgm-exporter, where a counters file exports them
    SignalSpec(
        "power_limit_w",
        F.DCGM_POWER_CLOCKS,
        "W",
        f"{D}POWER_MGMT_LIMIT (the enforced limit)",
        (f"{D}POWER_MGMT_LIMIT",),
    ),
    SignalSpec(
        "clock_slowdown_frac",
        F.DCGM_POWER_CLOCKS,
        "ratio",
        f"share of the pod's GPUs whose {CLOCK_REASONS[0]} (older: _CLOCK_THROTTLE_REASONS) has a "
        "power-cap, thermal or hardware-slowdown bit set (0x4, 0x8, 0x20, 0x40, 0x80)",
        CLOCK_REASONS,
        special=True,
    ),
    # --- kubelet / cAdvisor, summed over the pod's containers except the collector sidecar
    SignalSpec(
        "cpu_cores",
        F.CADVISOR,
        "cores",
        "rate of container_cpu_usage_seconds_total",
        ("container_cpu_usage_seconds_total",),
        C,
    ),
    SignalSpec(
        "mem_working_set_bytes",
        F.CADVISOR,
        "B",
        "container_memory_working_set_bytes",
        ("container_memory_working_set_bytes",),
    ),
    SignalSpec(
        "mem_limit_bytes",
        F.CADVISOR,
        "B",
        "container_spec_memory_limit_bytes (NaN: none)",
        ("container_spec_memory_limit_bytes", "kube_pod_container_resource_limits", f"{S}memory_max_bytes"),
        special=True,
    ),
    SignalSpec(
        "fs_read_bps",
        F.CADVISOR,
        "B/s",
        "rate of container_fs_reads_bytes_total (block only)",
        ("container_fs_reads_bytes_total",),
        C,
    ),
    SignalSpec(
        "cpu_throttled_frac",
        F.CADVISOR_CFS,
        "ratio",
        "throttled / total CFS periods",
        ("container_cpu_cfs_throttled_periods_total", "container_cpu_cfs_periods_total"),
        C,
        special=True,
    ),
    # --- kube-state-metrics: the workload containers' limits, summed
    SignalSpec(
        "cpu_limit_cores",
        F.KSM,
        "cores",
        "kube_pod_container_resource_limits{resource=cpu}",
        ("kube_pod_container_resource_limits",),
        matchers=(("resource", "=", "cpu"), NOT_COLLECTOR),
        combine="sum",
    ),
    # --- node-exporter on the pod's node
    SignalSpec(
        "node_cpus",
        F.NODE,
        "cores",
        "number of CPUs of the node",
        ("node_cpu_seconds_total",),
        combine="sum",
        special=True,
    ),
    *(
        SignalSpec(f"node_cpu_{mode}_frac", F.NODE, "ratio", text, ("node_cpu_seconds_total",), C, special=True)
        for mode, text in (
            ("busy", "1 - idle - iowait share of node CPU time"),
            ("iowait", "iowait share of node CPU time"),
            ("system", "system share of node CPU time"),
        )
    ),
    SignalSpec(
        "node_disk_read_bps",
        F.NODE,
        "B/s",
        "rate of node_disk_read_bytes_total, all devices",
        ("node_disk_read_bytes_total",),
        C,
        combine="sum",
    ),
    SignalSpec(
        "node_disk_reads_ps",
        F.NODE,
        "1/s",
        "rate of node_disk_reads_completed_total",
        ("node_disk_reads_completed_total",),
        C,
        combine="sum",
    ),
    SignalSpec(
        "node_disk_busy_frac",
        F.NODE,
        "ratio",
        "rate of node_disk_io_time_seconds_total, max device",
        ("node_disk_io_time_seconds_total",),
        C,
    ),
    SignalSpec(
        "node_mem_avail_frac",
        F.NODE,
        "ratio",
        "MemAvailable / MemTotal",
        ("node_memory_MemAvailable_bytes", "node_memory_MemTotal_bytes"),
        special=True,
    ),
    SignalSpec(
        "node_swap_used_frac",
        F.NODE,
        "ratio",
        "1 - SwapFree / SwapTotal (0 without swap)",
        ("node_memory_SwapFree_bytes", "node_memory_SwapTotal_bytes"),
        special=True,
    ),
    SignalSpec("node_majfault_ps", F.NODE, "1/s", "rate of node_vmstat_pgmajfault", ("node_vmstat_pgmajfault",), C),
    *(
        SignalSpec(
            f"node_net_{way}_bps",
            F.NODE,
            "B/s",
            f"rate of {metric} (no lo)",
            (metric,),
            C,
            matchers=(("device", "!~", VIRTUAL_NICS),),
            combine="sum",
        )
        for way, metric in (("rx", "node_network_receive_bytes_total"), ("tx", "node_network_transmit_bytes_total"))
    ),
    _psi("node", "cpu", "waiting", ""),
    _psi("node", "io", "waiting", ""),
    _psi("node", "io", "stalled", ""),
    _psi("node", "memory", "waiting", ""),
    _psi("node", "memory", "stalled", ""),
    *(
        SignalSpec(f"ib_{way}_bps", F.NODE_IB, "B/s", f"rate of {metric}, all ports", (metric,), C, combine="sum")
        for way, metric in (
            ("rx", "node_infiniband_port_data_received_bytes_total"),
            ("tx", "node_infiniband_port_data_transmitted_bytes_total"),
        )
    ),
    # --- the collector sidecar (the pod's own cgroup, so neighbours do not leak in)
    _psi("pod", "cpu", "waiting", "pod cgroup cpu.pressure some, as a fraction of time"),
    _psi("pod", "io", "waiting", "pod cgroup io.pressure some"),
    _psi("pod", "io", "stalled", "pod cgroup io.pressure full"),
    _psi("pod", "memory", "waiting", "pod cgroup memory.pressure some"),
    _psi("pod", "memory", "stalled", "pod cgroup memory.pressure full"),
    SignalSpec(
        "sc_cpu_cores", F.SIDECAR, "cores", "pod cgroup cpu.stat usage rate", (f"{S}cpu_usage_seconds_total",), C
    ),
    SignalSpec(
        "sc_throttled_frac",
        F.SIDECAR,
        "ratio",
        "pod cgroup nr_throttled / nr_periods",
        (f"{S}cpu_throttled_periods_total", f"{S}cpu_periods_total"),
        C,
        special=True,
    ),
    SignalSpec("sc_io_read_bps", F.SIDECAR, "B/s", "pod cgroup io.stat rbytes rate", (f"{S}io_read_bytes_total",), C),
    SignalSpec(
        "sc_majfault_ps",
        F.SIDECAR,
        "1/s",
        "pod cgroup memory.stat pgmajfault rate",
        (f"{S}memory_major_faults_total",),
        C,
    ),
    SignalSpec(
        "sc_swapin_ps",
        F.SIDECAR,
        "1/s",
        "pod cgroup memory.stat pswpin rate (pages back from swap)",
        (f"{S}memory_swapins_total",),
        C,
    ),
    SignalSpec(
        "sc_oom_kills", F.SIDECAR, "1/s", "pod cgroup memory.events oom_kill rate", (f"{S}memory_oom_kills_total",), C
    ),
    *(
        SignalSpec(
            f"sc_procs_{state}",
            F.SIDECAR,
            "procs",
            f"trainer processes in state {code}",
            (f"{S}processes",),
            matchers=(("state", "=", state),),
        )
        for state, code in (("running", "R"), ("iowait", "D"))
    ),
    SignalSpec(
        "sc_procs_busy", F.SIDECAR, "procs", "trainer processes using 0.9 of a core or more", (f"{S}busy_processes",)
    ),
    # The pod's own network bytes: its containers share one network namespace, whose interfaces
    # (/proc/net/dev, lo left out) carry what the pod sends and receives over the kernel's stack, and
    # only that: a neighbour's traffic is not in them, nor RDMA (InfiniBand, RoCE), which bypasses the
    # stack. node_net_* count the whole node.
    *(
        SignalSpec(
            f"sc_net_{way}_bps",
            F.SIDECAR_NET,
            "B/s",
            f"rate of {S}network_{word}_bytes_total: bytes the pod's own interfaces {done}, lo left out",
            (f"{S}network_{word}_bytes_total",),
            C,
        )
        for way, word, done in (("rx", "receive", "received"), ("tx", "transmit", "sent"))
    ),
    # --- context: reported beside the verdict, never a feature of the model (its schema is fixed)
    SignalSpec(
        "xid_code",
        F.DCGM_DEV,
        "code",
        f"{D}XID_ERRORS: the last XID error code, highest over the pod's GPUs (0: none since the driver loaded)",
        (f"{D}XID_ERRORS",),
        combine="max",
        context=True,
    ),
)

SIGNALS: dict[str, SignalSpec] = {s.name: s for s in _SPECS}
# The signals the analysis reads, in the order of its raw arrays; context signals only travel with the window.
SIGNAL_NAMES: tuple[str, ...] = tuple(s.name for s in _SPECS if not s.context)
CONTEXT_SIGNALS: tuple[str, ...] = tuple(s.name for s in _SPECS if s.context)


def signals_of(family: Family, *, context: bool = False) -> tuple[str, ...]:
    """Names of the signals that one family provides to the analysis (``context``: its context signals too)."""
    return tuple(s.name for s in _SPECS if s.family is family and (context or not s.context))


def metrics_of(signal: str) -> tuple[str, ...]:
    """The exporter metrics one signal is read from (its declaration's ``metrics``)."""
    return SIGNALS[signal].metrics
