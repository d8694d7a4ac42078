"""The simulator's series as real monitoring stacks store them (a pure transform before writing).

The exporters' renderers (:mod:`.exporters`, :mod:`.dcgm`) write what the exporters publish with
the scrape labels the project's own Prometheus would add (``honor_labels: true``). Real installs
store the same names differently; each layout here rewrites the series the way one does:

- ``project``: unchanged.
- ``kube-prometheus-stack``: dcgm-exporter behind a ServiceMonitor with ``honorLabels: false`` (the
  exporter pod in ``namespace``/``pod``/``container``, the workload in ``exported_*``) and the
  ``hostname`` label of newer dcgm-exporter builds; cAdvisor without ``container_spec_*`` and with
  its CPU and working-set series served twice (``metrics_path="/metrics/resource"``) and the
  kubelet's per-cgroup PSI (``container_pressure_*``, Kubernetes >= 1.34); node-exporter
  labelled with its own pod, kernel host names that are not the node names (cloud names, upper
  case), and kube-state-metrics' ``kube_pod_info`` for the node-exporter pods (the join that finds
  their nodes).
- ``multi-cluster``: everything with ``cluster="a"``, plus a second cluster ``b`` holding pods,
  Jobs and nodes of the same names with other values (every sample halved).
- ``nvlink-implausible``: ``DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL`` off by a factor 1024 (the disputed
  unit) and the NVLink PROF fields stuck at 0 (some DGX-A100 firmware).
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, TextIO

import numpy as np

from bottleneck_operator.contract.signals import metrics_of
from bottleneck_operator_dev.simulation.exporters import job_series, kubelet_psi_series
from bottleneck_operator_dev.simulation.openmetrics import format_timestamps, write_series
from bottleneck_operator_dev.simulation.series import Series

if TYPE_CHECKING:
    from bottleneck_operator_dev.simulation.jobs import SimulatedJob

LAYOUTS = ("project", "kube-prometheus-stack", "multi-cluster", "nvlink-implausible")
DCGM_NAMESPACE = "gpu-operator"
NODE_EXPORTER_NAMESPACE = "monitoring"
NODE_EXPORTER_DS = "kube-prometheus-stack-prometheus-node-exporter"
RESOURCE_PATH = "/metrics/resource"
_WORKLOAD = ("namespace", "pod", "container")
# kubelet's /metrics/resource endpoint serves these two under the same names as cAdvisor.
_RESOURCE_METRICS = frozenset({*metrics_of("cpu_cores"), *metrics_of("mem_working_set_bytes")})
_CONSTANT = ("kube_", "_info")  # presence and limits: the same in both clusters


def _suffix(text: str) -> str:
    return f"{zlib.crc32(text.encode()) & 0xFFFFF:05x}"


def kernel_hostname(node: str, ip: str) -> str:
    """A kernel host name that is not the node's name: cloud-style for even nodes, upper case otherwise."""
    if zlib.crc32(node.encode()) % 2:
        return node.upper()
    return f"ip-{ip.replace('.', '-')}.ec2.internal"


def _dcgm_kps(s: Series) -> Series:
    labels = {k: v for k, v in s.labels.items() if k not in _WORKLOAD}
    for key in _WORKLOAD:
        if s.labels.get(key):  # an empty exposed label is no label: nothing to rename
            labels[f"exported_{key}"] = s.labels[key]
    node = labels.pop("Hostname", "")
    labels["hostname"] = node
    scrape = {
        **s.scrape,
        "namespace": DCGM_NAMESPACE,
        "pod": f"nvidia-dcgm-exporter-{_suffix(node)}",
        "container": "nvidia-dcgm-exporter",
        "service": "nvidia-dcgm-exporter",
        "endpoint": "gpu-metrics",
    }
    return dataclasses.replace(s, labels=labels, scrape=scrape)


def _node_kps(s: Series, hosts: dict[str, tuple[str, str]]) -> Series:
    ip = s.scrape.get("instance", "").rsplit(":", 1)[0]
    node, _ = hosts.get(ip, ("", ""))
    labels = dict(s.labels)
    if s.name == "node_uname_info":
        labels["nodename"] = kernel_hostname(labels.get("nodename", node), ip)
    scrape = {
        **s.scrape,
        "namespace": NODE_EXPORTER_NAMESPACE,
        "pod": f"{NODE_EXPORTER_DS}-{_suffix(node)}",
        "container": "node-exporter",
        "service": NODE_EXPORTER_DS,
        "endpoint": "http-metrics",
    }
    return dataclasses.replace(s, labels=labels, scrape=scrape)


def _cadvisor_kps(s: Series) -> Iterator[Series]:
    if s.name.startswith("container_spec_"):
        return  # kube-prometheus-stack's cAdvisorMetricRelabelings drop them
    yield s
    if s.name in _RESOURCE_METRICS and s.labels.get("container"):
        labels = {k: v for k, v in s.labels.items() if k in _WORKLOAD}
        yield dataclasses.replace(s, labels=labels, scrape={**s.scrape, "metrics_path": RESOURCE_PATH})


def _exporter_pods(job: SimulatedJob) -> Iterator[Series]:
    """kube-state-metrics' kube_pod_info of the node-exporter and dcgm-exporter pods on the job's nodes.

    The stack always ships kube-state-metrics; a scenario without kube_pod_info for the job's own
    pods stands for one that does not watch the job's namespace (``--namespaces``), so the
    monitoring namespace's pods are still there.
    """
    st = job.state
    scrape = {"instance": "10.0.0.12:8080", "job": "kube-state-metrics"}
    daemonsets = ((NODE_EXPORTER_NAMESPACE, NODE_EXPORTER_DS), (DCGM_NAMESPACE, "nvidia-dcgm-exporter"))
    for j, nd in enumerate(job.nodes):
        for namespace, owner in daemonsets:
            labels = {
                "namespace": namespace,
                "pod": f"{owner}-{_suffix(nd.name)}",
                "uid": f"{_suffix(owner + nd.name)}000-0000-4000-8000-000000000000",
                "node": nd.name,
                "created_by_kind": "DaemonSet",
                "created_by_name": owner,
                "host_ip": nd.ip,
                "pod_ip": nd.ip,
                "host_network": "true",
                "priority_class": "system-node-critical",
            }
            yield Series("kube_pod_info", "gauge", "Information about pod.", labels, np.ones(st.t.size), "node",
                         st.up["node"][j], scrape)  # fmt: skip


def kube_prometheus_stack(job: SimulatedJob, series: Iterable[Series]) -> Iterator[Series]:
    """One job's series as kube-prometheus-stack with NVIDIA's dcgm-exporter chart stores them (on Kubernetes >= 1.34)."""
    hosts = {nd.ip: (nd.name, nd.instance) for nd in job.nodes}
    for s in series:
        if s.exporter == "dcgm":
            yield _dcgm_kps(s)
        elif s.exporter == "node":
            yield _node_kps(s, hosts)
        elif s.exporter == "cadvisor":
            yield from _cadvisor_kps(s)
        else:
            yield s
    yield from kubelet_psi_series(job)
    yield from _exporter_pods(job)


def multi_cluster(series: Iterable[Series]) -> Iterator[Series]:
    """Each series in cluster "a", and a same-named one with other values in cluster "b"."""
    for s in series:
        yield dataclasses.replace(s, scrape={**s.scrape, "cluster": "a"})
        constant = s.name.startswith(_CONSTANT[0]) or s.name.endswith(_CONSTANT[1])
        values = s.values if constant else s.values * 0.5
        yield dataclasses.replace(s, values=values, scrape={**s.scrape, "cluster": "b"})


def nvlink_implausible(series: Iterable[Series]) -> Iterator[Series]:
    """NVLink read in the wrong unit (DEV counter x1024) and PROF NVLink fields stuck at 0."""
    for s in series:
        if s.name in metrics_of("nvlink_total_bps"):
            yield dataclasses.replace(s, values=s.values * 1024.0)
        elif s.name.startswith("DCGM_FI_PROF_NVLINK_"):
            yield dataclasses.replace(s, values=np.zeros_like(s.values))
        else:
            yield s


def layout_series(job: SimulatedJob, layout: str, *, extra_pods: bool = True) -> Iterator[Series]:
    """Every series of one job, stored the way ``layout`` stores them.

    Args:
        job: the simulated job.
        layout: one of :data:`LAYOUTS`.
        extra_pods: include the neighbours' pods (as :func:`.exporters.job_series`).

    Raises:
        ValueError: an unknown layout.
    """
    series = job_series(job, extra_pods=extra_pods)
    if layout == "project":
        return series
    if layout == "kube-prometheus-stack":
        return kube_prometheus_stack(job, series)
    if layout == "multi-cluster":
        return multi_cluster(series)
    if layout == "nvlink-implausible":
        return nvlink_implausible(series)
    raise ValueError(f"unknown layout {layout!r}; one of {', '.join(LAYOUTS)}")


def write_layout(jobs: Sequence[SimulatedJob], out: TextIO, layout: str, *, extra_pods: bool = True) -> None:
    """Write the jobs' series in ``layout`` as one OpenMetrics document (for promtool backfilling).

    Args:
        jobs: the simulated jobs.
        out: a text stream.
        layout: one of :data:`LAYOUTS`.
        extra_pods: include the neighbours' pods.
    """
    pairs = []
    for job in jobs:
        stamps = {e: format_timestamps(job.state.times(e)) for e in job.state.offsets}
        pairs += [(s, stamps[s.exporter]) for s in layout_series(job, layout, extra_pods=extra_pods)]
    write_series(pairs, out)
