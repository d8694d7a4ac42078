"""One leader among the operator's replicas: a ``coordination.k8s.io/v1`` Lease, held and renewed.

Every replica serves the admission webhook and follows the watch streams (the webhook reads the
workload cache), but only the holder of the Lease runs the analysis passes and the retention sweep,
and so only it writes reports and posts their Events. The rules are client-go's leader election:

- a candidate takes the Lease when it is free (no holder: released on a clean stop) or when its
  record has not changed for ``lease_duration`` seconds, as timed by the candidate's own monotonic
  clock from when it first saw that record (no two nodes' wall clocks are compared);
- the holder renews every ``retry_period`` seconds; if no renewal has succeeded for
  ``renew_deadline`` seconds (< ``lease_duration``), it stops leading on its own, before anyone else
  may take over: a replica cut off from the API server (a partitioned node) stops writing first;
- every write carries the ``resourceVersion`` it read, so two candidates cannot both take one Lease:
  the API server answers the later one 409;
- a replica that stops cleanly hands the Lease back (holder cleared), and another takes it within
  ``retry_period``; one that dies keeps it until ``lease_duration`` has passed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bottleneck_operator.aio import stop_task
from bottleneck_operator.kube import Conflict, KubeClient, KubeError, NotFound, Resource

logger = logging.getLogger("bottleneck_operator.leader")

LEASES = Resource("coordination.k8s.io", "v1", "Lease", "leases")
_SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


@dataclass(frozen=True)
class LeaseTiming:
    """How long a Lease lasts and how often it is renewed (client-go's defaults: 15, 10, 2 seconds).

    Attributes:
        lease_duration: seconds a record must stay unchanged before another replica takes the Lease.
        renew_deadline: seconds the holder keeps leading without a successful renewal.
        retry_period: seconds between attempts to take or renew the Lease.
    """

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError("lease timing needs 0 < retry_period < renew_deadline < lease_duration")

    @property
    def failover(self) -> float:
        """The longest a dead leader's work waits for a successor: expiry plus one attempt."""
        return self.lease_duration + self.retry_period


def default_identity() -> str:
    """This replica's name in the Lease: the pod's name (downward API), else host and process."""
    return os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def default_namespace() -> str:
    """Where the Lease lives: the pod's namespace (downward API or service account), else ``default``."""
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    with contextlib.suppress(OSError):
        return _SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or "default"
    return "default"


def _micro_time() -> str:
    # A Lease's times are MicroTime: RFC 3339 with microseconds.
    return datetime.now(tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """Take, renew and hand back one Lease; run ``lead()`` while holding it.

    Args:
        kube: the operator's Kubernetes client (get, create and patch on ``leases``).
        namespace, name: the Lease.
        identity: this replica's holder identity (unique among the replicas).
        timing: the durations (see :class:`LeaseTiming`).
        on_change: called with True on becoming leader and False on stepping down.
    """

    def __init__(
        self,
        kube: KubeClient,
        namespace: str,
        name: str,
        identity: str,
        timing: LeaseTiming | None = None,
        on_change: Callable[[bool], None] | None = None,
    ) -> None:
        self.kube, self.namespace, self.name, self.identity = kube, namespace, name, identity
        self.timing = timing or LeaseTiming()
        self._on_change = on_change
        self._leading = False
        self._renewed = 0.0  # monotonic time of the last successful take or renewal
        self._seen: tuple[Any, ...] | None = None  # the other holder's record as last read
        self._seen_at = 0.0  # monotonic time that record was first read
        self._work: asyncio.Task[None] | None = None

    @property
    def leading(self) -> bool:
        """Whether this replica holds the Lease now (and may write)."""
        return self._leading

    async def run(self, lead: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Contend for the Lease forever; ``lead()`` runs while it is held and is cancelled when it is lost.

        Cancelling this task stops ``lead()`` and hands the Lease back.
        """
        try:
            while True:
                outcome = await self._bounded_attempt()
                now = time.monotonic()
                if outcome == "held":
                    self._renewed = now
                keep = outcome == "held" or (
                    outcome == "error" and self._leading and now - self._renewed < self.timing.renew_deadline
                )
                if keep and not self._leading:
                    self._set(leading=True)
                    self._work = asyncio.create_task(lead(), name="bottleneck leader work")
                elif not keep and self._leading:
                    await self._stop_work()
                    self._set(leading=False)
                await asyncio.sleep(self.timing.retry_period)
        finally:
            await self._stop_work()
            if self._leading:
                self._set(leading=False)
                await self._release()

    async def _bounded_attempt(self) -> str:
        # A leader's attempt may not outlast its renew deadline: a hanging API call must not keep a
        # replica writing after another may have taken over.
        budget = self.timing.renew_deadline
        if self._leading:
            budget = max(0.0, self._renewed + self.timing.renew_deadline - time.monotonic())
        try:
            async with asyncio.timeout(budget):
                return await self._attempt()
        except TimeoutError:
            logger.warning("leader election: no answer from the API server within %.1f s", budget)
            return "error"

    def _set(self, *, leading: bool) -> None:
        self._leading = leading
        if leading:
            logger.info("leader election: %s leads (Lease %s/%s)", self.identity, self.namespace, self.name)
        else:
            logger.warning(
                "leader election: %s stopped leading (Lease %s/%s)", self.identity, self.namespace, self.name
            )
        if self._on_change is not None:
            self._on_change(leading)

    async def _stop_work(self) -> None:
        work, self._work = self._work, None
        await stop_task(work)

    async def _attempt(self) -> str:
        """One try: "held" (taken or renewed), "other" (another replica holds it) or "error"."""
        try:
            lease = await self.kube.get(LEASES, self.namespace, self.name)
        except NotFound:
            return await self._create()
        except KubeError as exc:
            logger.warning("leader election: cannot read the Lease: %s", exc)
            return "error"
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        if holder and holder != self.identity and not self._expired(spec):
            return "other"
        transitions = int(spec.get("leaseTransitions") or 0)
        mine = holder == self.identity
        patch = {
            # The version read: the API server refuses the write (409) if anyone wrote in between.
            "metadata": {"resourceVersion": (lease.get("metadata") or {}).get("resourceVersion")},
            "spec": self._spec(
                acquired=spec.get("acquireTime") if mine else None, transitions=transitions + (0 if mine else 1)
            ),
        }
        try:
            await self.kube.merge_patch(LEASES, self.namespace, self.name, patch)
        except Conflict:
            return "other"
        except KubeError as exc:
            logger.warning("leader election: cannot renew the Lease: %s", exc)
            return "error"
        return "held"

    def _expired(self, spec: dict[str, Any]) -> bool:
        record = (spec.get("holderIdentity"), spec.get("renewTime"), spec.get("leaseTransitions"))
        now = time.monotonic()
        if record != self._seen:
            self._seen, self._seen_at = record, now
        duration = float(spec.get("leaseDurationSeconds") or self.timing.lease_duration)
        return now - self._seen_at > duration

    def _spec(self, *, acquired: str | None, transitions: int) -> dict[str, Any]:
        now = _micro_time()
        return {
            "holderIdentity": self.identity,
            # whole seconds in the API; a fraction (tests) is rounded up, never to 0
            "leaseDurationSeconds": max(1, int(-(-self.timing.lease_duration // 1))),
            "acquireTime": acquired or now,
            "renewTime": now,
            "leaseTransitions": transitions,
        }

    async def _create(self) -> str:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": self._spec(acquired=None, transitions=0),
        }
        try:
            await self.kube.create(LEASES, self.namespace, body)
        except Conflict:
            return "other"  # another replica created it first
        except KubeError as exc:
            logger.warning("leader election: cannot create the Lease: %s", exc)
            return "error"
        return "held"

    async def _release(self) -> None:
        """Hand the Lease back on a clean stop, so a successor need not wait for it to expire."""
        try:
            lease = await self.kube.get(LEASES, self.namespace, self.name)
            if (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return
            patch = {
                "metadata": {"resourceVersion": (lease.get("metadata") or {}).get("resourceVersion")},
                "spec": {"holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": _micro_time()},
            }
            async with asyncio.timeout(5.0):
                await self.kube.merge_patch(LEASES, self.namespace, self.name, patch)
            logger.info("leader election: %s handed the Lease back", self.identity)
        except (KubeError, TimeoutError) as exc:
            logger.warning("leader election: could not hand the Lease back (it expires on its own): %s", exc)
