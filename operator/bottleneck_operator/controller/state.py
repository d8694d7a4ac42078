"""The operator's runtime state, kept in kopf's ``memo``: tracked Jobs, clients, metrics.

Everything durable lives in the reports themselves (phase, verdict, timeline, conditions); this
state is a cache rebuilt from the watch stream and the reports after a restart.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from bottleneck_operator.analysis.cluster import ClusterBook
from bottleneck_operator.controller.cluster_metrics import ClusterMetrics
from bottleneck_operator.controller.health import PassHealth
from bottleneck_operator.controller.metrics import OperatorMetrics
from bottleneck_operator.controller.places import Places
from bottleneck_operator.controller.pod_templates import NO_CLAIMS, VolumeClaims
from bottleneck_operator.controller.reports_api import ReportsApi
from bottleneck_operator.reports import FINAL_PHASES, Phase, ReportStatus
from bottleneck_operator.settings import AnalysisSettings, InjectionSettings, OperationSettings, Settings

if TYPE_CHECKING:
    from bottleneck_operator.pipeline import JobRequest, JobResult

logger = logging.getLogger("bottleneck_operator.operator")

Clock = Callable[[], float]
# (involved object's body, type, reason, message): posts one Kubernetes Event.
EventPoster = Callable[[dict[str, Any], str, str, str], None]


class AnalyzerLike(Protocol):
    """What the operator needs of ``pipeline.Analyzer`` (one batched analysis of many Jobs).

    ``step`` is passed only for a batch read coarser than the base step (long windows, see
    ``telemetry.plan.grid``).
    """

    def analyze_jobs(
        self, requests: Sequence[JobRequest], *, phase: Phase = "Running", step: float | None = None
    ) -> list[JobResult]: ...

    @property
    def queries_issued(self) -> int: ...


@dataclass
class TrackedJob:
    """One profiled Job as last seen on the watch stream, with its report's last written status.

    Attributes:
        namespace, name, uid: the Job's identity.
        start: ``status.startTime`` (unix seconds) or None while it has not started.
        end: when it finished (``completionTime``, else the Complete/Failed condition's time).
        phase: "Pending", "Running", "Completed" or "Failed" (the Job's, as the report shows it).
        status: the report's ``.status`` as last read or written (None: report not ensured yet).
        report_ready: the report exists (created or found).
        deleted: the Job was deleted; its report is finalised as it stands.
        kind, api_version: the workload's kind (a batch/v1 Job or a training operator's, see
            :mod:`.workloads`); Events are posted on it and the report's ``jobRef`` names it.
        collector, host_cgroup: whether its annotations ask for the collector and its host mount.
        report: its report's name: the workload's own, unless a workload of another kind and the
            same name had it first (see ``jobs.report_names``).
    """

    namespace: str
    name: str
    uid: str | None
    kind: str = "Job"
    api_version: str = "batch/v1"
    # The workload's collector annotations, for the webhook deciding on its pods without an API call.
    collector: bool = True
    host_cgroup: bool = True
    # A Job admitted without its collector while the webhook was unavailable (see jobs.missed_by_webhook).
    no_collector: bool = False
    # The Pod Security level under which its collector runs without the host cgroup mount ("": with it).
    no_host_cgroup: str = ""
    start: float | None = None
    end: float | None = None
    # The claims its pod templates mount: the cluster summary's storage classes (controller.places).
    claims: VolumeClaims = NO_CLAIMS
    phase: Phase = "Pending"
    report_ready: bool = False
    deleted: bool = False
    report: str = ""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False, compare=False)
    # The status is kept as compact JSON: with its timeline of up to 48 windows it weighs ~20 KB as
    # Python objects and ~5 KB as text, for every profiled Job, for as long as the operator runs.
    _status: bytes | None = field(default=None, repr=False, compare=False)
    # What every pass asks of every Job (its class, whether it was analysed), kept beside the JSON:
    # parsing a thousand statuses on the event loop for these would hold it up for a quarter second.
    _bottleneck: str | None = field(default=None, repr=False, compare=False)
    _analysed: bool = field(default=False, repr=False, compare=False)

    @property
    def status(self) -> ReportStatus | None:
        """The report's status as last read or written (a fresh copy; None: report not ensured yet)."""
        return None if self._status is None else ReportStatus.model_validate_json(self._status)

    @status.setter
    def status(self, value: ReportStatus | None) -> None:
        self._status = None if value is None else value.model_dump_json(by_alias=True, exclude_none=True).encode()
        self._bottleneck = value.bottleneck if value is not None else None
        self._analysed = value is not None and value.last_analysis_time is not None

    @property
    def current_class(self) -> str | None:
        """The report's class as last read or written (None: no verdict yet), without parsing the status."""
        return self._bottleneck

    @property
    def analysed_once(self) -> bool:
        """The report has had an analysis (``lastAnalysisTime`` set), without parsing the status."""
        return self._analysed

    def __post_init__(self) -> None:
        self.report = self.report or self.name

    @property
    def key(self) -> tuple[str, str, str]:
        """(namespace, kind, name): a Job and a PyTorchJob of one name are two workloads."""
        return (self.namespace, self.kind, self.name)

    @property
    def finished(self) -> bool:
        return self.phase in FINAL_PHASES

    def body(self) -> dict[str, Any]:
        """A minimal body of the workload: enough for kopf to build the Event's involvedObject."""
        meta: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if self.uid:
            meta["uid"] = self.uid
        return {"apiVersion": self.api_version, "kind": self.kind, "metadata": meta}


# Invalid annotation values remembered (one Warning Event per Job and value): the oldest go first.
WARNED_KEPT = 4096


class BoundedDict(OrderedDict[str, str]):
    """A dict that forgets its oldest entries beyond ``limit`` (``warned`` must not grow with every Job ever seen)."""

    def __init__(self, limit: int = WARNED_KEPT) -> None:
        super().__init__()
        self.limit = limit

    def __setitem__(self, key: str, value: str) -> None:
        super().__setitem__(key, value)
        self.move_to_end(key)
        while len(self) > self.limit:
            self.popitem(last=False)


@dataclass
class OperatorState:
    """Shared by the handlers (through ``memo``) and the pass loop."""

    settings: Settings
    api: ReportsApi
    analyzer_factory: Callable[[], AnalyzerLike]
    clock: Clock = time.time
    metrics: OperatorMetrics = field(default_factory=OperatorMetrics)
    jobs: dict[tuple[str, str, str], TrackedJob] = field(default_factory=dict)
    warned: BoundedDict = field(default_factory=BoundedDict)
    # Namespace -> its labels' Pod Security enforce level ("" when unlabelled), from the watch.
    namespace_levels: dict[str, str] = field(default_factory=dict)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    started: float = field(default_factory=time.monotonic)
    analyzer: AnalyzerLike | None = None
    # The latest digest of every Job of the last week, and the gauges of their summary (summary.py).
    cluster: ClusterBook = field(default_factory=ClusterBook)
    cluster_metrics: ClusterMetrics | None = None
    # Finished Jobs whose digest is yet to be written on their report (digest_mirror.py): key ->
    # (namespace, report name), oldest first.
    digests_to_write: dict[tuple[str, str, str], tuple[str, str]] = field(default_factory=dict)
    # Whether a retention sweep has put the finished Jobs' digests back in the book (the first one).
    digests_restored: bool = False
    # Tracked Jobs when the heap was last frozen after a pass (None: not yet; see passes.settle_heap).
    frozen_at_jobs: int | None = None
    # Where the book's Jobs' storage and nodes sit (storage classes, fabrics, racks): read from the API.
    places: Places = field(init=False, repr=False)
    loop_task: asyncio.Task[None] | None = None
    # Set by the handlers once an event poster is reachable (kopf's lives in handler contexts).
    poster: EventPoster | None = None
    # Whether this replica leads (controller.leader); a follower posts no Events on Jobs, the leader does.
    leading: Callable[[], bool] = field(default=lambda: True, repr=False)
    # The groups the controller reads, taken from ``settings`` once.
    analysis: AnalysisSettings = field(init=False, repr=False)
    operation: OperationSettings = field(init=False, repr=False)
    injection: InjectionSettings = field(init=False, repr=False)
    health: PassHealth = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.analysis = self.settings.analysis
        self.operation = self.settings.operation
        self.injection = self.settings.injection
        self.health = PassHealth(deadline=self.analysis.pass_deadline)
        self.places = Places(
            rack_labels=self.operation.rack_node_labels, fabric_labels=self.operation.fabric_node_labels
        )

    def forget(self, job: TrackedJob) -> None:
        """Drop a Job whose report is final from the cache (it has no work left)."""
        if self.jobs.get(job.key) is job:
            del self.jobs[job.key]

    def post_event(self, job: TrackedJob, type_: str, reason: str, message: str) -> None:
        """A Kubernetes Event on the Job, through the handlers' poster (logged too)."""
        log = logger.warning if type_ == "Warning" else logger.info
        log("%s/%s: %s: %s", job.namespace, job.name, reason, message)
        if self.poster is not None and self.leading():
            self.poster(job.body(), type_, reason, message)

    def running_jobs(self) -> list[TrackedJob]:
        """Jobs being analysed on every pass: started, not finished, report in place."""
        return [j for j in self.jobs.values() if j.report_ready and j.start is not None and not j.finished]

    def request_pass(self) -> None:
        """Wake the loop early (a Job ended, a report is missing)."""
        self.wake.set()
