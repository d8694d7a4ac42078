"""Every setting of the operator, the analyzer and the collector, documented where it is declared.

Precedence: command-line flag, else environment variable ``BOTTLENECK_<FIELD>`` (upper case), else
the default here. Lists and mappings are given as JSON in the environment, e.g.
``BOTTLENECK_NAMESPACES='["ml","research"]'`` or ``BOTTLENECK_PROMETHEUS_HEADERS='{"X-Scope-OrgID":"team-a"}'``.

:class:`Settings` is the one place they are loaded and validated (flat, so every environment
variable and chart value keeps its name). Consumers take only their concern's group, a frozen
view built from it: :attr:`Settings.prometheus` (connection), :attr:`Settings.labels` (label
mapping), :attr:`Settings.analysis`, :attr:`Settings.injection` (webhook and collector) and
:attr:`Settings.operator`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from bottleneck_operator.contract.names import COLLECTOR_PERIOD, COLLECTOR_PORT

_G = TypeVar("_G")


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


@dataclass(frozen=True)
class OperatorSettings:
    """What the operator watches, keeps and serves (see :class:`Settings`)."""

    namespaces: tuple[str, ...]
    report_retention: float
    timeline_length: int
    metrics_port: int
    liveness_endpoint: str


# Each group under the name of the Settings property that gives it; every field is in exactly one.
GROUPS: tuple[tuple[str, type], ...] = (
    ("prometheus", PrometheusSettings),
    ("labels", LabelSettings),
    ("analysis", AnalysisSettings),
    ("injection", InjectionSettings),
    ("operator", OperatorSettings),
)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="BOTTLENECK_", extra="ignore", validate_default=True)

    # --- Prometheus connection
    prometheus_url: str = Field(
        "http://prometheus-operated.monitoring.svc:9090",
        description="Base URL of any PromQL-compatible API (Prometheus, Thanos Query, Mimir, VictoriaMetrics).",
    )
    prometheus_timeout: float = Field(
        30.0,
        gt=0,
        description=(
            "Wall-clock seconds one query may take, retries included: connecting, waiting and reading the "
            "whole answer (a slow trickle is cut off as surely as silence)."
        ),
    )

    @field_validator("prometheus_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        # Checked here, so a typo stops the command or the operator at once with the setting's name,
        # rather than as a connection error at every query.
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                "must be an http:// or https:// URL with a host, e.g. http://prometheus-operated.monitoring.svc:9090"
            )
        return value

    prometheus_retries: int = Field(
        2, ge=0, le=10, description="Extra attempts for a failed query (connection errors, 5xx, timeouts)."
    )
    prometheus_retry_backoff: float = Field(
        0.5, ge=0, description="Seconds before the first retry; doubles with each further attempt."
    )
    prometheus_bearer_token_file: Path | None = Field(
        None, description="File holding a bearer token, re-read on every pass (rotated tokens keep working)."
    )
    prometheus_username: str | None = Field(None, description="Basic-auth user name.")
    prometheus_password: SecretStr | None = Field(None, description="Basic-auth password.")
    prometheus_ca_file: Path | None = Field(None, description="CA bundle that signs the Prometheus certificate.")
    prometheus_insecure_skip_verify: bool = Field(
        False, description="Skip TLS certificate verification (testing only)."
    )
    prometheus_headers: dict[str, str] = Field(
        default_factory=dict,
        description='Extra HTTP headers on every query, e.g. {"X-Scope-OrgID": "team-a"} for Mimir/Thanos.',
    )
    prometheus_compression: bool = Field(
        False,
        description=(
            "Ask for gzip-compressed answers: a tenth of the traffic, for a remote or metered endpoint, "
            "at the cost of CPU on both ends (about a sixth of Prometheus's work in a pass)."
        ),
    )

    max_query_bytes: int = Field(
        12000,
        ge=1024,
        description=(
            "Most bytes of PromQL in one query: longer selections are split over several queries. "
            "VictoriaMetrics refuses queries over 16384 bytes by default (-search.maxQueryLen), and "
            "gateways in front of Thanos or Mimir have limits of the same kind."
        ),
    )

    max_answer_bytes: int = Field(
        64 << 20,
        ge=1 << 20,
        description=(
            "Most bytes of one answer: a larger one is not read further, and the reports of the Jobs it was "
            "for say so (reason AnswerBytesExceeded). Bounds the operator's memory whatever Prometheus holds."
        ),
    )
    max_answer_series: int = Field(
        50_000,
        ge=100,
        description="Most series in one answer: more are refused the same way (reason AnswerSeriesExceeded).",
    )

    # --- label mapping (installations differ)
    node_exporter_node_label: str = Field(
        "",
        description=(
            "Label on node-exporter series that carries the Kubernetes node name. Empty: join "
            "node_uname_info{nodename} on 'instance' (works with kube-prometheus-stack's defaults)."
        ),
    )
    dcgm_hostname_label: str = Field(
        "Hostname", description="dcgm-exporter's host label: 'Hostname', or 'hostname' in newer releases."
    )
    dcgm_pod_label: str = Field("pod", description="dcgm-exporter label carrying the pod (pod mapping on).")
    dcgm_namespace_label: str = Field("namespace", description="dcgm-exporter label carrying the namespace.")
    dcgm_container_label: str = Field("container", description="dcgm-exporter label carrying the container.")
    node_exporter_join: Literal["auto", "uname", "pod"] = Field(
        "auto",
        description=(
            "How node-exporter series without a node label reach their node: 'uname' (node_uname_info{nodename} "
            "is the node name), 'pod' (the exporter pod through kube_pod_info, as kube-prometheus-stack's rules "
            "do: hostname overrides, cloud names), or 'auto' (the one that finds the nodes)."
        ),
    )
    selector_matchers: list[str] = Field(
        default_factory=list,
        description=(
            'Label matchers added to every selector, e.g. ["cluster=\\"a\\""] to read one cluster of a '
            "Thanos/Mimir that serves several (pods of the same name in two clusters never merge)."
        ),
    )
    label_layout_detection: bool = Field(
        True,
        description=(
            "Detect each exporter's label layout (dcgm-exporter behind honorLabels: false, Hostname or "
            "hostname, the node-exporter join) from the data when the configured labels find nothing."
        ),
    )

    # --- analysis
    interval: float = Field(60.0, ge=5, description="Seconds between analysis passes over running Jobs.")
    window: float = Field(900.0, ge=60, description="Sliding window, seconds, analysed for a running Job.")
    step: float = Field(
        30.0,
        ge=1,
        description=(
            "Query resolution, seconds (>= the scrape interval is best). A window longer than 240 steps is "
            "read at a coarser step, so each series keeps at most 240 points however long the Job ran."
        ),
    )
    pass_deadline: float = Field(
        600.0,
        ge=10,
        description=(
            "Seconds one analysis pass may run: a pass past it is cancelled, and one that cannot be cancelled "
            "fails the liveness probe, so Kubernetes restarts the operator."
        ),
    )
    min_window: float = Field(120.0, ge=0, description="A window shorter than this is reported as Unknown.")
    min_coverage: float = Field(
        0.5, ge=0, le=1, description="Below this share of GPU samples in the window the verdict is Unknown."
    )
    abstain_threshold: float = Field(
        0.5, ge=0, le=1, description="Below this top-class probability the verdict is Unknown."
    )
    secondary_margin: float = Field(
        0.25, ge=0, le=1, description="A runner-up within this probability of the top class is named secondary."
    )
    model_path: Path | None = Field(
        None, description="A model file (.npz runtime model, or a .skops training file); default: the shipped model."
    )

    # --- operator
    namespaces: list[str] = Field(default_factory=list, description="Namespaces to watch; empty: the whole cluster.")
    report_retention: float = Field(
        30 * 86400.0, ge=0, description="Seconds a finished Job's report is kept; 0 keeps reports forever."
    )
    timeline_length: int = Field(48, ge=1, le=1000, description="Per-window verdicts kept in a report.")
    metrics_port: int = Field(8080, ge=0, le=65535, description="Port of the operator's /metrics; 0: off.")
    liveness_endpoint: str = Field("http://0.0.0.0:8081/healthz", description="kopf's liveness endpoint; empty: off.")

    # --- admission webhook and the injected collector
    webhook_enabled: bool = Field(True, description="Serve the mutating webhook that injects the collector.")
    webhook_port: int = Field(9443, ge=1, le=65535, description="HTTPS port of the admission webhook.")
    webhook_cert_dir: Path | None = Field(
        None, description="Directory with tls.crt and tls.key; empty: kopf makes a self-signed pair (dev)."
    )
    sidecar_image: str = Field(
        "ghcr.io/bottleneck-dev/bottleneck-operator:0.1.0", description="Image of the injected collector."
    )
    sidecar_port: int = Field(COLLECTOR_PORT, ge=1, le=65535, description="Port the collector serves /metrics on.")
    sidecar_period: float = Field(COLLECTOR_PERIOD, gt=0, description="Seconds between the collector's readings.")
    sidecar_cpu_request: str = Field("10m", description="CPU request of the injected collector.")
    sidecar_cpu_limit: str = Field("50m", description="CPU limit of the injected collector.")
    sidecar_memory_request: str = Field("32Mi", description="Memory request of the injected collector.")
    sidecar_memory_limit: str = Field("64Mi", description="Memory limit of the injected collector.")
    sidecar_mount_host_cgroup: bool = Field(
        True,
        description=(
            "Mount the node's /sys/fs/cgroup read-only into the collector so it reads the pod's own cgroup "
            "(pressure, throttling, IO, memory). A hostPath volume: namespaces enforcing the 'baseline' or "
            "'restricted' Pod Security Standard reject it, so turn it off there (or annotate the Job "
            'bottleneck.dev/sidecar-host-cgroup: "false").'
        ),
    )
    sidecar_share_process_namespace: bool = Field(
        True,
        description=(
            "Set shareProcessNamespace on profiled pods (unless the Job says otherwise) so the collector sees "
            "the trainer's process states (R, D)."
        ),
    )

    def _group(self, kind: type[_G]) -> _G:
        values = {f.name: getattr(self, f.name) for f in fields(kind)}  # type: ignore[arg-type]
        return kind(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})

    @property
    def prometheus(self) -> PrometheusSettings:
        """The connection settings alone."""
        return self._group(PrometheusSettings)

    @property
    def labels(self) -> LabelSettings:
        """The label-mapping settings alone."""
        return self._group(LabelSettings)

    @property
    def analysis(self) -> AnalysisSettings:
        """The analysis settings alone."""
        return self._group(AnalysisSettings)

    @property
    def injection(self) -> InjectionSettings:
        """The webhook and collector settings alone."""
        return self._group(InjectionSettings)

    @property
    def operator(self) -> OperatorSettings:
        """The operator's own settings alone."""
        return self._group(OperatorSettings)

    def effective(self) -> dict[str, Any]:
        """The settings as a dict with secrets masked: logged once at start."""
        data = self.model_dump(mode="json")
        if self.prometheus_password is not None:
            data["prometheus_password"] = "***"  # noqa: S105 - a mask, not a password
        if data.get("prometheus_headers"):
            data["prometheus_headers"] = {k: "***" for k in data["prometheus_headers"]}
        return data
