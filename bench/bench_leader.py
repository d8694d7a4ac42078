"""Leader election with the chart's durations: how long reports go without a writer when the leader goes.

Real ``bottleneck-operator run`` processes (leader election on, the chart's defaults: a 15 s Lease,
10 s renew deadline, 2 s retries) share kmock's API emulator and 20 profiled Jobs. Each round
starts a fresh replica beside the current leader, then stops the leader: cleanly (SIGTERM, the
Lease handed back) or by death (SIGKILL, the Lease left to expire), and times until the survivor
holds the Lease. Prometheus is unreachable on purpose: who leads is the figure, not the verdicts.
Targets: failover after a death <= 30 s; a clean handover within a few retry periods. Also printed:
ReportCreated Events per Job over every handover (1 means no duplicate).
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

import kmock

from bottleneck_operator_dev.demo.cluster import EVENTS, JOBS, LocalCluster, job_body

ROUNDS = 3
JOBS_N = 20
LEASE_NS = "bottleneck-system"
TARGET_FAILOVER = 30.0


def _holder(cluster: LocalCluster) -> str:
    url = f"{cluster.url}/apis/coordination.k8s.io/v1/namespaces/{LEASE_NS}/leases/bottleneck-operator"
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return str((json.load(resp).get("spec") or {}).get("holderIdentity") or "")
    except OSError:
        return ""


def _start(identity: str, kubeconfig: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "KUBECONFIG": str(kubeconfig),
        "BOTTLENECK_LEADER_ELECTION": "true",
        "BOTTLENECK_LEASE_NAMESPACE": LEASE_NS,
        "BOTTLENECK_LEADER_IDENTITY": identity,
        "BOTTLENECK_PROMETHEUS_RETRIES": "0",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "bottleneck_operator", "run", "--prometheus-url", "http://127.0.0.1:9",
         "--metrics-port", "0", "--liveness", "", "--no-webhook"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def _until(what: str, predicate: object, timeout: float = 120.0) -> float:
    """Seconds until ``predicate()`` holds (polled every 50 ms)."""
    t0 = time.monotonic()
    while not predicate():  # type: ignore[operator]
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.05)
    return time.monotonic() - t0


def _round(
    cluster: LocalCluster, kubeconfig: Path, procs: dict[str, subprocess.Popen[bytes]], n: int
) -> tuple[float, float]:
    """One clean stop and one death; returns (handover seconds, failover seconds)."""
    times = []
    for how, sig in (("stop", signal.SIGTERM), ("kill", signal.SIGKILL)):
        leader = _holder(cluster)
        new = f"replica-{n}-{how}"
        procs[new] = _start(new, kubeconfig)
        time.sleep(8.0)  # the new replica is up and following before the leader goes
        procs[leader].send_signal(sig)
        gone = time.monotonic()
        procs.pop(leader).wait(timeout=60)
        _until("a new leader", lambda leader=leader: _holder(cluster) not in ("", leader))
        times.append(time.monotonic() - gone)
    return times[0], times[1]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, LocalCluster() as cluster:
        assert cluster.emulator is not None
        cluster.emulator.resources["coordination.k8s.io/v1/leases"] = kmock.ResourceInfo(
            kind="Lease", singular="lease", namespaced=True, verbs={"list", "watch", "get", "create", "patch", "update"}
        )
        kubeconfig = cluster.write_kubeconfig(Path(tmp) / "kubeconfig")
        for i in range(JOBS_N):
            cluster.create(JOBS, "ml", job_body("ml", f"train-{i}", start=time.time() - 600))
        procs = {"replica-0": _start("replica-0", kubeconfig)}
        try:
            _until("the first leader", lambda: _holder(cluster) == "replica-0")
            handovers, failovers = [], []
            for n in range(ROUNDS):
                handover, failover = _round(cluster, kubeconfig, procs, n)
                handovers.append(handover)
                failovers.append(failover)
        finally:
            for proc in procs.values():
                proc.kill()
                proc.wait(timeout=30)
        created = Counter(
            e["involvedObject"]["name"] for e in cluster.list(EVENTS, "ml") if e.get("reason") == "ReportCreated"
        )
    print(
        f"clean handover (SIGTERM, Lease handed back): median {statistics.median(handovers):.1f} s, "
        f"max {max(handovers):.1f} s over {ROUNDS} rounds"
    )
    print(
        f"failover after the leader's death (SIGKILL, 15 s Lease): median {statistics.median(failovers):.1f} s, "
        f"max {max(failovers):.1f} s over {ROUNDS} rounds (target <= {TARGET_FAILOVER:.0f} s): "
        + ("met" if max(failovers) <= TARGET_FAILOVER else "MISSED")
    )
    print(
        f"ReportCreated Events per Job after {2 * ROUNDS} changes of leader: "
        f"{sorted(set(created.values()))} over {len(created)} of {JOBS_N} Jobs (1: no duplicate)"
    )


if __name__ == "__main__":
    main()
