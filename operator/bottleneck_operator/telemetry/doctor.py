"""What the analysis will be able to say from a Prometheus, family by family, and how to fix each gap.

:func:`check` reads, in two instant queries, whether each family the analysis reads holds series
(optionally for one namespace), in which label layout (:class:`.plan.discovery.Layout`), at which scrape interval,
whether node-exporter's series reach their nodes, and which DCGM fields are on. Each finding comes
with the exact change that closes the gap: a chart value, a counters-file line, a relabeling.
``bottleneck-operator doctor`` prints it; the operator logs it at start and exports it as a metric.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Gauge

from bottleneck_operator.contract.signals import CLOCK_REASONS, SIGNALS, metrics_of
from bottleneck_operator.errors import BottleneckError
from bottleneck_operator.settings import LabelSettings, Settings
from bottleneck_operator.telemetry.fetch import scrapes
from bottleneck_operator.telemetry.fetch.client import PrometheusClient
from bottleneck_operator.telemetry.fetch.scrapes import ScrapeState
from bottleneck_operator.telemetry.fetch.store import detect, labels_of, to_float
from bottleneck_operator.telemetry.plan.catalog import tag
from bottleneck_operator.telemetry.plan.discovery import Layout
from bottleneck_operator.telemetry.plan.names import add_matchers, quote, validate_k8s_name, with_matchers
from bottleneck_operator.telemetry.plan.selectors import duration, sel

log = logging.getLogger(__name__)
PROBE = "bn_doctor"
WINDOW = 600.0  # seconds of data each check counts samples in
# Resolution at which a series' first sample in the window is found: its age is known to within this.
FIRST_SAMPLE_STEP = 5.0


@dataclass(frozen=True)
class Finding:
    """One family's state.

    Attributes:
        family: the exporter ("dcgm-exporter", "kube-state-metrics", "cadvisor", "node-exporter", "collector").
        status: "ok", "degraded" or "missing".
        required: a verdict is impossible without it.
        found: what was found (layout, fields, scrape interval).
        can: what the analysis can say from it.
        cannot: what it cannot say.
        fix: the exact change that closes the gap ("" when there is none).
    """

    family: str
    status: str
    required: bool
    found: str
    can: str = ""
    cannot: str = ""
    fix: str = ""


@dataclass(frozen=True)
class Diagnosis:
    """The findings, the detected layout, and whether a verdict is possible."""

    findings: tuple[Finding, ...]
    layout: Layout
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def verdict_possible(self) -> bool:
        return all(f.status != "missing" for f in self.findings if f.required)

    def as_dict(self) -> dict[str, object]:
        return {
            "verdictPossible": self.verdict_possible,
            "layout": self.layout.describe(),
            "findings": [f.__dict__ for f in self.findings],
            "notes": list(self.notes),
        }

    def summary(self) -> str:
        """One line per family, as the operator logs it at start."""
        lines = [f"{f.family}: {f.status} ({f.found})" + (f"; fix: {f.fix}" if f.fix else "") for f in self.findings]
        return "; ".join(lines)


def _queries(labels: LabelSettings, namespace: str | None) -> dict[str, tuple[str, str]]:
    """name -> (selector, what its sample count measures); the namespace narrows the pod families."""
    ns = [f"namespace={quote(namespace)}"] if namespace else []
    dcgm_ns = [f"{labels.dcgm_namespace_label}={quote(namespace)}"] if namespace else []
    mapped = [f'{labels.dcgm_pod_label}!=""', *dcgm_ns]

    def m(signal: str, index: int = 0) -> str:  # the signal table's name of the probed metric
        return metrics_of(signal)[index]

    return {
        "dcgm_dev": (sel(m("gpu_util"), *mapped), "interval"),
        "dcgm_fb": (sel(m("fb_used_frac"), *mapped), "interval"),
        "dcgm_shipped": (sel(m("gr_engine_active"), *mapped), "present"),
        "dcgm_sm": (sel(m("sm_active"), *mapped), "present"),
        "dcgm_nvlink": (sel(m("nvlink_tx_bps"), *mapped), "present"),
        "dcgm_pipes": (sel(m("fp32_active"), *mapped), "present"),
        "dcgm_power_limit": (sel(m("power_limit_w"), *mapped), "present"),
        **{f"dcgm_reasons_{i}": (sel(name, *mapped), "present") for i, name in enumerate(CLOCK_REASONS)},
        "ksm": (sel("kube_pod_info", *ns), "interval"),
        "ksm_limits": (sel(m("cpu_limit_cores"), *ns), "present"),
        "cadvisor": (sel(m("cpu_cores"), 'container!=""', *ns), "interval"),
        "cadvisor_cfs": (sel(m("cpu_throttled_frac", 1), *ns), "present"),
        "cadvisor_psi": (sel(*SIGNALS["sc_psi_cpu_some"].alternates, 'pod!=""', *ns), "present"),
        "node": (sel(m("node_cpus"), 'mode="idle"'), "interval"),
        "node_psi": (sel(m("node_psi_cpu_some")), "present"),
        "node_ib": (sel(m("ib_rx_bps")), "present"),
        "sidecar": (sel("bottleneck_sidecar_info", *ns), "interval"),
    }


def _interval_expr(selector: str, at: float) -> str:
    """Median over series of the seconds between a series' samples, each series measured over its own age.

    A series older than the window has the span from the window's start to its last sample over its
    samples; a younger one (a Job that started five minutes ago) has its own span, last sample minus
    first, over its gaps: dividing the whole window by its few samples would read a 15 s scrape as a
    minute or more. A series with one sample gives no
    interval, so the check still reads as present with 0.
    """
    w = duration(WINDOW)
    stamps = f"timestamp({selector})[{w}:{duration(FIRST_SAMPLE_STEP)}]"
    first, last = f"min_over_time({stamps})", f"max_over_time({stamps})"
    count = f"count_over_time({selector}[{w}])"
    start = f"{at - WINDOW:.3f}"
    # an old series' first step finds a sample from before the window (the lookback): it spans the window
    young = f"(({last} - {first}) / ({count} - 1 > 0) and {first} >= {start})"
    old = f"(({last} - {start}) / {count} and {first} < {start})"
    return f"(quantile(0.5, {young} or {old}) or 0 * count(last_over_time({selector}[{w}])))"


def _probe(client: PrometheusClient, labels: LabelSettings, namespace: str | None, at: float) -> dict[str, float]:
    """Median seconds between samples per check (0.0: present but one sample; absent: no series)."""
    w = duration(WINDOW)
    parts = []
    for name, (selector, measure) in _queries(labels, namespace).items():
        expr = _interval_expr(selector, at) if measure == "interval" else f"count(last_over_time({selector}[{w}]))"
        parts.append(tag(expr, PROBE, name))
    found: dict[str, float] = {}
    for row in client.query(add_matchers(" or ".join(parts), labels.selector_matchers), at):
        found[labels_of(row).get(PROBE, "")] = to_float(row.get("value", [0, "NaN"])[1])  # type: ignore[index]
    return found


def _interval(found: dict[str, float], name: str) -> str:
    seconds = found.get(name)
    if seconds is None:
        return "no samples"
    return f"~{seconds:.0f}s scrape interval" if seconds else "one sample so far"


def _dcgm(found: dict[str, float], layout: Layout) -> Finding:
    if "dcgm_fb" not in found or layout.dcgm == "unmapped":
        if layout.dcgm == "unmapped":
            return Finding(
                "dcgm-exporter", "missing", True, "GPU series without pod labels",
                cannot="which pod uses which GPU: no verdict",
                fix="turn on dcgm-exporter's Kubernetes pod mapping: its flag --kubernetes, or the environment "
                "variable DCGM_EXPORTER_KUBERNETES=true (dcgm-exporter's chart and the GPU Operator set it: look for an "
                "override), with the kubelet's pod-resources socket (/var/lib/kubelet/pod-resources) mounted; where the "
                "device plugin names GPUs by device rather than UUID (GKE, some MIG set-ups) add "
                "--kubernetes-gpu-id-type=device-name. (kubernetes.enablePodLabels copies pods' own labels; it is not "
                "the mapping.)",
            )  # fmt: skip
        return Finding(
            "dcgm-exporter", "missing", True, "no DCGM_FI_DEV_* series",
            cannot="any verdict: the GPU series are the core of the analysis",
            fix="install NVIDIA's dcgm-exporter chart (or the GPU Operator) with its ServiceMonitor enabled "
            "(serviceMonitor.enabled=true); keep honorLabels as it is: the operator reads either layout",
        )  # fmt: skip
    fields = "full" if "dcgm_sm" in found else "shipped counters" if "dcgm_shipped" in found else "DEV only"
    extras, adds = _dcgm_extras(found)
    what = f"{layout.dcgm}, host label {layout.dcgm_host}, fields: {fields}{extras}, {_interval(found, 'dcgm_fb')}"
    if fields == "full":
        return Finding(
            "dcgm-exporter",
            "ok",
            True,
            what,
            can="every class from GPU activity, tensor, DRAM, PCIe, SM" + adds,
        )
    missing = "SM activity/occupancy and NVLink bytes" if fields == "shipped counters" else "every PROF field"
    return Finding(
        "dcgm-exporter", "degraded", True, what,
        can="verdicts from " + ("GR engine, tensor, DRAM and PCIe activity" if fields != "DEV only" else "DEV fields") + adds,
        cannot=f"{missing}: less certain GPU vs Memory vs Interconnect",
        fix="turn on the fields with the chart's counters file: dcgmCounters.enabled=true (dcgmCounters.namespace: "
        "dcgm-exporter's namespace), then GPU Operator: dcgmExporter.config.name=bottleneck-dcgm-counters; "
        "dcgm-exporter's chart: mount the ConfigMap and add arguments [-f, /etc/dcgm-exporter/custom-counters.csv]. "
        "Own file: add the lines 'DCGM_FI_PROF_SM_ACTIVE, gauge, SM active ratio.' and "
        "'DCGM_FI_PROF_SM_OCCUPANCY, gauge, SM occupancy ratio.' (the chart's file also turns on the power "
        "limit, the clock-event reasons and the FP32/FP16 pipes)",
    )  # fmt: skip


# The optional DCGM fields a counters file may add beside a field set: (probes, as found, what they add).
_DCGM_EXTRAS = (
    (
        ("dcgm_power_limit", *(f"dcgm_reasons_{i}" for i in range(len(CLOCK_REASONS)))),
        "power limit/clock reasons",
        "a board's enforced power limit and why its clock is lowered",
    ),
    (("dcgm_pipes",), "FP32/FP16 pipes", "FP32/FP16 math beside the tensor pipes"),
)


def _dcgm_extras(found: dict[str, float]) -> tuple[str, str]:
    """(" + <found>" for each optional field group found, "; <what it adds>" for each)."""
    on = [(what, adds) for probes, what, adds in _DCGM_EXTRAS if any(p in found for p in probes)]
    return "".join(f" + {what}" for what, _ in on), "".join(f"; {adds}" for _, adds in on)


def _ksm(found: dict[str, float], layout: Layout) -> Finding:
    if "ksm" not in found:
        return Finding(
            "kube-state-metrics", "degraded", False, "no kube_pod_info",
            can="pods found by the '<job>-' name prefix",
            cannot="the pods' nodes (so no node-exporter signals), CPU limits, neighbours",
            fix="install kube-state-metrics (kube-prometheus-stack: kubeStateMetrics.enabled=true) watching the Jobs' namespaces",
        )  # fmt: skip
    what = _interval(found, "ksm") + ("" if "ksm_limits" in found else ", no resource limits")
    if len(layout.clusters) > 1:
        return Finding(
            "kube-state-metrics", "degraded", False, f"{what}, clusters {', '.join(layout.clusters)}",
            cannot="telling pods of the same name in different clusters apart",
            fix="set selectorMatchers in the chart (BOTTLENECK_SELECTOR_MATCHERS), e.g. ['cluster=\"<this cluster>\"']",
        )  # fmt: skip
    return Finding("kube-state-metrics", "ok", False, what, can="pods, nodes, CPU and memory limits, neighbours")


def _cadvisor(found: dict[str, float], layout: Layout) -> Finding:
    if "cadvisor" not in found:
        return Finding(
            "cadvisor", "degraded", False, "no container_cpu_usage_seconds_total",
            cannot="the job's own CPU use and throttling (CPU evidence comes from the collector, if any)",
            fix="scrape the kubelet's /metrics/cadvisor (kube-prometheus-stack: kubelet.serviceMonitor.cAdvisor=true)",
        )  # fmt: skip
    paths = ", ".join(layout.cadvisor_paths) or "one path"
    what = f"{layout.cadvisor}, {paths}, {_interval(found, 'cadvisor')}"
    if "cadvisor_cfs" not in found:
        what += ", no CFS series (no CPU limits)"
    can = "the job's CPU use, working set, throttling, memory limit"
    if "cadvisor_psi" in found:  # the kubelet's PSI (KubeletPSI, Kubernetes >= 1.34)
        what, can = what + ", pod PSI", can + ", the pod's own pressure (PSI)"
    return Finding("cadvisor", "ok", False, what, can=can)


def _node(found: dict[str, float], layout: Layout) -> Finding:
    if "node" not in found:
        return Finding(
            "node-exporter", "degraded", False, "no node_cpu_seconds_total",
            cannot="host-side evidence: iowait, disk, network, node memory pressure",
            fix="install node-exporter (kube-prometheus-stack: nodeExporter.enabled=true)",
        )  # fmt: skip
    what = f"join: {layout.node}, {_interval(found, 'node')}" + ("" if "node_psi" in found else ", no PSI")
    what += ", InfiniBand ports" if "node_ib" in found else ""
    if layout.node == "no-join":
        return Finding(
            "node-exporter", "degraded", False, what,
            cannot="which series belong to which node: node_uname_info's nodename is not the node name "
            "and no exporter pod is placed by kube_pod_info",
            fix="set labelMapping.nodeExporterNodeLabel after adding the node name with a relabeling on "
            "node-exporter's ServiceMonitor: {sourceLabels: [__meta_kubernetes_pod_node_name], targetLabel: node}",
        )  # fmt: skip
    can = "host CPU, iowait, disk, network, memory and pressure"
    can += "; RDMA (InfiniBand, RoCE) traffic the network interfaces do not see" if "node_ib" in found else ""
    return Finding("node-exporter", "ok", False, what, can=can)


def _sidecar(found: dict[str, float], _: Layout) -> Finding:
    if "sidecar" not in found:
        lost = (
            "process states and the pod's own I/O"
            if "cadvisor_psi" in found
            else "the pod's own pressure stall and process states"
        )
        return Finding(
            "collector", "degraded", False, "no bottleneck_sidecar_* series",
            cannot=f"{lost} (the analysis uses cAdvisor and node-exporter)",
            fix="annotate the Job bottleneck.dev/profile: \"true\" with the webhook on (webhook.enabled=true) "
            "and let Prometheus scrape the collector (the chart's PodMonitor, created with sidecar.podMonitor.enabled "
            "auto or true where the Prometheus Operator's CRDs are served; see the scrape finding)",
        )  # fmt: skip
    return Finding("collector", "ok", False, _interval(found, "sidecar"), can="the pod's own pressure and throttling")


def _scrape(state: ScrapeState) -> Finding:
    """The collectors and exporters as Prometheus scrapes them (see :mod:`.scrapes`)."""
    found, fixes = scrapes.assess(state)
    if not fixes:
        return Finding("scrape", "ok", False, found, can="every injected collector and exporter target is read")
    return Finding(
        "scrape", "degraded", False, found,
        cannot="the unscraped pods' and nodes' own signals: their verdicts rest on fewer families",
        fix="; ".join(fixes),
    )  # fmt: skip


_CHECKS: tuple[Callable[[dict[str, float], Layout], Finding], ...] = (_dcgm, _ksm, _cadvisor, _node, _sidecar)


def check(client: PrometheusClient, labels: LabelSettings, at: float, namespace: str | None = None) -> Diagnosis:
    """What the analysis can say from this Prometheus at ``at``.

    Args:
        client: the Prometheus client.
        labels: the configured label mapping (the detected layout applies on top, as in a pass).
        at: evaluation time (unix seconds); each family is looked for in the 10 minutes before, and
            ``up`` of the collectors and exporters read then (see :mod:`.scrapes`).
        namespace: look at this namespace's pods only.

    Returns:
        The diagnosis.

    Raises:
        InvalidName: an invalid namespace or selector matcher.
        PrometheusUnavailable, QueryRejected: as for any query.
    """
    if namespace:
        validate_k8s_name("namespace", namespace)
    configured = with_matchers(labels)
    layout = detect(client, configured, at) if configured.label_layout_detection else Layout()
    mapping = layout.labels(configured) if configured.label_layout_detection else configured
    found = _probe(client, mapping, namespace, at)
    state = scrapes.read(client, at, WINDOW, list(mapping.selector_matchers), namespace)
    notes = scrapes.unread_jobs(client, labels, at, WINDOW)
    if not configured.label_layout_detection:
        notes.append("layout detection is off: the configured labels are read as they are")
    if state.pools is None:
        notes.append(
            f"the scrape pools could not be listed ({state.pools_error}): the PodMonitor's selection is unchecked"
        )
    findings = (*(c(found, layout) for c in _CHECKS), _scrape(state))
    return Diagnosis(findings, layout, tuple(notes))


def export(diagnosis: Diagnosis, registry: CollectorRegistry) -> None:
    """Expose the diagnosis as ``bottleneck_monitoring_family{family,status,required}`` (1 per family)."""
    gauge = Gauge(
        "bottleneck_monitoring_family",
        "What the operator found of each telemetry family at start (see `bottleneck-operator doctor`): "
        "1 for the family's status.",
        ["family", "status", "required"],
        registry=registry,
    )
    for f in diagnosis.findings:
        gauge.labels(f.family, f.status, str(f.required).lower()).set(1)


def _run_at_start(settings: Settings, registry: CollectorRegistry | None) -> None:
    client = PrometheusClient(settings)
    try:
        diagnosis = check(client, settings.labels, time.time())
    except BottleneckError as exc:
        log.warning("monitoring check at start failed: %s", exc)
        return
    finally:
        client.close()
    level = logging.INFO if diagnosis.verdict_possible else logging.WARNING
    log.log(level, "monitoring as found (bottleneck-operator doctor): %s", diagnosis.summary())
    if registry is not None:
        export(diagnosis, registry)


def check_at_start(settings: Settings, registry: CollectorRegistry | None = None) -> threading.Thread:
    """Run :func:`check` once in the background: log its summary and export it on ``registry``.

    A daemon thread of its own: a slow or unreachable Prometheus never delays the operator's start.
    """
    thread = threading.Thread(
        target=_run_at_start, args=(settings, registry), name="bottleneck monitoring check", daemon=True
    )
    thread.start()
    return thread
