"""Record one scenario: a limited cgroup, a real node-exporter, a real Prometheus, then OpenMetrics out.

The recording Prometheus (Debian's, through the project's :class:`LocalPrometheus`) scrapes the
real node-exporter and the pod's exporters (:mod:`recordings.exporter`) every few seconds while the
workload runs. Afterwards every raw sample of the families the metric contract names is read back
with range selectors (``name[<window>]``: the TSDB's own samples and timestamps, no resampling) and
written as gzipped OpenMetrics that ``promtool tsdb create-blocks-from openmetrics`` accepts once unpacked.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bottleneck_operator_dev.simulation.localprom import LocalPrometheus, NodeExporter, hostname
from recordings.cgroups import Cgroup, Counters, Limits, block_device_of
from recordings.exporter import PodExporter, PodIdentity
from recordings.virtual_gpu import VirtualGpu, read_progress

if TYPE_CHECKING:
    from recordings.nvml_gpu import NvmlGpu

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
NAMESPACE = "ml"

# The families the metric contract (DESIGN.md) names, and the few neighbours the analysis may read.
KEEP_PREFIXES = ("DCGM_FI_", "bottleneck_sidecar_", "container_", "kube_pod_", "kube_job_", "node_pressure_")
KEEP_NAMES = frozenset({
    "node_cpu_seconds_total", "node_disk_read_bytes_total", "node_disk_reads_completed_total",
    "node_disk_io_time_seconds_total", "node_disk_written_bytes_total", "node_memory_MemAvailable_bytes",
    "node_memory_MemTotal_bytes", "node_memory_SwapTotal_bytes", "node_memory_SwapFree_bytes",
    "node_vmstat_pgmajfault", "node_vmstat_pswpin", "node_vmstat_pswpout", "node_network_receive_bytes_total",
    "node_network_transmit_bytes_total", "node_uname_info", "up",
})  # fmt: skip


@dataclass
class Context:
    """What a scenario's workload needs: where to write progress and how to enter the pod's cgroup."""

    name: str
    workdir: Path
    cgroup: Cgroup
    progress_dir: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def progress_file(self, rank: int) -> Path:
        return self.progress_dir / f"rank{rank}.progress"

    def spawn(self, argv: list[str], module: str = "recordings.workloads", *, prefix: list[str] | None = None,
              join: bool = True) -> subprocess.Popen[bytes]:  # fmt: skip
        """Start ``python -m MODULE ARGV`` in the pod's cgroup (or not), optionally behind PREFIX."""
        cmd = [*(prefix or []), sys.executable, "-m", module, *argv]
        cg = self.cgroup
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "operator")])}
        log = (self.workdir / f"workload-{len(self.processes)}.log").open("ab")
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=(lambda: cg.join(os.getpid())) if join else None)  # fmt: skip
        self.processes.append(proc)
        return proc


@dataclass
class Scenario:
    """One recording: its class, its limits, its GPU side and its workload."""

    name: str
    label: str  # the verdict class the recording must get
    mechanism: str  # and the mechanism within it (contract.verdict.Mechanism's value)
    limited: str  # what was limited, in words
    limits: Limits
    launch: Callable[[Context], None]
    compute_s: float = 0.0  # the virtual GPU's kernel time per batch (unused with a real GPU)
    h2d_bytes: float = 0.0  # and its host-to-device bytes per batch
    real_gpu: bool = False  # GPU 0 of this machine through NVML, instead of the virtual GPU
    ranks: int = 1
    setup: Callable[[Context], None] | None = None
    teardown: Callable[[Context], None] | None = None
    extra_figures: Callable[[Context, Counters, Counters, float], dict[str, Any]] | None = None

    @property
    def job(self) -> str:
        """The Job's name, which is also the recording's folder under tests/data/."""
        return f"{'gpu' if self.real_gpu else 'real'}-{self.name}"


def _prom_get(url: str, path: str, params: dict[str, str]) -> Any:
    full = f"{url}{path}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(full, timeout=60) as resp:
        return json.loads(resp.read())["data"]


def export_openmetrics(url: str, start: float, end: float, out: Path) -> int:
    """Write every raw sample in [start, end] of the kept families as OpenMetrics; returns the series count."""
    names = [n for n in _prom_get(url, "/api/v1/label/__name__/values", {})
             if n in KEEP_NAMES or n.startswith(KEEP_PREFIXES)]  # fmt: skip
    window = f"{int(end - start) + 1}s"
    lines: list[str] = []
    count = 0
    for name in sorted(names):
        result = _prom_get(url, "/api/v1/query", {"query": f"{name}[{window}]", "time": f"{end:.3f}"})["result"]
        if not result:
            continue
        counter = name.endswith("_total")
        family = name[: -len("_total")] if counter else name
        lines.append(f"# TYPE {family} {'counter' if counter else 'gauge'}")
        for row in sorted(result, key=lambda r: sorted(r["metric"].items())):
            labels = {k: v for k, v in row["metric"].items() if k != "__name__"}
            text = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()))
            head = f"{name}{{{text}}}" if text else name
            lines += [f"{head} {v} {t:.3f}" for t, v in row["values"] if start <= float(t) <= end]
            count += 1
    text = "\n".join(lines) + "\n# EOF\n"
    if out.suffix == ".gz":  # a 16-CPU node's per-CPU counters make a recording large; gzip keeps it ~30x smaller
        out.write_bytes(gzip.compress(text.encode(), mtime=0))
    else:
        out.write_text(text)
    return count


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _gpu_for(sc: Scenario, ctx: Context) -> VirtualGpu | NvmlGpu:
    if sc.real_gpu:
        from recordings.nvml_gpu import NvmlGpu

        return NvmlGpu()
    return VirtualGpu(sc.compute_s, sc.h2d_bytes, [ctx.progress_file(r) for r in range(sc.ranks)])


def record(sc: Scenario, *, seconds: float, scrape: float, workroot: Path) -> dict[str, Any]:
    """Run the scenario for ``seconds`` and write ``tests/data/<job>/{metrics.om,truth.json}``."""
    workdir = workroot / sc.name
    workdir.mkdir(parents=True, exist_ok=True)
    progress = Path("/dev/shm") / f"bnr-recording-{sc.name}"  # memory-backed: outside the limits under test
    progress.mkdir(exist_ok=True)
    for old in progress.iterdir():
        old.unlink()
    cg = Cgroup(f"bnr-recording-{sc.name}", sc.limits)
    ctx = Context(sc.name, workdir, cg, progress)
    gpu = _gpu_for(sc, ctx)
    job = sc.job
    who = PodIdentity(NAMESPACE, job, f"{job}-0-{uuid.uuid4().hex[:5]}", str(uuid.uuid4()), hostname())
    _, disk = block_device_of(REPO)
    exporter = PodExporter(who, cg, gpu, disk)
    node = NodeExporter(workdir)
    prom: LocalPrometheus | None = None
    cg.create()
    try:
        if sc.setup:
            sc.setup(ctx)
        node.start()
        exporter.start()
        b = exporter.base_url
        targets = {"node-exporter": [node.address], "kubelet": [f"{b}/cadvisor"], "kube-state-metrics": [f"{b}/ksm"],
                   "bottleneck-collector": [f"{b}/sidecar"], "dcgm-exporter": [f"{b}/dcgm"]}  # fmt: skip
        prom = LocalPrometheus(workdir / "prometheus", scrape_targets=targets, scrape_interval=scrape)
        prom.start()
        sc.launch(ctx)
        _ready(ctx, sc.ranks)  # start-up (worker pools, datasets loaded) is not part of the window
        first = cg.read()
        start = time.time()
        batches0, wire0, coll0 = read_progress([ctx.progress_file(r) for r in range(sc.ranks)])
        _wait(ctx, start + seconds)
        end = time.time()
        last = cg.read()
        batches, wire, coll = read_progress([ctx.progress_file(r) for r in range(sc.ranks)])
        batches, wire, coll = batches - batches0, wire - wire0, coll - coll0
        _stop(ctx)
        time.sleep(scrape * 1.5)  # the scrape that follows the end is in the TSDB before the export
        out_dir = DATA / job
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "metrics.om").unlink(missing_ok=True)
        n_series = export_openmetrics(prom.url, start, end, out_dir / "metrics.om.gz")
        truth = _truth(sc, ctx, who, (start, end), (first, last), (batches, wire, coll), scrape, n_series)
        _gpu_truth(truth, sc, gpu, (start, end), batches)
        (out_dir / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
        return truth
    finally:
        _stop(ctx)
        if prom is not None:
            prom.stop()
        exporter.stop()
        node.stop()
        gpu.close()
        if sc.teardown:
            sc.teardown(ctx)
        cg.remove()


def _wait(ctx: Context, until: float) -> None:
    while time.time() < until:
        dead = [p for p in ctx.processes if p.poll() is not None]
        if dead:
            log = (ctx.workdir / "workload-0.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"a workload process of {ctx.name} exited early ({dead[0].returncode}):\n{log}")
        time.sleep(0.5)


def _ready(ctx: Context, ranks: int, timeout: float = 600.0) -> None:
    deadline = time.time() + timeout
    while not all(ctx.progress_file(r).exists() for r in range(ranks)):
        if time.time() > deadline:
            raise RuntimeError(f"the {ctx.name} workload did not start within {timeout:.0f}s")
        _wait(ctx, time.time() + 0.5)


def _stop(ctx: Context) -> None:
    for proc in ctx.processes:
        if proc.poll() is None:
            proc.terminate()
    for proc in ctx.processes:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _truth(sc: Scenario, ctx: Context, who: PodIdentity, window: tuple[float, float],
           counters: tuple[Counters, Counters], work: tuple[float, float, float], scrape: float,
           n_series: int) -> dict[str, Any]:  # fmt: skip
    start, end = window
    first, last = counters
    batches, wire, collective = work
    dt = end - start
    periods = last.nr_periods - first.nr_periods
    figures: dict[str, Any] = {
        "seconds": round(dt, 1),
        "batches_per_s": round(batches / dt, 3),
        "cpu_cores_used": round((last.cpu_seconds - first.cpu_seconds) / dt, 3),
        "cfs_throttled_fraction": round((last.nr_throttled - first.nr_throttled) / periods, 3) if periods else None,
        "read_mb_per_s": round((last.read_bytes - first.read_bytes) / dt / 1e6, 2),
        "major_faults_per_s": round((last.major_faults - first.major_faults) / dt, 1),
        "swap_mb_at_end": round(last.swap_bytes / 1e6, 1),
        "working_set_mb_at_end": round(last.working_set_bytes / 1e6, 1),
    }
    if wire:
        figures["wire_mb_per_s"] = round(wire / dt / 1e6, 2)
    if collective:  # a real GPU's rank times its own wait on the exchange; the virtual GPU's kernels wait as long
        key = "exchange_wait_fraction" if sc.real_gpu else "virtual_gpu_collective_busy"
        figures[key] = round(min(1.0, collective / dt), 3)
    for res in ("cpu", "io", "memory"):
        some = (last.psi_some or {}).get(res, 0.0) - (first.psi_some or {}).get(res, 0.0)
        figures[f"{res}_pressure_some_fraction"] = round(some / dt, 3)
    if sc.extra_figures:
        figures.update(sc.extra_figures(ctx, first, last, dt))
    return {
        "class": sc.label,
        "mechanism": sc.mechanism,
        "limited": sc.limited,
        "namespace": who.namespace,
        "job": who.job,
        "pod": who.pod,
        "start": round(start, 3),
        "end": round(end, 3),
        "scrape_interval_s": scrape,
        "series": n_series,
        "measured": figures,
        "host": {
            "cgroup": "v2" if ctx.cgroup.v2 else "hybrid (v1 controllers, v2 pressure)",
            "kernel": os.uname().release,
            "cpus": os.cpu_count(),
        },
    }


def _gpu_truth(truth: dict[str, Any], sc: Scenario, gpu: VirtualGpu | NvmlGpu, window: tuple[float, float],
               batches: float) -> None:  # fmt: skip
    """The GPU side of the truth: the virtual GPU's model and busy share, or what NVML read over the window."""
    start, end = window
    if isinstance(gpu, VirtualGpu):
        truth["virtual_gpu"] = {"compute_s_per_batch": sc.compute_s, "h2d_bytes_per_batch": sc.h2d_bytes}
        truth["measured"]["virtual_gpu_busy"] = round(min(1.0, batches / (end - start) * sc.compute_s), 3)
    else:
        truth["gpu"] = {"model": gpu.model_name, "profiling": "GPM" if gpu.gpm else "device fields only",
                        "nvml_readings": gpu.summary(start, end)}  # fmt: skip
