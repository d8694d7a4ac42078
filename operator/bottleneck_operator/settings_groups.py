"""The settings' groups: the frozen view of :class:`~bottleneck_operator.settings.Settings` each
concern takes (connection, label mapping, analysis, injection, operator), and the helpers the flat
settings are validated with.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit, urlunsplit

from pydantic import SecretStr

GroupT = TypeVar("GroupT")


@dataclass(frozen=True)
class PrometheusSettings:
    """How to reach the PromQL API (see the ``prometheus_*`` fields of :class:`Settings`)."""

    prometheus_url: str
    prometheus_timeout: float
    prometheus_retries: int
    prometheus_retry_backoff: float
    prometheus_bearer_token_file: Path | None
    prometheus_username: str | None
    prometheus_password: SecretStr | None
    prometheus_ca_file: Path | None
    prometheus_insecure_skip_verify: bool
    prometheus_headers: dict[str, str]
    prometheus_compression: bool
    max_query_bytes: int
    max_answer_bytes: int = 64 << 20
    max_answer_series: int = 50_000


@dataclass(frozen=True)
class LabelSettings:
    """Which labels carry what, where installations differ (see :class:`Settings`)."""

    node_exporter_node_label: str
    dcgm_hostname_label: str
    dcgm_pod_label: str
    dcgm_namespace_label: str
    dcgm_container_label: str
    selector_matchers: tuple[str, ...] = ()
    node_exporter_join: str = "auto"
    label_layout_detection: bool = True
    # exporter family -> the ``job`` label values its series must carry (empty: any job)
    scrape_jobs: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class AnalysisSettings:
    """Windows, resolution and the classifier's thresholds (see :class:`Settings`)."""

    interval: float
    window: float
    step: float
    pass_deadline: float
    min_window: float
    min_coverage: float
    abstain_threshold: float
    secondary_margin: float
    model_path: Path | None


@dataclass(frozen=True)
class InjectionSettings:
    """The admission webhook and the collector it injects (see :class:`Settings`)."""

    webhook_enabled: bool
    webhook_port: int
    webhook_cert_dir: Path | None
    sidecar_image: str
    sidecar_port: int
    sidecar_period: float
    sidecar_cpu_request: str
    sidecar_cpu_limit: str
    sidecar_memory_request: str
    sidecar_memory_limit: str
    sidecar_mount_host_cgroup: bool
    sidecar_share_process_namespace: bool
    pod_security_default_level: str = "baseline"
    owner_cache_size: int = 4096
    owner_cache_ttl: float = 300.0


@dataclass(frozen=True)
class OperatorSettings:
    """What the operator watches, keeps and serves (see :class:`Settings`)."""

    namespaces: tuple[str, ...]
    report_retention: float
    timeline_length: int
    metrics_port: int
    liveness_endpoint: str
    leader_election: bool = False
    lease_name: str = "bottleneck-operator"
    lease_namespace: str = ""
    leader_identity: str = ""
    lease_duration: float = 15.0
    lease_renew_deadline: float = 10.0
    lease_retry_period: float = 2.0
    rack_node_labels: tuple[str, ...] = ()
    fabric_node_labels: tuple[str, ...] = ()


# Each group under the name of the Settings property that gives it; every field is in exactly one.
GROUPS: tuple[tuple[str, type], ...] = (
    ("prometheus", PrometheusSettings),
    ("labels", LabelSettings),
    ("analysis", AnalysisSettings),
    ("injection", InjectionSettings),
    ("operator", OperatorSettings),
)


def redact_url(url: str) -> str:
    """The URL with any ``user:password@`` replaced by ``***@``: what logs and messages may show."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]))


ExporterFamily = Literal["dcgm", "node", "cadvisor", "ksm", "sidecar"]


def default_scrape_jobs() -> dict[ExporterFamily, list[str]]:
    # kube-prometheus-stack's job names; dcgm-exporter's chart and the GPU Operator's; the chart's PodMonitor.
    return {
        "dcgm": ["dcgm-exporter", "nvidia-dcgm-exporter"],
        "node": ["node-exporter"],
        "cadvisor": ["kubelet"],
        "ksm": ["kube-state-metrics"],
        "sidecar": ["bottleneck-collector"],
    }


def frozen_value(name: str, value: Any) -> Any:
    """Lists as tuples and ``scrape_jobs`` as sorted pairs, so a group stays hashable."""
    if isinstance(value, list):
        return tuple(value)
    if name == "scrape_jobs":
        return tuple((family, tuple(jobs)) for family, jobs in sorted(value.items()))
    return value
