"""controller.leader on its own, against the API emulator: renewals, a rival, and a leader cut off.

A leader that can no longer reach the API server must stop its work within the renew deadline,
before any other replica may take the Lease (the Lease's duration): the test cuts the API off and
times it.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from test_leader import holder, serve_leases

from bottleneck_operator.controller.access import CLIENT
from bottleneck_operator.controller.leader import LeaderElector, LeaseTiming
from bottleneck_operator.kube import ApiRejected, Credentials, KubeClient, Resource
from bottleneck_operator_dev.demo.cluster import LocalCluster

TIMING = LeaseTiming(lease_duration=3.0, renew_deadline=2.0, retry_period=0.2)


def _elector(cluster: LocalCluster, identity: str) -> LeaderElector:
    url = cluster.url
    kube = KubeClient(lambda: Credentials(server=url, token="emulator"), timeout=1.0, allowed=CLIENT)
    return LeaderElector(kube, "bottleneck-system", "bottleneck-operator", identity, TIMING)


class Work:
    """The leader's work: records when it started and when it was stopped."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.stopped = asyncio.Event()

    async def __call__(self) -> None:
        self.started.set()
        try:
            await asyncio.Event().wait()
        finally:
            self.stopped.set()


def test_one_of_two_rivals_leads_and_keeps_leading(cluster: LocalCluster) -> None:
    serve_leases(cluster)

    async def scenario() -> None:
        electors = [_elector(cluster, "one"), _elector(cluster, "two")]
        works = [Work(), Work()]
        tasks = [asyncio.create_task(e.run(w)) for e, w in zip(electors, works, strict=True)]
        await asyncio.sleep(3 * TIMING.lease_duration)  # several durations: renewals must hold it
        assert [e.leading for e in electors].count(True) == 1
        assert [w.started.is_set() for w in works].count(True) == 1
        leader = next(e for e in electors if e.leading)
        assert holder(cluster) == leader.identity
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        assert all(w.stopped.is_set() for w in works if w.started.is_set())
        for e in electors:
            await e.kube.close()

    asyncio.run(scenario())
    assert holder(cluster) == ""  # the leader handed the Lease back as it stopped


def test_a_cancel_that_arrives_with_the_api_answer_still_stops_the_elector(cluster: LocalCluster) -> None:
    # Python 3.11's asyncio.wait_for returns the inner call's result when the cancellation lands in the
    # same turn of the loop as the answer, and the elector would contend on for ever: the answer is timed
    # here so that both land together.
    async def scenario() -> None:
        elector = _elector(cluster, "racing")
        answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()

        async def attempt() -> str:
            return await answer

        elector._attempt = attempt  # type: ignore[method-assign]
        task = asyncio.create_task(elector.run(Work()))
        await asyncio.sleep(0.05)  # the elector is waiting for its first answer
        answer.set_result("other")
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=5)
        if task not in done:
            task.cancel()  # again, so that the test ends
            await asyncio.wait({task}, timeout=5)
        await elector.kube.close()
        assert task in done and task.cancelled()

    asyncio.run(scenario())


def test_a_leader_cut_off_from_the_api_stops_before_the_lease_expires(cluster: LocalCluster) -> None:
    serve_leases(cluster)

    async def scenario() -> float:
        elector, work = _elector(cluster, "cut-off"), Work()
        task = asyncio.create_task(elector.run(work))
        await asyncio.wait_for(work.started.wait(), timeout=10)
        await asyncio.sleep(1.0)
        cluster.stop()  # the API server is gone for this replica
        cut = time.monotonic()
        await asyncio.wait_for(work.stopped.wait(), timeout=10)
        took = time.monotonic() - cut
        assert not elector.leading
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await elector.kube.close()
        return took

    took = asyncio.run(scenario())
    # Within the renew deadline of its last renewal (at most one retry before the cut), so before
    # any rival may take the Lease.
    assert took <= TIMING.renew_deadline + TIMING.retry_period + 0.5
    assert took < TIMING.lease_duration


def test_the_client_refuses_a_call_outside_its_table(cluster: LocalCluster) -> None:
    async def scenario() -> int:
        url = cluster.url
        kube = KubeClient(lambda: Credentials(server=url, token="emulator"), allowed=CLIENT)
        try:
            with pytest.raises(ApiRejected, match="not among this client's declared API uses"):
                await kube.list(Resource("", "v1", "Pod", "pods"), "ml")
            return kube.requests
        finally:
            await kube.close()

    assert asyncio.run(scenario()) == 0  # refused before anything was sent
