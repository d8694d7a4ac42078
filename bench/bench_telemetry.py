"""Data-layer benchmark: queries per pass and the wall time of one batched pass, on a real Prometheus.

Data: a lean generator written here, not the simulator. The simulator's jobs are rich (up to eight
pods, neighbour pods, every exporter family) and a thousand of them over an hour would be tens of
gigabytes of OpenMetrics; this generator writes the same metric names and label layout
(kube-prometheus-stack + dcgm-exporter's Helm chart) with one pod and one GPU per job, four jobs
per node, a 30 s scrape interval, for 1,000 jobs over 65 minutes (about 31,000 series and 4 million
samples). The TSDB is built once with promtool and cached under .cache/bench-telemetry/.

Printed, at the default ``max_query_bytes`` and with no query-size limit: queries per pass for 10,
100 and 1,000 jobs (equal without a limit; with one, they grow once the Jobs' names no longer fit in
a request), the largest query sent, and the median wall time of a pass over 1,000 jobs with a
one-hour window (target: <= 10 s on a 2-core machine).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry import PrometheusClient, WindowRequest, fetch_windows
from bottleneck_operator_dev.simulation.localprom import LocalPrometheus, backfill

ROOT = Path(__file__).resolve().parent.parent
JOBS = 1000
PODS_PER_NODE = 4
SCRAPE = 30
T0 = 1767225600  # 2026-01-01T00:00:00Z
DATA_SECONDS = 65 * 60
WINDOW = 3600.0
RUNS = 3
VERSION = "1"  # bump when the generator changes: the cached TSDB is keyed by it


def _job(i: int) -> tuple[str, str, str, str]:
    """(namespace, job, pod, node) of job i."""
    return f"team-{i % 10}", f"train-{i:04d}", f"train-{i:04d}-{_suffix(i)}", f"gpu-node-{i // PODS_PER_NODE:03d}"


def _suffix(i: int) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    return "".join(alphabet[(i * 7 + k * 13) % len(alphabet)] for k in range(5))


def _families() -> Iterator[tuple[str, str, list[tuple[str, float, float]]]]:
    """(family, type, [(series with labels, start value, per-second slope)])."""
    jobs = [_job(i) for i in range(JOBS)]
    nodes = sorted({j[3] for j in jobs})
    ip = {n: f"10.0.{k // 250}.{k % 250 + 1}" for k, n in enumerate(nodes)}

    def pod_series(
        name: str, extra: str, value: float, slope: float, *, container: bool = True
    ) -> list[tuple[str, float, float]]:
        out = []
        for i, (ns, _, pod, node) in enumerate(jobs):
            c = ',container="trainer"' if container else ""
            labels = f'namespace="{ns}",pod="{pod}"{c}{extra}'
            out.append(
                (f'{name}{{{labels},instance="{ip[node]}:10250",job="kubelet"}}', value, slope * (1 + i % 5 / 10))
            )
        return out

    yield (
        "kube_pod_info",
        "gauge",
        [
            (
                f'kube_pod_info{{namespace="{ns}",pod="{pod}",node="{node}",created_by_kind="Job",created_by_name="{job}",'
                f'host_ip="{ip[node]}",job="kube-state-metrics",instance="10.1.0.9:8080"}}',
                1,
                0,
            )
            for ns, job, pod, node in jobs
        ],
    )
    yield (
        "kube_pod_container_resource_limits",
        "gauge",
        [
            (
                f'kube_pod_container_resource_limits{{namespace="{ns}",pod="{pod}",container="trainer",node="{node}",'
                f'resource="cpu",unit="core",job="kube-state-metrics",instance="10.1.0.9:8080"}}',
                8,
                0,
            )
            for ns, _, pod, node in jobs
        ],
    )
    yield "container_cpu_usage_seconds", "counter", pod_series("container_cpu_usage_seconds_total", "", 100, 3.0)
    yield "container_cpu_cfs_periods", "counter", pod_series("container_cpu_cfs_periods_total", "", 1000, 10)
    yield (
        "container_cpu_cfs_throttled_periods",
        "counter",
        pod_series("container_cpu_cfs_throttled_periods_total", "", 10, 1),
    )
    yield "container_memory_working_set_bytes", "gauge", pod_series("container_memory_working_set_bytes", "", 2e10, 0)
    yield "container_spec_memory_limit_bytes", "gauge", pod_series("container_spec_memory_limit_bytes", "", 6.4e10, 0)
    yield (
        "container_fs_reads_bytes",
        "counter",
        pod_series("container_fs_reads_bytes_total", ',device="/dev/nvme0n1"', 1e9, 1e8),
    )
    dcgm_fields: dict[str, tuple[float, float]] = {
        "DCGM_FI_DEV_GPU_UTIL": (60, 0),
        "DCGM_FI_DEV_MEM_COPY_UTIL": (20, 0),
        "DCGM_FI_DEV_FB_USED": (40000, 0),
        "DCGM_FI_DEV_FB_FREE": (41920, 0),
        "DCGM_FI_DEV_POWER_USAGE": (250, 0),
        "DCGM_FI_DEV_SM_CLOCK": (1410, 0),
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE": (0.55, 0),
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": (0.3, 0),
        "DCGM_FI_PROF_DRAM_ACTIVE": (0.4, 0),
        "DCGM_FI_PROF_PCIE_TX_BYTES": (1e8, 0),
        "DCGM_FI_PROF_PCIE_RX_BYTES": (2e9, 0),
    }
    for name, (value, slope) in dcgm_fields.items():
        yield (
            name,
            "gauge",
            [
                (
                    f'{name}{{gpu="{i % PODS_PER_NODE}",UUID="GPU-{i:08d}",device="nvidia{i % PODS_PER_NODE}",'
                    f'modelName="NVIDIA A100-SXM4-80GB",Hostname="{node}",namespace="{ns}",pod="{pod}",container="trainer",'
                    f'instance="{ip[node]}:9400",job="dcgm-exporter"}}',
                    value * (1 - (i % 7) / 20),
                    slope,
                )
                for i, (ns, _, pod, node) in enumerate(jobs)
            ],
        )
    ne = {n: f'instance="{ip[n]}:9100",job="node-exporter"' for n in nodes}
    yield (
        "node_uname_info",
        "gauge",
        [(f'node_uname_info{{nodename="{n}",sysname="Linux",{ne[n]}}}', 1, 0) for n in nodes],
    )
    yield (
        "node_cpu_seconds",
        "counter",
        [
            (f'node_cpu_seconds_total{{cpu="{c}",mode="{m}",{ne[n]}}}', 1000, s)
            for n in nodes
            for c in range(4)
            for m, s in (("idle", 0.5), ("iowait", 0.1), ("user", 0.3), ("system", 0.1))
        ],
    )
    node_counters = {
        "node_disk_read_bytes_total": ',device="nvme0n1"',
        "node_disk_reads_completed_total": ',device="nvme0n1"',
        "node_disk_io_time_seconds_total": ',device="nvme0n1"',
        "node_network_receive_bytes_total": ',device="eth0"',
        "node_network_transmit_bytes_total": ',device="eth0"',
        "node_pressure_cpu_waiting_seconds_total": "",
        "node_pressure_io_waiting_seconds_total": "",
        "node_pressure_io_stalled_seconds_total": "",
        "node_pressure_memory_waiting_seconds_total": "",
        "node_pressure_memory_stalled_seconds_total": "",
    }
    for name, extra in node_counters.items():
        per_second = 0.3 if "seconds" in name else 1e6
        yield (
            name.removesuffix("_total"),
            "counter",
            [(f"{name}{{{ne[n]}{extra}}}", 10, per_second) for n in nodes],
        )
    for name, value in (
        ("node_memory_MemAvailable_bytes", 9e10),
        ("node_memory_MemTotal_bytes", 1.2e11),
        ("node_memory_SwapTotal_bytes", 0),
        ("node_memory_SwapFree_bytes", 0),
    ):
        yield name, "gauge", [(f"{name}{{{ne[n]}}}", value, 0) for n in nodes]


def write_openmetrics(path: Path) -> tuple[int, int]:
    """Write the lean data set; returns (series, samples)."""
    times = list(range(T0, T0 + DATA_SECONDS + 1, SCRAPE))
    series = samples = 0
    with path.open("w") as out:
        for family, kind, members in _families():
            out.write(f"# TYPE {family} {kind}\n")
            for labels, value, slope in members:
                out.writelines(f"{labels} {value + slope * (t - T0):.6g} {t}\n" for t in times)
                series += 1
                samples += len(times)
        out.write("# EOF\n")
    return series, samples


def _tsdb() -> tuple[Path, str]:
    """The cached, backfilled TSDB (built on first use); returns (workdir, how it was obtained)."""
    key = hashlib.sha256(f"{VERSION}-{JOBS}-{SCRAPE}-{DATA_SECONDS}".encode()).hexdigest()[:12]
    workdir = ROOT / ".cache" / "bench-telemetry" / key
    if (workdir / "data").is_dir() and any((workdir / "data").iterdir()):
        return workdir, "cached TSDB"
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        om = Path(tmp) / "lean.om"
        started = time.perf_counter()
        series, samples = write_openmetrics(om)
        written = time.perf_counter() - started
        backfill(om, workdir / "data")
        total = time.perf_counter() - started
    return (
        workdir,
        f"generated {series:,} series / {samples:,} samples in {written:.1f}s, backfilled in {total - written:.1f}s",
    )


def _cpu_seconds(prom: LocalPrometheus) -> float:
    """User + system CPU seconds the Prometheus process has used so far (Linux /proc)."""
    pid = prom.pid
    if pid is None:
        return float("nan")
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _peak_rss_mb() -> float:
    """This process's peak resident set (VmHWM), MB (Linux /proc)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _passes(prom: LocalPrometheus, settings: Settings, requests: list[WindowRequest]) -> dict[str, Any]:
    """RUNS passes over every Job: wall times, CPU of Prometheus and of this process, the last answer."""
    times, prom_cpu, own_cpu, largest = [], [], [], 0
    for _ in range(RUNS):
        client = _SizeClient(settings)
        c0, p0, started = _cpu_seconds(prom), time.process_time(), time.perf_counter()
        windows = fetch_windows(
            client,
            requests,
            settings.labels,
            step=settings.analysis.step,
            max_query_bytes=settings.prometheus.max_query_bytes,
        )
        times.append(time.perf_counter() - started)
        prom_cpu.append(_cpu_seconds(prom) - c0)
        own_cpu.append(time.process_time() - p0)
        largest = client.largest
    return {"times": times, "prom": prom_cpu, "own": own_cpu, "windows": windows, "largest": largest}


class _SizeClient(PrometheusClient):
    """The real client, noting the largest query it sent (bytes)."""

    largest = 0

    def _call(self, endpoint: str, params: dict[str, str], decode: Any) -> Any:
        self.largest = max(self.largest, len(params["query"].encode()))
        return super()._call(endpoint, params, decode)


def main() -> None:
    workdir, origin = _tsdb()
    print(f"data: lean generator (the simulator is too rich for 1,000 jobs x 1 h): {origin}")
    prom = LocalPrometheus.from_openmetrics(None, workdir=workdir)
    try:
        end = float(T0 + DATA_SECONDS)
        requests = [WindowRequest(ns, job, end - WINDOW, end) for ns, job, _, _ in (_job(i) for i in range(JOBS))]
        rss0 = _peak_rss_mb()
        # The default max_query_bytes, and no limit at all (one request per catalog entry, as
        # before queries were cut to fit VictoriaMetrics' and gateways' limits).
        for label, limit in (("max_query_bytes=12000", 12000), ("no query-size limit", 10**9)):
            settings = Settings(prometheus_url=prom.url, prometheus_timeout=120.0, max_query_bytes=limit)
            counts = {}
            for n in (10, 100, 1000):
                client = PrometheusClient(settings)
                windows = fetch_windows(
                    client,
                    requests[:n],
                    settings.labels,
                    step=settings.analysis.step,
                    max_query_bytes=settings.prometheus.max_query_bytes,
                )
                assert all(w.pods for w in windows.values()), "every job should have its pod"
                counts[n] = client.queries_issued
            print(f"[{label}] queries per pass: " + ", ".join(f"{n} jobs: {q}" for n, q in counts.items()), end="")
            print("  (equal)" if len(set(counts.values())) == 1 else "  (grows once the Jobs' names no longer fit)")
            run = _passes(prom, settings, requests)
            points = sum(len(w.timestamps) for w in run["windows"].values())
            times = run["times"]
            print(
                f"  one pass, {JOBS} jobs x 1 h window at step {settings.analysis.step:g}s: median {statistics.median(times):.2f}s "
                f"(runs: {', '.join(f'{t:.2f}' for t in times)}; target <= 10 s); {points:,} job-timestamps; "
                f"largest query {run['largest']:,} bytes"
            )
            print(
                f"  CPU per pass: Prometheus {statistics.median(run['prom']):.1f}s, this process "
                f"{statistics.median(run['own']):.1f}s (load average during the runs: {os.getloadavg()[0]:.1f} "
                f"on {os.cpu_count()} CPUs)"
            )
        print(f"  peak RSS of this process: {_peak_rss_mb():.0f} MB ({_peak_rss_mb() - rss0:+.0f} MB over the passes)")
    finally:
        prom.stop()


if __name__ == "__main__":
    main()
