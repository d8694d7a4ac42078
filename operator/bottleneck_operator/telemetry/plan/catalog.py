"""The query catalog: one named PromQL expression per signal of :mod:`contract.signals`.

Every expression selects *all* pods (or nodes) of a pass at once, through an escaped regex
alternation, and aggregates ``by`` the labels that identify a pod (``namespace``, ``pod``) or a node;
the caller splits the answer per Job in Python. Each entry is one request per segment of a pass
(normally one, see :mod:`..windows`); pods whose exporters are scraped at different intervals fall
into buckets, and an entry's request joins its buckets' expressions with ``or``.

The DCGM side combines dcgm-exporter's per-GPU fields per pod, tests its clock-event reasons bit by
bit, and reads framebuffer and NVLink as dcgm-exporter really publishes them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from bottleneck_operator.contract.signals import CLOCK_REASONS as CLOCK_REASONS
from bottleneck_operator.contract.signals import SIGNALS, Family, Kind, Layout, SignalSpec, metrics_of
from bottleneck_operator.telemetry.plan.names import add_matchers, quote
from bottleneck_operator.telemetry.plan.selectors import (
    COLLECTOR_CONTAINER,
    INTERNAL_CPU_MODES,
    INTERNAL_GPUS,
    INTERNAL_ON_NODE,
    INTERNAL_UNMAPPED,
    SYSTEM_OWNER_KINDS,
    QueryContext,
    sel,
)

# DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL's unit: 1000 KiB/s (see nvlink_total).
NVLINK_TOTAL_UNIT_BYTES = 1.024e6
# FB_USED exists on every GPU, MIG instances included (GPU_UTIL does not under MIG): it counts GPUs.
FB_USED, FB_FREE = metrics_of("fb_used_frac")


def dcgm_gauge(spec: SignalSpec) -> Callable[[QueryContext], str]:
    """A plain per-GPU gauge, combined over the pod's GPUs as the signal declares (mean by default)."""
    metric, how, scale = spec.metric, spec.how, spec.scale

    def build(c: QueryContext) -> str:
        expr = f"{how} by ({c.dcgm_by}) ({c.last(Family.DCGM, c.dcgmsel(metric))})"
        return f"{expr} / {scale:g}" if scale != 1.0 else expr

    return build


def slowdown_test(x: str) -> str:
    """1 where the reasons bitmask ``x`` has a bit that slows a loaded GPU, else 0 (PromQL has no bit operators).

    NVML's bits: 0x1 GPU idle, 0x2 application clocks setting, 0x4 SW power cap, 0x8 HW slowdown,
    0x10 sync boost, 0x20 SW thermal, 0x40 HW thermal, 0x80 HW power brake, 0x100 display clocks.
    ``floor(x / 4) % 4`` is bits 0x4 and 0x8, ``floor(x / 32) % 8`` bits 0x20 to 0x80.
    """
    return f"(floor({x} / 4) % 4 + floor({x} / 32) % 8 > bool 0)"


def clock_slowdown(c: QueryContext) -> str:
    # One series per GPU after the test (arithmetic drops the metric name): where a GPU carries both
    # names (an exporter upgraded mid-window), ``or`` keeps the newer name's sample.
    tests = [slowdown_test(c.last(Family.DCGM, c.dcgmsel(name))) for name in metrics_of("clock_slowdown_frac")]
    return f"avg by ({c.dcgm_by}) ({' or '.join(tests)})"


def fb_used_frac(c: QueryContext) -> str:
    used = c.last(Family.DCGM, c.dcgmsel(FB_USED))
    free = c.last(Family.DCGM, c.dcgmsel(FB_FREE))
    return f"max by ({c.dcgm_by}) ({used} / ({used} + {free}))"


def nvlink_total(c: QueryContext) -> str:
    # Typed a counter, but DCGM publishes an instantaneous TX+RX rate in units of 1000 KiB/s (its cache
    # manager divides the NVML KiB delta by the interval, then by 1000): read it as a gauge, never rate().
    (metric,) = metrics_of("nvlink_total_bps")
    gauge = c.last(Family.DCGM, c.dcgmsel(metric))
    return f"avg by ({c.dcgm_by}) ({gauge}) * {NVLINK_TOTAL_UNIT_BYTES:g}"


def gpus(c: QueryContext) -> str:
    per_gpu = f"group by ({c.dcgm_by}, modelName, gpu, UUID, GPU_I_ID) ({c.last(Family.DCGM, c.dcgmsel(FB_USED))})"
    return f"count by ({c.dcgm_by}, modelName) ({per_gpu})"


def unmapped_gpus(c: QueryContext) -> str:
    host = c.dcgm_hostname_label
    series = sel(FB_USED, f"{host}=~{quote(c.nodes)}", f'{c.dcgm_pod_label}=""')
    return f"count by ({host}) ({c.last(Family.DCGM, series)})"


Build = Callable[[QueryContext], str]


@dataclass(frozen=True)
class Entry:
    """One named query.

    Attributes:
        name: the signal (contract/signals.py) or an internal name starting with "_".
        exporter: the exporter it reads (its label layout and scrape intervals), as its :class:`Family`.
        build: the expression for a context.
        merge: how a node's instances combine ("sum" or "max"), for node-exporter entries.
    """

    name: str
    exporter: Family
    build: Build
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


def _matchers(spec: SignalSpec) -> tuple[str, ...]:
    return tuple(f"{label}{op}{quote(value)}" for label, op, value in spec.matchers)


def derived(spec: SignalSpec) -> Build:
    """The query of a plain read, from the signal's declaration: a counter's rate() or a gauge's
    latest sample, combined per pod (per node) as its layout and ``combine`` say.

    Raises:
        ValueError: the declaration asks for a read no layout offers (a counter per GPU).
    """
    metric, how, family, extra = spec.metric, spec.how, spec.family, _matchers(spec)
    layout, counter = family.layout, spec.kind is Kind.COUNTER
    if layout is Layout.GPU and not counter:
        return dcgm_gauge(spec)

    def container(c: QueryContext) -> str:
        series = c.containersel(metric, *extra)
        read = f"rate({series}[{c.rate_range(family)}])" if counter else c.last(family, series)
        return f"{how} by (namespace, pod) ({ONE_PATH} ({read}))"

    def pod(c: QueryContext) -> str:
        series = c.podsel(metric, *extra)
        read = f"rate({series}[{c.rate_range(family)}])" if counter else c.last(family, series)
        return f"{how} by (namespace, pod) ({read})"

    def node(c: QueryContext) -> str:
        read = c.node_rate(metric, *extra) if counter else c.node_last(metric, *extra)
        return f"{how} by ({c.node_unit}) ({read})"

    builds = {Layout.CONTAINER: container, Layout.POD: pod, Layout.NODE: node}
    if layout not in builds:
        raise ValueError(f"signal {spec.name}: no plain {spec.kind} read for the {layout} layout")
    return builds[layout]


def _mem_limit(c: QueryContext) -> str:
    spec_limit, ksm_limits, collector_max = metrics_of("mem_limit_bytes")
    # cAdvisor reports 0 for "no limit": one unlimited container makes the pod unlimited (NaN).
    limits = f"{ONE_PATH} ({c.last(Family.CADVISOR, c.containersel(spec_limit))})"
    cadvisor = f"sum by (namespace, pod) ({limits}) unless on (namespace, pod) ({limits} == 0)"
    # kube-prometheus-stack drops container_spec_*: kube-state-metrics' limits (no series for an
    # unlimited container), else the collector's pod cgroup memory.max (its own 64Mi included).
    ksm = c.podsel(ksm_limits, 'resource="memory"', f"container!={quote(COLLECTOR_CONTAINER)}")
    sidecar = c.podsel(collector_max)
    # Those exporters' scrape intervals are not estimated for this entry: a limit read within the
    # cAdvisor rate range (at least four cAdvisor intervals) is still the pod's limit.
    # Only for pods cAdvisor publishes no limit for at all: a missed cAdvisor scrape stays a gap.
    r = c.rate_range(Family.CADVISOR)
    spec = c.containersel(spec_limit)
    fallback = (
        f"(sum by (namespace, pod) (last_over_time({ksm}[{r}]))"
        f" or on (namespace, pod) max by (namespace, pod) (last_over_time({sidecar}[{r}])))"
    )
    return f"({cadvisor}) or ({fallback} unless on (namespace, pod) group by (namespace, pod) (last_over_time({spec}[{SPEC_SEEN}])))"


def _throttled(c: QueryContext) -> str:
    r = c.rate_range(Family.CADVISOR)
    throttled, periods = (c.containersel(m) for m in metrics_of("cpu_throttled_frac"))
    return (
        f"sum by (namespace, pod) ({ONE_PATH} (rate({throttled}[{r}])))"
        f" / sum by (namespace, pod) ({ONE_PATH} (rate({periods}[{r}])))"
    )


def _on_node(c: QueryContext) -> str:
    series = sel("kube_pod_info", f"node=~{quote(c.nodes)}", f"created_by_kind!~{quote(SYSTEM_OWNER_KINDS)}")
    return f"max by (namespace, pod, node) ({c.last(Family.KSM, series)})"


# node-exporter expressions are aggregated by ``node_unit``: the node label when one is configured,
# else ``instance``, which the pass maps to nodes in Python through node_uname_info (see nodes.py).
# Joining in PromQL instead (``* on (instance) group_left (nodename)``) costs Prometheus more than
# the rest of the expression on a large cluster: a new label set per series and step.
(NODE_CPU_SECONDS,) = metrics_of("node_cpus")


def _node_cpu_modes(c: QueryContext) -> str:
    # One query for every mode: node_cpu_seconds_total is the largest node-exporter family
    # (CPUs x modes), so it is read once and the shares are computed in Python (see assembly).
    return f"sum by ({c.node_unit}, mode) ({c.node_rate(NODE_CPU_SECONDS)})"


def _node_cpus(c: QueryContext) -> str:
    idle = c.node_last(NODE_CPU_SECONDS, 'mode="idle"')
    return f"count by ({c.node_unit}) ({idle})"


def _node_gauge(c: QueryContext, metric: str) -> str:
    return f"max by ({c.node_unit}) ({c.node_last(metric)})"


def _node_mem_avail(c: QueryContext) -> str:
    avail, total = metrics_of("node_mem_avail_frac")
    return f"{_node_gauge(c, avail)} / {_node_gauge(c, total)}"


def _node_swap(c: QueryContext) -> str:
    free, total = (_node_gauge(c, m) for m in metrics_of("node_swap_used_frac"))
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


def _sc_throttled(c: QueryContext) -> str:
    r = c.rate_range(Family.SIDECAR)
    throttled, periods = (
        f"max by (namespace, pod) (rate({c.podsel(m)}[{r}]))" for m in metrics_of("sc_throttled_frac")
    )
    return f"{throttled} / {periods}"


def _kubelet_psi(signal: str) -> Build:
    # The kubelet's cAdvisor (KubeletPSI, on by default from Kubernetes 1.34, cgroup v2 nodes only):
    # the pod's own cgroup (container="") is what the collector reads; where relabelling dropped
    # it, the pod's most pressured workload container stands in.
    (metric,) = SIGNALS[signal].alternates

    def build(c: QueryContext) -> str:
        r = c.rate_range(Family.CADVISOR)
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


def _kubelet_psi_entry(signal: str) -> Entry:
    return Entry(KUBELET_PSI[signal], Family.CADVISOR, _kubelet_psi(signal))


INTERNAL_UNAME = "_node_uname"  # which node-exporter instance is which node, per step

# The signals whose query is more than a plain read (signal table: ``special``).
SPECIAL: dict[str, Build] = {
    "fb_used_frac": fb_used_frac,
    "nvlink_total_bps": nvlink_total,
    "clock_slowdown_frac": clock_slowdown,
    "mem_limit_bytes": _mem_limit,
    "cpu_throttled_frac": _throttled,
    "node_cpus": _node_cpus,
    "node_mem_avail_frac": _node_mem_avail,
    "node_swap_used_frac": _node_swap,
    "sc_throttled_frac": _sc_throttled,
}
# Signals no entry of their own reads: the node CPU shares come from INTERNAL_CPU_MODES.
FROM_CPU_MODES = ("node_cpu_busy_frac", "node_cpu_iowait_frac", "node_cpu_system_frac")


def signal_entry(spec: SignalSpec) -> Entry:
    """The entry of one signal: its hand-written query where it is special, else the derived read."""
    build = SPECIAL[spec.name] if spec.special else derived(spec)
    return Entry(spec.name, spec.family.exporter, build, spec.combine or "max")


# The internal entries, each listed before the signal it is read ahead of (requests keep their order).
_INTERNAL: dict[str, tuple[Entry, ...]] = {
    "cpu_cores": (Entry(INTERNAL_GPUS, Family.DCGM, gpus), Entry(INTERNAL_UNMAPPED, Family.DCGM, unmapped_gpus)),
    "cpu_limit_cores": tuple(_kubelet_psi_entry(signal) for signal in KUBELET_PSI),
    "node_cpus": (
        Entry(INTERNAL_ON_NODE, Family.KSM, _on_node),
        Entry(INTERNAL_UNAME, Family.NODE, _node_uname),  # join mode only: instance -> node
    ),
    "node_disk_read_bps": (Entry(INTERNAL_CPU_MODES, Family.NODE, _node_cpu_modes, "sum"),),
}
CATALOG: tuple[Entry, ...] = tuple(
    entry
    for spec in SIGNALS.values()
    if spec.name not in FROM_CPU_MODES
    for entry in (*_INTERNAL.get(spec.name, ()), signal_entry(spec))
)

ENTRIES: dict[str, Entry] = {e.name: e for e in CATALOG}
MERGE: dict[str, str] = {e.name: e.merge for e in CATALOG if e.exporter is Family.NODE}


def entries_of(exporter: Family) -> tuple[Entry, ...]:
    """The catalog entries that read one exporter (given as the family that stands for it)."""
    return tuple(e for e in CATALOG if e.exporter is exporter.exporter)


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
