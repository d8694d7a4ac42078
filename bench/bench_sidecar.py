"""Collector overhead: CPU share of one core at a 5 s period, and resident memory.

Two measurements:

1. the running command (``bottleneck-operator sidecar --period 5``) over 60 s while it is scraped
   every 15 s like Prometheus does: CPU time from /proc/<pid>/stat, RSS from /proc/<pid>/status;
2. the cost of one reading (cgroup files + /proc + rendering), repeated in-process, times the rate
   of one reading per 5 s: the figure that does not depend on the machine being otherwise idle.

Run over a synthetic pod cgroup (every file a v2 pod has) and this machine's real /proc. Targets:
CPU <= 1 % of one core, RSS <= 40 MB.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from prometheus_client import generate_latest

from bottleneck_operator.sidecar.reader import Identity
from bottleneck_operator.sidecar.service import CollectorOptions, build
from bottleneck_operator_dev.simulation.localprom import free_port

POD_UID = "8f14e45f-ceea-467a-9575-6a8b1c2d3e4f"
PERIOD = 5.0
WINDOW = 60.0
SCRAPE_EVERY = 15.0
TICKS = os.sysconf("SC_CLK_TCK")

FILES = {
    "cpu.stat": "usage_usec 123456789\nuser_usec 100000000\nsystem_usec 23456789\nnr_periods 4000\nnr_throttled 1500\nthrottled_usec 98765432\n",
    "cpu.max": "400000 100000\n",
    "cpu.pressure": "some avg10=1.00 avg60=1.00 avg300=1.00 total=45000000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=3000000\n",
    "io.pressure": "some avg10=1.00 avg60=1.00 avg300=1.00 total=120000000\nfull avg10=1.00 avg60=1.00 avg300=1.00 total=90000000\n",
    "memory.pressure": "some avg10=0.00 avg60=0.00 avg300=0.00 total=2500\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=1000\n",
    "io.stat": "259:0 rbytes=1000000 wbytes=2000 rios=100 wios=2 dbytes=0 dios=0\n8:16 rbytes=5 wbytes=0 rios=5 wios=0 dbytes=0 dios=0\n",
    "memory.current": "3221225472\n",
    "memory.max": "8589934592\n",
    "memory.events": "low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n",
    # A realistic memory.stat is ~45 keys.
    "memory.stat": "".join(f"key{i} {i * 1000}\n" for i in range(44)) + "pgmajfault 4321\n",
}


def _tree(base: Path) -> Path:
    base.mkdir(parents=True, exist_ok=True)
    (base / "cgroup.controllers").write_text("cpu io memory pids\n")
    for i in range(20):  # other pods and services on the node
        (base / "kubepods.slice" / "kubepods-burstable.slice" / f"kubepods-burstable-pod{i:08d}.slice").mkdir(
            parents=True
        )
        (base / "system.slice" / f"svc{i}.service").mkdir(parents=True)
    pod = (
        base
        / "kubepods.slice"
        / "kubepods-burstable.slice"
        / f"kubepods-burstable-pod{POD_UID.replace('-', '_')}.slice"
    )
    pod.mkdir(parents=True)
    for name, text in FILES.items():
        (pod / name).write_text(text)
    return pod


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def _rss_mb(pid: int) -> tuple[float, float]:
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(status["VmRSS"].split()[0]) / 1024, int(status["VmHWM"].split()[0]) / 1024


def _per_reading(root: Path) -> tuple[float, int]:
    identity = Identity("ml", "train-x", "node-1", POD_UID)
    reader, collector, registry = build(CollectorOptions(cgroup_root=root, gpu=False), identity)
    n = 400
    costs = []
    for _ in range(5):
        started = time.process_time()
        for _ in range(n // 5):
            collector.update(reader.snapshot())
        costs.append((time.process_time() - started) / (n // 5))
    started = time.process_time()
    for _ in range(50):
        body = generate_latest(registry)
    scrape = (time.process_time() - started) / 50
    return statistics.median(costs) + scrape * PERIOD / SCRAPE_EVERY, len(body)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bn-bench-sidecar-") as tmp:
        root = Path(tmp) / "cg"
        _tree(root)

        per_reading, size = _per_reading(root)
        print(f"one reading + its share of a 15 s scrape: {per_reading * 1e3:.2f} ms CPU ({size} B of /metrics)")
        print(f"  -> CPU at a {PERIOD:g} s period: {per_reading / PERIOD * 100:.3f} % of one core (target <= 1 %)")

        port = free_port()
        env = {**os.environ, "POD_NAMESPACE": "ml", "POD_NAME": "train-x", "NODE_NAME": "node-1", "POD_UID": POD_UID}
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bottleneck_operator",
                "sidecar",
                "--port",
                str(port),
                "--address",
                "127.0.0.1",
                "--period",
                str(PERIOD),
                "--cgroup-root",
                str(root),
                "--no-gpu",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            url = f"http://127.0.0.1:{port}/metrics"
            deadline = time.monotonic() + 30
            while True:
                try:
                    urllib.request.urlopen(url, timeout=2).read()
                    break
                except OSError:
                    if time.monotonic() > deadline or child.poll() is not None:
                        raise RuntimeError("the collector did not start") from None
                    time.sleep(0.1)
            cpu0, t0 = _cpu_seconds(child.pid), time.monotonic()
            scrapes = 0
            while time.monotonic() - t0 < WINDOW:
                time.sleep(min(SCRAPE_EVERY, WINDOW - (time.monotonic() - t0)))
                urllib.request.urlopen(url, timeout=5).read()
                scrapes += 1
            cpu1, t1 = _cpu_seconds(child.pid), time.monotonic()
            rss, peak = _rss_mb(child.pid)
        finally:
            child.terminate()
            child.wait(timeout=15)
        share = (cpu1 - cpu0) / (t1 - t0) * 100
        print(
            f"running collector, {t1 - t0:.0f} s at --period {PERIOD:g} with {scrapes} scrapes: "
            f"CPU {share:.3f} % of one core ({(cpu1 - cpu0) * 1e3:.0f} ms; clock tick {1e3 / TICKS:.0f} ms) (target <= 1 %)"
        )
        print(f"collector RSS: {rss:.1f} MB (peak {peak:.1f} MB) (target <= 40 MB)")


if __name__ == "__main__":
    main()
