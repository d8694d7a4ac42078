"""Admission webhook latency: p50/p99 over 1,000 AdmissionReviews POSTed over HTTPS to kopf's server.

The endpoint is the one ``bottleneck-operator run`` serves (kopf's WebhookServer and admission
request handling, the ``inject-sidecar`` handler), reached over TLS with a kept-alive connection as
kube-apiserver does. The client runs in the same process, so its time is included. Target: p99 <= 20 ms.

Then the pod webhook on a slow API server: the pods of PyTorchJobs the operator's watch has not
shown yet, admitted in waves of 16 as the Training Operator creates them, each workload read from
kmock's emulator slowed to 2 s per read. Without the owner cache every pod reads its workload;
with it one read serves all of a workload's pods ("cold"), and none is needed when the workload
webhook saw the workload created ("marked"). Target: p99 under the chart's 5 s timeout, both ways.

Last, the webhook while a retention sweep runs in the same process: ``bottleneck-operator run`` (the
webhook on, its certificate from a directory) on kmock's emulator holding ``BENCH_WEBHOOK_RETAINED``
(10,000) reports of finished Jobs, each a real final status (as bench_retained makes them). A separate
process POSTs a profiled Job's AdmissionReview over a kept-alive HTTPS connection every 10 ms; its
answers while the startup sweep pages through the reports are set against its answers once the sweep
has ended, in the same run. The operator is started ``BENCH_WEBHOOK_ROUNDS`` (4) times on the same
reports, and the answers of all its start-up sweeps pooled: one sweep gives a few hundred, whose
p99 is one of the few slowest. The operator and the admission client run on one core, the emulator
(in this process) on the other(s): on a cluster the API server runs on other machines, with cores
of its own, and here its work (serving each LIST page in Python) would otherwise be read as the
webhook's whenever it took the core the operator or the client was waiting for. Printed besides:
the operator's and the emulator's process's CPU during each sweep. Target: webhook p99 unchanged
during a sweep (ratio near 1).
``BENCH_WEBHOOK_PARTS`` (comma-separated ``latency``, ``slow-api``, ``sweep``; default all) runs some.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import kmock
import requests

from bottleneck_operator.controller.workloads import VERSIONS
from bottleneck_operator.kube import Credentials, KubeClient, NotFound, Resource
from bottleneck_operator.settings import Settings
from bottleneck_operator.webhook.owners import OwnerCache
from bottleneck_operator.webhook.server import serve_admission
from bottleneck_operator_dev.demo.cluster import LocalCluster

N = 1000
WARMUP = 50
API_LATENCY = 2.0  # seconds per read of one object
WORKLOADS = 4
PODS_PER_WORKLOAD = 32
WAVE = 16  # pods admitted at once
# The parts to run (comma-separated), e.g. BENCH_WEBHOOK_PARTS=sweep for the retention sweep's part alone.
PARTS = set(os.environ.get("BENCH_WEBHOOK_PARTS", "latency,slow-api,sweep").split(","))


def _review(annotations: dict[str, str]) -> dict[str, Any]:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train-resnet", "namespace": "ml", "annotations": annotations},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "trainer", "image": "pytorch/pytorch:2.4.0", "command": ["python", "train.py"]}
                    ],
                }
            }
        },
    }
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": {"group": "batch", "version": "v1", "kind": "Job"},
            "resource": {"group": "batch", "version": "v1", "resource": "jobs"},
            "namespace": "ml",
            "operation": "CREATE",
            "userInfo": {"username": "alice"},
            "object": job,
            "dryRun": False,
        },
    }


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _run(cert: Path | None, key: Path | None) -> None:
    insecure = cert is None
    async with serve_admission(Settings(**{}).injection, certfile=cert, keyfile=key, insecure=insecure) as url:
        ctx = None if insecure else ssl.create_default_context(cafile=str(cert))
        connector = aiohttp.TCPConnector(limit=1)
        async with aiohttp.ClientSession(connector=connector) as session:
            for label, annotations in (
                ("profiled Job (patched)", {"bottleneck.dev/profile": "true"}),
                ("opted-out Job (no patch)", {"bottleneck.dev/profile": "true", "bottleneck.dev/sidecar": "false"}),
            ):
                payload = json.dumps(_review(annotations)).encode()
                latencies: list[float] = []
                for i in range(WARMUP + N):
                    started = time.perf_counter()
                    async with session.post(
                        url, data=payload, ssl=ctx or False, headers={"Content-Type": "application/json"}
                    ) as r:
                        body = await r.read()
                    elapsed = time.perf_counter() - started
                    if r.status != 200 or b'"allowed": true' not in body.replace(b'"allowed":true', b'"allowed": true'):
                        raise RuntimeError(f"unexpected answer {r.status}: {body[:200]!r}")
                    if i >= WARMUP:
                        latencies.append(elapsed * 1e3)
                print(
                    f"{label}: {N} requests over {'HTTP' if insecure else 'HTTPS'}: "
                    f"p50 {statistics.median(latencies):.2f} ms, p99 {_pct(latencies, 0.99):.2f} ms, "
                    f"max {max(latencies):.2f} ms (target p99 <= 20 ms)"
                )


def _pod(workload: str, i: int) -> dict[str, Any]:
    meta = {
        "name": f"{workload}-worker-{i}",
        "namespace": "ml",
        "labels": {"training.kubeflow.org/job-name": workload, "bottleneck.dev/profiled": "true"},
        "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": workload, "uid": "u"}],
    }
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [{"name": "w", "image": "t"}]}}
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": "ml",
            "operation": "CREATE",
            "userInfo": {"username": "system:serviceaccount:kubeflow:training-operator"},
            "object": pod,
            "dryRun": False,
        },
    }


def _workload(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": "ml", "annotations": {"bottleneck.dev/profile": "true"}},
        "spec": {"pytorchReplicaSpecs": {"Worker": {"template": {"spec": {"containers": [{"name": "w"}]}}}}},
    }


async def _slow_api_run(cluster: LocalCluster, cert: Path | None, key: Path | None, mode: str) -> None:
    kube = KubeClient(lambda: Credentials(server=cluster.url, token="emulator"))

    async def fetch(namespace: str, kind: str, name: str) -> dict[str, Any] | None:
        for w in VERSIONS[kind]:
            try:
                return await kube.get(Resource(w.group, w.version, w.kind, w.plural), namespace, name)
            except NotFound:
                continue
        return None

    assert cluster.emulator is not None
    before = dict(cluster.emulator.reads)
    owners = OwnerCache(size=0) if mode == "no cache" else OwnerCache()
    insecure = cert is None
    latencies: list[float] = []
    injected = 0
    async with serve_admission(
        Settings(**{}).injection,
        certfile=cert,
        keyfile=key,
        insecure=insecure,
        levels={"ml": "privileged"},
        fetch=fetch,
        owners=owners,
    ) as url:
        ctx = None if insecure else ssl.create_default_context(cafile=str(cert))
        async with aiohttp.ClientSession() as session:

            async def post(payload: dict[str, Any]) -> bytes:
                started = time.perf_counter()
                async with session.post(url, json=payload, ssl=ctx or False) as r:
                    body = await r.read()
                latencies.append((time.perf_counter() - started) * 1e3)
                return body

            names = [f"{mode.replace(' ', '-')}-{k}" for k in range(WORKLOADS)]
            if mode == "marked":
                for name in names:  # the workload webhook sees each workload created
                    review = _review({})
                    review["request"].update(
                        kind={"group": "kubeflow.org", "version": "v1", "kind": "PyTorchJob"},
                        resource={"group": "kubeflow.org", "version": "v1", "resource": "pytorchjobs"},
                        object=_workload(name),
                    )
                    await post(review)
                latencies.clear()
            for i in range(0, PODS_PER_WORKLOAD, WAVE):
                wave = [_pod(name, j) for name in names for j in range(i, i + WAVE)]
                bodies = await asyncio.gather(*(post(p) for p in wave))
                injected += sum(b'"patch"' in b for b in bodies)
    await kube.close()
    reads = sum(n - before.get(k, 0) for k, n in cluster.emulator.reads.items() if k[0] == "pytorchjobs")
    total = WORKLOADS * PODS_PER_WORKLOAD
    print(
        f"pod webhook, API {API_LATENCY:g} s per read, {mode}: {total} pods of {WORKLOADS} PyTorchJobs: "
        f"p50 {statistics.median(latencies):.0f} ms, p99 {_pct(latencies, 0.99):.0f} ms, max {max(latencies):.0f} ms, "
        f"{reads} workload reads, {injected}/{total} injected (timeout 5000 ms)"
    )


def _slow_api(cert: Path | None, key: Path | None) -> None:
    with LocalCluster() as cluster:
        assert cluster.emulator is not None
        cluster.emulator.resources["kubeflow.org/v1/pytorchjobs"] = kmock.ResourceInfo(
            kind="PyTorchJob",
            singular="pytorchjob",
            namespaced=True,
            verbs={"list", "watch", "get", "create", "patch", "update", "delete"},
        )
        for mode in ("no cache", "cold", "marked"):
            for k in range(WORKLOADS):
                body = _workload(f"{mode.replace(' ', '-')}-{k}")
                requests.post(
                    f"{cluster.url}/apis/kubeflow.org/v1/namespaces/ml/pytorchjobs", json=body, timeout=10
                ).raise_for_status()
        cluster.emulator.read_latency = API_LATENCY
        for mode in ("no cache", "cold", "marked"):
            asyncio.run(_slow_api_run(cluster, cert, key, mode))


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bn-bench-webhook-") as tmp:
        cert = key = None
        if shutil.which("openssl"):
            cert, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
            subprocess.run(
                [
                    "openssl",
                    "req",
                    "-x509",
                    "-newkey",
                    "rsa:2048",
                    "-nodes",
                    "-days",
                    "1",
                    "-subj",
                    "/CN=127.0.0.1",
                    "-addext",
                    "subjectAltName=IP:127.0.0.1",
                    "-keyout",
                    str(key),
                    "-out",
                    str(cert),
                ],
                check=True,
                capture_output=True,
            )
        else:
            print("openssl not found: measuring over plain HTTP")
        if "latency" in PARTS:
            asyncio.run(_run(cert, key))
        if "slow-api" in PARTS:
            _slow_api(cert, key)
        if "sweep" in PARTS and cert is not None and key is not None:
            _during_sweep(cert, key, json.dumps(_review({"bottleneck.dev/profile": "true"})))


# The admission client runs in a process of its own: in the bench's process it would share the
# interpreter lock with the emulator, whose work during the sweep would read as the webhook's.
_ADMIT = """
import http.client, ssl, sys, time
port, cafile, body, out = int(sys.argv[1]), sys.argv[2], open(sys.argv[3], "rb").read(), open(sys.argv[4], "w", buffering=1)
ctx, conn = ssl.create_default_context(cafile=cafile), None
while True:
    t0 = time.perf_counter()
    try:
        conn = conn or http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=30)
        conn.request("POST", "/inject-sidecar", body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        ok = resp.status == 200 and b'"patch"' in resp.read()
    except (OSError, http.client.HTTPException):
        conn = None
        time.sleep(0.05)
        continue
    out.write(f"{time.time()} {time.perf_counter() - t0} {int(ok)}\\n")
    time.sleep(0.01)
"""
RETAINED = int(os.environ.get("BENCH_WEBHOOK_RETAINED", "10000"))


def _retained_reports(cluster: LocalCluster, workdir: Path) -> None:
    """``RETAINED`` reports of finished Jobs, each a real final status with a full timeline (as bench_retained)."""
    from bench.bench_operator import _write_history
    from bench.bench_retained import _template
    from bottleneck_operator.controller.lifecycle import with_mirror
    from bottleneck_operator.controller.reports_api import report_body
    from bottleneck_operator.reports import rfc3339
    from bottleneck_operator_dev.demo.cluster import REPORTS
    from bottleneck_operator_dev.simulation import generate_jobs
    from bottleneck_operator_dev.simulation.localprom import LocalPrometheus

    now = time.time()
    jobs = generate_jobs(20261129, 1, start=now - 900, duration=900, scrape_interval=30.0, dcgm_fieldset="dev")
    _write_history(jobs, workdir / "one.om")
    with LocalPrometheus.from_openmetrics(workdir / "one.om", workdir=workdir / "prom") as prom:
        template = _template(prom.url, jobs[0])
    for i in range(RETAINED):
        ended = now - 86400 - 60 * i  # within the retention: the sweep reads every one and deletes none
        status = {**template, "window": {**template["window"], "end": rfc3339(ended), "start": rfc3339(ended - 3600)}}
        body = {**report_body("archive", f"done-{i:05d}", f"uid-{i}"), "status": status}
        cluster.create(REPORTS, "archive", with_mirror(body))  # as the operator leaves a report it finalised


# Operator restarts, each with its start-up sweep: the during-sweep figure pools their admissions
# (one sweep of 10,000 reports gives a few hundred, and a p99 of a few hundred is one of the few slowest).
ROUNDS = int(os.environ.get("BENCH_WEBHOOK_ROUNDS", "4"))


def _cores() -> tuple[set[int], set[int]]:
    """(the operator's cores, the emulator's): apart where there are two or more.

    On a cluster the API server runs on other machines than the operator, with cores of its own; in
    one process beside it here, the emulator's work would be counted as the webhook's whenever both
    want the same core.
    """
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return set(cpus), set(cpus)
    return {cpus[-1]}, set(cpus[:-1])


def _pinned(cmd: list[str], cores: set[int]) -> list[str]:
    """``cmd`` run on ``cores`` (the affinity is set before exec, so every thread it starts inherits it)."""
    pin = "import os, sys; os.sched_setaffinity(0, {int(c) for c in sys.argv[1].split(',')}); os.execv(sys.argv[2], sys.argv[2:])"
    return [sys.executable, "-c", pin, ",".join(map(str, sorted(cores))), *cmd]


def _cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a process, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _during_sweep(cert: Path, key: Path, review: str) -> None:
    operator_cores, other_cores = _cores()
    os.sched_setaffinity(0, other_cores)  # before the emulator's thread starts: it inherits it
    with tempfile.TemporaryDirectory(prefix="bn-bench-webhook-sweep-") as tmp, LocalCluster() as cluster:
        workdir = Path(tmp)
        t = time.perf_counter()
        _retained_reports(cluster, workdir)
        print(f"{RETAINED:,} retained reports created in {time.perf_counter() - t:.0f} s")
        print(
            f"operator and the admission client on core(s) {sorted(operator_cores)}, the emulator on {sorted(other_cores)}"
        )
        (workdir / "review.json").write_text(review)
        rounds = [
            _round(
                cluster, workdir, cert, review_path=workdir / "review.json", n=n, cores=(operator_cores, other_cores)
            )
            for n in range(ROUNDS)
        ]
        _print_rounds(rounds)


@dataclass
class _Round:
    """One operator run: its sweep's log line, the admission latencies (ms) during and after it, CPU seconds."""

    sweep: re.Match[str]
    during: list[float]
    after: list[float]
    failed: int
    operator_cpu: float
    emulator_cpu: float
    longest_lag: float  # the operator's own heartbeat, over the whole run (seconds)


def _round(
    cluster: LocalCluster, workdir: Path, cert: Path, *, review_path: Path, n: int, cores: tuple[set[int], set[int]]
) -> _Round:
    """Start the operator, admit a Job every 10 ms through its start-up sweep and as long again after it."""
    from bench.bench_retained import _SWEEP, _own_lag
    from bench.image_env import image_malloc_env
    from bottleneck_operator_dev.simulation.localprom import free_port

    port = free_port()
    env = {
        **os.environ, **image_malloc_env(), "KUBECONFIG": str(cluster.write_kubeconfig(workdir / "kubeconfig")),
        "BOTTLENECK_WEBHOOK_PORT": str(port), "BOTTLENECK_WEBHOOK_CERT_DIR": str(cert.parent),
    }  # fmt: skip
    metrics_port = free_port()  # for the operator's own reading of its event loop
    cmd = [sys.executable, "-m", "bottleneck_operator", "run", "--prometheus-url", "http://127.0.0.1:9",
           "--interval", "10", "--metrics-port", str(metrics_port), "--liveness", ""]  # fmt: skip
    samples, log_path = workdir / f"admit-{n}.txt", workdir / f"operator-{n}.log"
    cpu: list[tuple[float, float, float]] = []  # (time, operator's CPU seconds, this process's)
    with log_path.open("w") as log:
        proc = subprocess.Popen(_pinned(cmd, cores[0]), env=env, stdout=log, stderr=subprocess.STDOUT)
        admit = subprocess.Popen(
            _pinned([sys.executable, "-c", _ADMIT, str(port), str(cert), str(review_path), str(samples)], cores[0])
        )
        try:
            sweep, seen_at = _sweep_logged(proc, log_path, _SWEEP, cpu)
            time.sleep(min(60.0, max(15.0, float(sweep.group(5)))))  # as long again with no sweep
            longest_lag = _own_lag(metrics_port)[0]
        finally:
            admit.terminate()
            admit.wait(timeout=10)
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
    rows = [line.split() for line in samples.read_text().splitlines()][5:]  # the first include the TLS handshake
    began = seen_at - float(sweep.group(5)) - 0.2
    in_sweep = [c for c in cpu if began <= c[0] <= seen_at]
    return _Round(
        sweep,
        during=[1e3 * float(w) for t, w, _ in rows if began <= float(t) <= seen_at],
        after=[1e3 * float(w) for t, w, _ in rows if float(t) > seen_at],
        failed=sum(1 for *_, ok in rows if ok != "1"),
        operator_cpu=in_sweep[-1][1] - in_sweep[0][1] if len(in_sweep) > 1 else float("nan"),
        emulator_cpu=in_sweep[-1][2] - in_sweep[0][2] if len(in_sweep) > 1 else float("nan"),
        longest_lag=longest_lag,
    )


def _sweep_logged(
    proc: subprocess.Popen[bytes], log_path: Path, pattern: re.Pattern[str], cpu: list[tuple[float, float, float]]
) -> tuple[re.Match[str], float]:
    """Wait for the sweep over every report to be logged, sampling the operator's and this process's CPU."""
    deadline = time.time() + 420
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the operator exited early: {log_path.read_text()[-3000:]}")
        own = os.times()
        cpu.append((time.time(), _cpu_seconds(proc.pid), own.user + own.system))
        for m in pattern.finditer(log_path.read_text()):
            if int(m.group(1)) >= RETAINED:
                return m, time.time()
        time.sleep(0.2)
    raise SystemExit("no retention sweep over every report was logged in time")


def _print_rounds(rounds: list[_Round]) -> None:
    for n, r in enumerate(rounds, 1):
        if not r.during or not r.after:
            raise SystemExit(
                f"too few admissions measured in round {n}: {len(r.during)} during the sweep, {len(r.after)} after"
            )
        seconds = float(r.sweep.group(5))
        whole = f"{r.sweep.group(6)} read whole, " if r.sweep.group(6) is not None else ""
        print(f"round {n}: sweep of {r.sweep.group(1)} reports in {r.sweep.group(2)} pages, {whole}{seconds:.1f} s; "
              f"p99 during {_pct(r.during, 0.99):.1f} ms ({len(r.during)}), without {_pct(r.after, 0.99):.1f} ms "
              f"({len(r.after)}); CPU during it: operator {100 * r.operator_cpu / seconds:.0f} % of a core, "
              f"emulator's process {100 * r.emulator_cpu / seconds:.0f} %; "
              f"the operator's longest event-loop lag in the run {1000 * r.longest_lag:.0f} ms")  # fmt: skip
    during = [w for r in rounds for w in r.during]
    after = [w for r in rounds for w in r.after]
    failed = sum(r.failed for r in rounds)
    p99_during, p99_after = _pct(during, 0.99), _pct(after, 0.99)
    print(f"webhook during the sweep ({len(rounds)} sweeps): {len(during)} admissions, p50 {statistics.median(during):.1f} ms, "
          f"p99 {p99_during:.1f} ms, max {max(during):.1f} ms")  # fmt: skip
    print(f"webhook with no sweep (same processes, after each): {len(after)} admissions, "
          f"p50 {statistics.median(after):.1f} ms, p99 {p99_after:.1f} ms, max {max(after):.1f} ms")  # fmt: skip
    print(f"webhook p99 during a sweep / without: {p99_during / p99_after:.2f} (target: unchanged, near 1); "
          f"{failed} answers without a patch")  # fmt: skip


if __name__ == "__main__":
    main()
