"""The ClusterBottleneckSummary: each pass's results become Job digests, the digests a summary.

Every analysed Job leaves its latest digest in the state's :class:`ClusterBook` (its verdict, its
nodes, one summary per pod from the window the pass fetched anyway: no extra query); at the end of
the pass the book's Jobs get their storage classes, fabrics and racks from the Kubernetes API
(:mod:`.places`, cached), the Jobs of the last week are summarised and the one cluster-scoped
object is written, and the cluster gauges (:mod:`.cluster_metrics`) follow it.

Per-pod figures, not per-GPU: the window carries each pod's GPUs together, so a straggler is named
by pod and node here (the analysis names a GPU wherever its input tells GPUs apart).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from bottleneck_operator.analysis.cluster import JobDigest, PeerSample, find_stragglers, summarise
from bottleneck_operator.analysis.cluster.summary import workload_of
from bottleneck_operator.contract.names import API_GROUP, API_VERSION, MANAGED_BY, MANAGED_BY_LABEL
from bottleneck_operator.contract.window import JobWindow, PodWindow
from bottleneck_operator.controller.cluster_metrics import ClusterMetrics
from bottleneck_operator.controller.digest_mirror import write_pending
from bottleneck_operator.controller.state import OperatorState, TrackedJob
from bottleneck_operator.kube import KubeClient, Resource
from bottleneck_operator.kube.errors import Conflict, KubeError, NotFound, Unauthorized
from bottleneck_operator.reports import ReportStatus
from bottleneck_operator.reports.summary import (
    SUMMARY_KIND,
    SUMMARY_NAME,
    SUMMARY_PLURAL,
    SummaryStatus,
    status_from_summary,
    straggler_item,
)

if TYPE_CHECKING:
    from bottleneck_operator.pipeline import JobResult

log = logging.getLogger("bottleneck_operator.operator")
SUMMARIES = Resource(API_GROUP, API_VERSION, SUMMARY_KIND, SUMMARY_PLURAL, namespaced=False)
# The GPU activity a pod is judged by, best first (SM activity is the finest; GPU utilisation only
# says a kernel ran).
_ACTIVITY = ("sm_active", "gr_engine_active", "gpu_util")
_STATUS_FIELDS = tuple(field.alias or name for name, field in SummaryStatus.model_fields.items())


def observe(state: OperatorState, results: Sequence[JobResult], jobs: Mapping[int, TrackedJob]) -> None:
    """Record a batch's results in the state's book (``jobs``: the Job of each request, by id), and name
    each Job's stragglers in its new status."""
    now = state.clock()
    digests = []
    for res in results:
        job = jobs.get(id(res.request))
        window = getattr(res, "window", None)  # a result without telemetry leaves no digest
        if job is not None and window is not None and window.pods:
            digest = digest_of(job, window, res.status, now=now)
            digests.append(digest)
            state.places.note(digest.key, job.namespace, job.claims)
            # Named in the Job's own report too (the status is written after this).
            res.status.stragglers = [straggler_item(s) for s in find_stragglers(digest)] or None
    state.cluster.record(digests)


def digest_of(job: TrackedJob, window: JobWindow, status: ReportStatus, *, now: float) -> JobDigest:
    """One Job's digest: its verdict, where it ran, its run so far, and one peer summary per pod."""
    start = job.start if job.start is not None else window.start
    gpus = status.data_quality.gpus if status.data_quality else window.gpu_count
    slowdown = [v for p in window.pods if (v := _mean(p, "clock_slowdown_frac")) is not None]
    return JobDigest(
        namespace=job.namespace,
        name=job.name,
        kind=job.kind,
        bottleneck=status.bottleneck or "Unknown",
        gpus=gpus,
        seconds=max(0.0, (job.end or now) - start),
        gpu_active=status.gpu_active,
        throttled=float(np.mean(slowdown)) if slowdown else None,
        workload=workload_of(job.namespace, job.kind, job.name),
        locations={"node": tuple(sorted({p.node for p in window.pods if p.node}))},
        action=status.recommendations[0].action if status.recommendations else None,
        headroom=status.headroom.low if status.headroom else None,
        peers=tuple(_peer(p) for p in window.pods) if len(window.pods) > 1 else (),
        end=window.end,
    )


def _mean(pod: PodWindow, name: str) -> float | None:
    if name not in pod.signals:
        return None
    values = np.asarray(pod.signals[name], dtype=np.float64)
    if not np.isfinite(values).any():
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(np.nanmean(values))


def _sum(pod: PodWindow, names: Sequence[str]) -> float | None:
    parts = [v for n in names if (v := _mean(pod, n)) is not None]
    return sum(parts) if parts else None


def _peer(pod: PodWindow) -> PeerSample:
    activity = next((v for n in _ACTIVITY if (v := _mean(pod, n)) is not None), None)
    read = _mean(pod, "sc_io_read_bps")
    return PeerSample(
        pod=pod.pod,
        node=pod.node,
        activity=activity,
        clock_mhz=_mean(pod, "sm_clock_mhz"),
        slowdown=_mean(pod, "clock_slowdown_frac"),
        net_bps=_sum(pod, ("node_net_rx_bps", "node_net_tx_bps", "ib_rx_bps", "ib_tx_bps")),
        read_bps=read if read is not None else _mean(pod, "fs_read_bps"),
        io_wait=_mean(pod, "sc_psi_io_some"),
    )


async def refresh(state: OperatorState) -> None:
    """Place the book's Jobs (storage classes, fabrics, racks), summarise them and write the
    ClusterBottleneckSummary (created when missing)."""
    now = state.clock()
    kube: KubeClient | None = getattr(state.api, "kube", None)
    if kube is not None:
        await state.places.fill(kube, state.cluster, now, state.warned)
        await write_pending(state)  # the finished Jobs' digests, placed, kept on their reports
    # In a thread: a week of a large cluster's Jobs is a few hundred milliseconds of work.
    summary = await asyncio.to_thread(summarise, state.cluster.digests(now))
    metrics = _metrics(state)
    metrics.update(summary)
    # A merge patch keeps what it does not name: every field is named (null deletes one now empty).
    status = {**dict.fromkeys(_STATUS_FIELDS), **status_from_summary(summary, now=now).dump()}
    if kube is None:  # a reports API that only records (the loop's own tests): nowhere to write
        return
    try:
        await _write(kube, status, state.cluster.lookback)
    except (NotFound, Unauthorized) as exc:
        # No CRD (Helm installs new CRDs on install, not on upgrade) or no RBAC for it: say so once.
        if not state.warned.get("cluster-summary"):
            state.warned["cluster-summary"] = str(exc)
            log.warning(
                "cannot write the %s (apply crds/%s.%s.yaml and the chart's RBAC): %s",
                SUMMARY_KIND,
                SUMMARY_PLURAL,
                API_GROUP,
                exc,
            )
    except KubeError as exc:
        state.metrics.errors.labels("kubernetes").inc()
        log.warning("cannot write the %s: %s", SUMMARY_KIND, exc)
    else:
        state.warned.pop("cluster-summary", None)


async def _write(kube: KubeClient, status: dict[str, Any], lookback: float) -> None:
    try:
        await kube.merge_patch(SUMMARIES, None, SUMMARY_NAME, {"status": status}, status=True)
        return
    except NotFound:
        pass
    body = {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": SUMMARY_KIND,
        "metadata": {"name": SUMMARY_NAME, "labels": {MANAGED_BY_LABEL: MANAGED_BY}},
        "spec": {"lookbackSeconds": lookback},
    }
    # Created meanwhile (a second replica): the patch below still applies.
    with contextlib.suppress(Conflict):
        await kube.create(SUMMARIES, None, body)
    await kube.merge_patch(SUMMARIES, None, SUMMARY_NAME, {"status": status}, status=True)


def _metrics(state: OperatorState) -> ClusterMetrics:
    found = state.cluster_metrics
    if found is None:
        found = state.cluster_metrics = ClusterMetrics(state.metrics.registry)
    return found
