"""Several replicas, one leader: two operators on kmock's emulator share a coordination.k8s.io Lease.

Each operator is a real ``kopf run`` (KopfRunner), or a real ``bottleneck-operator run`` process for
the leader that dies; each has its own stand-in analyzer, so the test can tell who analysed. Only
the Lease holder may analyse, write reports and post Events; when it stops or dies, the other one
takes over, with short lease durations (settings) so the test runs in seconds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kmock
import kopf
import requests
from kopf.testing import KopfRunner
from operator_harness import events_for, fast_settings, reports, wait_for
from test_mechanics import EchoAnalyzer

from bottleneck_operator.handlers import register_handlers
from bottleneck_operator.settings import Settings
from bottleneck_operator_dev.demo.cluster import JOBS, LocalCluster, job_body

LEASE_NS = "bottleneck-system"
# Short durations: a dead leader's Lease is taken 3 s after its last renewal.
TIMING = {"lease_duration": 3.0, "lease_renew_deadline": 2.0, "lease_retry_period": 0.5}
FAILOVER_LIMIT = 30.0
NOW = time.time()


class Analyzer(EchoAnalyzer):
    """The stand-in analyzer, also recording which Jobs it was asked about."""

    def __init__(self) -> None:
        super().__init__()
        self.jobs: set[tuple[str, str]] = set()

    def analyze_jobs(self, requests: Any, *, phase: str = "Running") -> Any:
        self.jobs |= {(r.namespace, r.job) for r in requests}
        return super().analyze_jobs(requests, phase=phase)


def serve_leases(cluster: LocalCluster) -> None:
    """Serve coordination.k8s.io/v1 leases from the emulator, as every API server does."""
    assert cluster.emulator is not None
    cluster.emulator.resources["coordination.k8s.io/v1/leases"] = kmock.ResourceInfo(
        kind="Lease",
        singular="lease",
        namespaced=True,
        verbs={"list", "watch", "get", "create", "patch", "update", "delete"},
    )


def lease(cluster: LocalCluster, name: str = "bottleneck-operator") -> dict[str, Any]:
    """The Lease as the API server holds it ({} before it exists)."""
    url = f"{cluster.url}/apis/coordination.k8s.io/v1/namespaces/{LEASE_NS}/leases/{name}"
    resp = requests.get(url, timeout=10)
    return dict(resp.json()) if resp.status_code == 200 else {}


def holder(cluster: LocalCluster, name: str = "bottleneck-operator") -> str:
    return str((lease(cluster, name).get("spec") or {}).get("holderIdentity") or "")


def replica_settings(identity: str, **overrides: Any) -> Settings:
    return fast_settings(
        "http://127.0.0.1:9",
        leader_election=True,
        lease_namespace=LEASE_NS,
        leader_identity=identity,
        **TIMING,
        **overrides,
    )


@contextlib.contextmanager
def replica(settings: Settings, analyzer: Analyzer, namespaces: tuple[str, ...] = ()) -> Iterator[KopfRunner]:
    """One operator replica (kopf run in a thread) with its own registry and analyzer."""
    registry = kopf.OperatorRegistry()
    register_handlers(registry, settings, analyzer_factory=lambda: analyzer)
    scope = [a for ns in namespaces for a in ("--namespace", ns)] or ["--all-namespaces"]
    with KopfRunner(
        ["run", "--standalone", *scope], registry=registry, settings=kopf.OperatorSettings(), timeout=60
    ) as runner:
        yield runner


def _jobs(cluster: LocalCluster, names: list[str], ns: str = "ml") -> None:
    for name in names:
        cluster.create(JOBS, ns, job_body(ns, name, start=NOW - 600))


def _reasons(cluster: LocalCluster, job: str) -> Counter[str]:
    return Counter(e["reason"] for e in events_for(cluster, job))


def _verdicts(cluster: LocalCluster, names: list[str], cls: str) -> bool:
    found = reports(cluster)
    return all((found.get(n, {}).get("status") or {}).get("bottleneck") == cls for n in names)


def test_one_leader_writes_and_a_stopped_leader_hands_over(cluster: LocalCluster) -> None:
    serve_leases(cluster)
    names = ["train-0", "train-1", "train-2"]
    _jobs(cluster, names)
    analyzers = {"a": Analyzer(), "b": Analyzer()}
    stack = contextlib.ExitStack()
    runners = {i: stack.enter_context(replica(replica_settings(i), analyzers[i])) for i in ("a", "b")}
    with stack:
        wait_for("verdicts on every report", lambda: _verdicts(cluster, names, "GPU"))
        first = wait_for("a Lease holder", lambda: holder(cluster))
        other = "b" if first == "a" else "a"
        time.sleep(3.0)  # several passes and several Lease renewals
        assert analyzers[first].calls and not analyzers[other].calls
        assert holder(cluster) == first
        for name in names:
            assert _reasons(cluster, name) == {"ReportCreated": 1, "BottleneckChanged": 1}

        for analyzer in analyzers.values():
            analyzer.classes["train-0"] = "IO"
        wait_for("the change", lambda: _verdicts(cluster, ["train-0"], "IO"))
        time.sleep(2.0)
        assert _reasons(cluster, "train-0") == {"ReportCreated": 1, "BottleneckChanged": 2}

        # The leader stops cleanly: it hands the Lease back and the follower leads at once.
        stopped = time.monotonic()
        runners[first].__exit__(None, None, None)
        wait_for("the follower leading", lambda: holder(cluster) == other, timeout=FAILOVER_LIMIT)
        for analyzer in analyzers.values():
            analyzer.classes["train-1"] = "CPU"
        wait_for(
            "a verdict from the new leader", lambda: _verdicts(cluster, ["train-1"], "CPU"), timeout=FAILOVER_LIMIT
        )
        assert time.monotonic() - stopped < FAILOVER_LIMIT
        assert analyzers[other].calls
        # The new leader adopted the reports: no second report, no second creation Event.
        assert sorted(reports(cluster)) == names
        assert _reasons(cluster, "train-1") == {"ReportCreated": 1, "BottleneckChanged": 2}
        assert _reasons(cluster, "train-2") == {"ReportCreated": 1, "BottleneckChanged": 1}
        assert int(lease(cluster)["spec"]["leaseTransitions"]) >= 1


def _dying_leader(cluster: LocalCluster, tmp_path: Path) -> subprocess.Popen[str]:
    """``bottleneck-operator run`` as its own process, leader "doomed", Prometheus unreachable."""
    env = {
        **os.environ,
        "KUBECONFIG": str(cluster.write_kubeconfig(tmp_path / "kubeconfig")),
        "BOTTLENECK_LEADER_ELECTION": "true",
        "BOTTLENECK_LEASE_NAMESPACE": LEASE_NS,
        "BOTTLENECK_LEADER_IDENTITY": "doomed",
        "BOTTLENECK_PROMETHEUS_RETRIES": "0",
        **{f"BOTTLENECK_{k.upper()}": str(v) for k, v in TIMING.items()},
    }
    return subprocess.Popen(
        [sys.executable, "-m", "bottleneck_operator", "run", "--prometheus-url", "http://127.0.0.1:9",
         "--metrics-port", "0", "--liveness", "", "--no-webhook", "--interval", "5"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip


def test_failover_within_30_seconds_of_the_leaders_death(cluster: LocalCluster, tmp_path: Path) -> None:
    serve_leases(cluster)
    names = ["long-0", "long-1"]
    _jobs(cluster, names)
    doomed = _dying_leader(cluster, tmp_path)
    try:
        wait_for("the process leading", lambda: holder(cluster) == "doomed", timeout=60)
        # It created the reports (and said so once each), with no verdict: its Prometheus is unreachable.
        wait_for("reports", lambda: set(reports(cluster)) == set(names), timeout=60)
        survivor = Analyzer()
        with replica(replica_settings("survivor"), survivor):
            time.sleep(2.0)
            assert not survivor.calls and holder(cluster) == "doomed"  # a follower while the leader lives
            doomed.send_signal(signal.SIGKILL)  # no clean stop: the Lease is not handed back
            doomed.wait(timeout=10)
            died = time.monotonic()
            wait_for("the survivor leading", lambda: holder(cluster) == "survivor", timeout=FAILOVER_LIMIT)
            wait_for("its verdicts", lambda: _verdicts(cluster, names, "GPU"), timeout=FAILOVER_LIMIT)
            took = time.monotonic() - died
            assert took < FAILOVER_LIMIT
            assert took > TIMING["lease_duration"] - 1.0  # it waited for the Lease to expire, no sooner
        for name in names:
            assert _reasons(cluster, name)["ReportCreated"] == 1
    finally:
        if doomed.poll() is None:
            doomed.kill()
            doomed.wait(timeout=10)


def test_shards_by_namespace_each_with_its_own_leader(cluster: LocalCluster) -> None:
    serve_leases(cluster)
    _jobs(cluster, ["a-0", "a-1"], ns="team-a")
    _jobs(cluster, ["b-0"], ns="team-b")
    _jobs(cluster, ["c-0"], ns="team-c")  # in no shard
    analyzers = {"team-a": Analyzer(), "team-b": Analyzer()}
    analyzers["team-b"].classes["b-0"] = "IO"
    with contextlib.ExitStack() as stack:
        for ns, analyzer in analyzers.items():
            settings = replica_settings(f"{ns}-0", lease_name=f"bottleneck-{ns}", namespaces=[ns])
            stack.enter_context(replica(settings, analyzer, namespaces=(ns,)))
        wait_for("team-a's verdicts", lambda: _verdicts(cluster, ["a-0", "a-1"], "GPU"))
        wait_for("team-b's verdict", lambda: _verdicts(cluster, ["b-0"], "IO"))
        time.sleep(2.0)
        assert holder(cluster, "bottleneck-team-a") == "team-a-0"
        assert holder(cluster, "bottleneck-team-b") == "team-b-0"
    assert set(reports(cluster, "team-a")) == {"a-0", "a-1"} and set(reports(cluster, "team-b")) == {"b-0"}
    assert not reports(cluster, "team-c")
    # Each shard analysed its own namespace's Jobs only.
    seen = {ns: a.jobs for ns, a in analyzers.items()}
    assert seen == {"team-a": {("team-a", "a-0"), ("team-a", "a-1")}, "team-b": {("team-b", "b-0")}}
