"""The settings, one model per concern, each field declared once and documented where it is declared.

:class:`~bottleneck_operator.settings.Settings` nests these models (as kopf's ``OperatorSettings``
nests ``posting``, ``watching``, ...), and each part of the code takes only its concern's model:
frozen, so a model is hashable where its values are (the label mapping keys the layout cache).
A field's environment variable is ``BOTTLENECK_<FIELD>`` whatever its group, so every field name
is unique across the groups.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    SecretStr,
    field_validator,
    model_validator,
)

from bottleneck_operator.contract.names import COLLECTOR_PERIOD, COLLECTOR_PORT

# A label key: an optional DNS-subdomain prefix and "/", then a name of up to 63 characters.
_LABEL_KEY = re.compile(r"([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")

ExporterFamily = Literal["dcgm", "node", "cadvisor", "ksm", "sidecar"]


def _job_pairs(value: Any) -> Any:
    # The environment and the chart give a mapping; the group keeps sorted pairs, so equal
    # settings hash equal whatever order the mapping was written in.
    if not isinstance(value, dict):
        return value
    for family, jobs in value.items():
        if not isinstance(jobs, list | tuple):
            # tuple() would split a string into letters: refused here, named by its family.
            raise ValueError(f"the jobs of {family!r} must be a list of job names")
    return tuple((family, tuple(jobs)) for family, jobs in sorted(value.items()))


def _job_mapping(pairs: tuple[tuple[str, tuple[str, ...]], ...]) -> dict[str, list[str]]:
    return {family: list(jobs) for family, jobs in pairs}


# exporter family -> the ``job`` label values its series must carry (empty: any job)
ScrapeJobs = Annotated[
    tuple[tuple[ExporterFamily, tuple[str, ...]], ...],
    BeforeValidator(_job_pairs),
    PlainSerializer(_job_mapping),
]


def default_scrape_jobs() -> tuple[tuple[ExporterFamily, tuple[str, ...]], ...]:
    # kube-prometheus-stack's job names; dcgm-exporter's chart and the GPU Operator's; the chart's PodMonitor.
    return (
        ("cadvisor", ("kubelet",)),
        ("dcgm", ("dcgm-exporter", "nvidia-dcgm-exporter")),
        ("ksm", ("kube-state-metrics",)),
        ("node", ("node-exporter",)),
        ("sidecar", ("bottleneck-collector",)),
    )


def redact_url(url: str) -> str:
    """The URL with any ``user:password@`` replaced by ``***@``: what logs and messages may show."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]))


class _Group(BaseModel):
    # hide_input_in_errors: a rejected value (a URL with its user:password) is named, never echoed.
    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True, hide_input_in_errors=True)


class PrometheusSettings(_Group):
    """How to reach the PromQL API."""

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


class LabelSettings(_Group):
    """Which labels carry what, where installations differ."""

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
    selector_matchers: tuple[str, ...] = Field(
        (),
        description=(
            'Label matchers added to every selector, e.g. ["cluster=\\"a\\""] to read one cluster of a '
            "Thanos/Mimir that serves several (pods of the same name in two clusters never merge)."
        ),
    )
    scrape_jobs: ScrapeJobs = Field(
        default_factory=default_scrape_jobs,
        description=(
            "The `job` label values each exporter family's series must carry: a series from any other scrape "
            "job is never read, so a pod that publishes series under another tenant's names (its own PodMonitor "
            "with honorLabels: true) cannot reach that tenant's report. Defaults: kube-prometheus-stack's jobs, "
            "dcgm-exporter's chart and the GPU Operator's, and the chart's PodMonitor. A family left out, or "
            "given [], is read from any job."
        ),
    )
    label_layout_detection: bool = Field(
        True,
        description=(
            "Detect each exporter's label layout (dcgm-exporter behind honorLabels: false, Hostname or "
            "hostname, the node-exporter join) from the data when the configured labels find nothing."
        ),
    )


class AnalysisSettings(_Group):
    """Windows, resolution and the classifier's thresholds."""

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


class OperationSettings(_Group):
    """What the operator watches, keeps and serves."""

    namespaces: tuple[str, ...] = Field((), description="Namespaces to watch; empty: the whole cluster.")
    # The cluster summary's hot spots beyond nodes (docs/cluster.md): node label keys read with a GET of
    # each Job's nodes, only when one of the two lists is non-empty.
    rack_node_labels: tuple[str, ...] = Field(
        ("topology.kubernetes.io/zone", "network.topology.nvidia.com/leaf"),
        description=(
            "Node label keys that place a node in a rack (or zone) for the cluster summary's hot spots: "
            "Kubernetes' well-known zone label and Topograph's top-of-rack (leaf) switch label by default."
        ),
    )
    fabric_node_labels: tuple[str, ...] = Field(
        ("nvidia.com/gpu.clique", "network.topology.nvidia.com/spine"),
        description=(
            "Node label keys that place a node on a network fabric for the cluster summary's hot spots: the "
            "GPU Operator's NVLink clique label and Topograph's spine switch label by default. Both lists "
            "empty: nodes are never read."
        ),
    )
    report_retention: float = Field(
        30 * 86400.0, ge=0, description="Seconds a finished Job's report is kept; 0 keeps reports forever."
    )
    timeline_length: int = Field(48, ge=1, le=1000, description="Per-window verdicts kept in a report.")
    metrics_port: int = Field(8080, ge=0, le=65535, description="Port of the operator's /metrics; 0: off.")
    liveness_endpoint: str = Field("http://0.0.0.0:8081/healthz", description="kopf's liveness endpoint; empty: off.")

    # one leader among replicas (docs/operator.md, "Several replicas: one leader")
    leader_election: bool = Field(
        False,
        description=(
            "Hold a coordination.k8s.io Lease so that one replica runs the analysis passes and the retention "
            "sweep (and writes reports and Events); every replica serves the webhook. The chart turns it on."
        ),
    )
    lease_name: str = Field("bottleneck-operator", min_length=1, description="Name of the Lease (one per release).")
    lease_namespace: str = Field(
        "", description="Namespace of the Lease; empty: the pod's own (POD_NAMESPACE, else the service account's)."
    )
    leader_identity: str = Field(
        "", description="This replica's holder identity; empty: the pod's name (POD_NAME), else host and process."
    )
    lease_duration: float = Field(
        15.0, ge=1, le=300, description="Seconds without a renewal before another replica takes the Lease."
    )
    lease_renew_deadline: float = Field(
        10.0,
        gt=0,
        description="Seconds the leader keeps leading without a successful renewal (less than lease_duration).",
    )
    lease_retry_period: float = Field(
        2.0, gt=0, description="Seconds between attempts to take or renew the Lease (less than the renew deadline)."
    )

    @field_validator("rack_node_labels", "fabric_node_labels")
    @classmethod
    def _label_keys(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [key for key in value if not _LABEL_KEY.fullmatch(key)]
        if bad:
            raise ValueError(f"not Kubernetes label keys ([prefix/]name): {', '.join(map(repr, bad))}")
        return tuple(dict.fromkeys(value))

    @model_validator(mode="after")
    def _lease_timing(self) -> OperationSettings:
        # The holder must give up before anyone else may take over, and try more than once before that.
        if not self.lease_retry_period < self.lease_renew_deadline < self.lease_duration:
            raise ValueError("lease timing needs lease_retry_period < lease_renew_deadline < lease_duration")
        return self


class InjectionSettings(_Group):
    """The admission webhook and the collector it injects."""

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
            "(pressure, throttling, IO, memory). A hostPath volume: added only where the namespace's Pod Security "
            "level is 'privileged' (pod_security_default_level for unlabelled namespaces); a Job opts out with "
            'bottleneck.dev/sidecar-host-cgroup: "false".'
        ),
    )
    sidecar_share_process_namespace: bool = Field(
        True,
        description=(
            "Set shareProcessNamespace on profiled pods (unless the Job says otherwise) so the collector sees "
            "the trainer's process states (R, D)."
        ),
    )

    pod_security_default_level: Literal["privileged", "baseline", "restricted"] = Field(
        "baseline",
        description=(
            "The Pod Security level of a namespace without a pod-security.kubernetes.io/enforce label: the "
            "cluster's default (the API server's AdmissionConfiguration, or Kyverno/Gatekeeper policies). The "
            "host cgroup mount goes only where the level is 'privileged'."
        ),
    )
    owner_cache_size: int = Field(
        4096, ge=16, description="Training workloads whose profiling switches the pod webhook keeps after one read."
    )
    owner_cache_ttl: float = Field(
        300.0, gt=0, description="Seconds a workload read by the pod webhook is trusted before it is read again."
    )


# Each group under the name of the Settings field that holds it, in the order the docs list them.
GROUPS: tuple[tuple[str, type[BaseModel]], ...] = (
    ("prometheus", PrometheusSettings),
    ("labels", LabelSettings),
    ("analysis", AnalysisSettings),
    ("injection", InjectionSettings),
    ("operation", OperationSettings),
)
