"""The recorded pod's exporters: cAdvisor, kube-state-metrics, the collector sidecar and dcgm-exporter.

Each path serves what that exporter publishes for the pod on a Kubernetes node, with its names and
labels, computed at scrape time: the container series from the pod's real cgroup counters, the
GPU series from the virtual GPU (:mod:`recordings.virtual_gpu`) or a real one
(:mod:`recordings.nvml_gpu`). Prometheus scrapes them beside a real node-exporter.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Protocol

from bottleneck_operator.sidecar.procs import BusyTracker, count_states
from recordings.cgroups import PERIOD_US, Cgroup, Counters

TRAINER = "trainer"


class GpuSource(Protocol):
    """The pod's GPU: the virtual one (:mod:`recordings.virtual_gpu`) or a real one through NVML."""

    model_name: str

    def sample(self) -> dict[str, float]: ...

    def device_labels(self) -> dict[str, str]: ...


@dataclass(frozen=True)
class PodIdentity:
    """Who the recorded processes are in Kubernetes terms."""

    namespace: str
    job: str
    pod: str
    uid: str
    node: str
    node_ip: str = "127.0.0.1"
    pod_ip: str = "10.244.0.17"


def _labels(labels: dict[str, str]) -> str:
    inner = ",".join(
        f'{k}="{v.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"' for k, v in labels.items()
    )
    return "{" + inner + "}"


class _Text:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self._typed: set[str] = set()

    def add(self, name: str, kind: str, value: float, labels: dict[str, str]) -> None:
        if name not in self._typed:
            self._typed.add(name)
            self.lines.append(f"# TYPE {name} {kind}")
        self.lines.append(f"{name}{_labels(labels)} {value:.17g}")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


class PodExporter:
    """Serves ``/cadvisor``, ``/ksm``, ``/sidecar`` and ``/dcgm`` for one pod on 127.0.0.1."""

    def __init__(self, who: PodIdentity, cgroup: Cgroup, gpu: GpuSource, disk: str) -> None:
        self.who = who
        self.disk = disk
        self.cgroup = cgroup
        self.gpu = gpu
        self._lock = threading.Lock()
        self._tracker = BusyTracker()  # busy processes between scrapes
        routes: dict[str, Callable[[], str]] = {
            "/cadvisor": self.cadvisor,
            "/ksm": self.ksm,
            "/sidecar": self.sidecar,
            "/dcgm": self.dcgm,
        }
        lock = self._lock

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                route = routes.get(self.path.split("?")[0])
                if route is None:
                    self.send_error(404)
                    return
                with lock:
                    body = route().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        if self._thread.is_alive():  # shutdown() waits for a serve loop that never started (a failed setup)
            self._server.shutdown()
        self._server.server_close()

    def _cid(self, salt: str = "") -> str:
        return f"{zlib.crc32((self.who.pod + salt).encode()):08x}" * 8

    def cadvisor(self) -> str:
        c = self.cgroup.read()
        lim = self.cgroup.limits
        w = self.who
        pod_id = f"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{w.uid.replace('-', '_')}.slice"
        base = {"namespace": w.namespace, "pod": w.pod}
        cid = self._cid()
        out = _Text()
        trainer = {**base, "container": TRAINER, "id": f"{pod_id}/cri-containerd-{cid}.scope",
                   "image": "registry.example.com/ml/trainer:real", "name": cid}  # fmt: skip
        pod_level = {**base, "container": "", "id": pod_id, "image": "", "name": ""}
        for labels in (trainer, pod_level):
            out.add("container_cpu_usage_seconds_total", "counter", c.cpu_seconds, labels)
            out.add("container_memory_working_set_bytes", "gauge", c.working_set_bytes, labels)
            out.add("container_memory_swap", "gauge", c.swap_bytes, labels)
            out.add("container_spec_memory_limit_bytes", "gauge", float(lim.memory_bytes or 0), labels)
            if lim.cpu_cores is not None:
                out.add("container_spec_cpu_quota", "gauge", lim.cpu_cores * PERIOD_US, labels)
                out.add("container_spec_cpu_period", "gauge", float(PERIOD_US), labels)
                out.add("container_cpu_cfs_periods_total", "counter", c.nr_periods, labels)
                out.add("container_cpu_cfs_throttled_periods_total", "counter", c.nr_throttled, labels)
                out.add("container_cpu_cfs_throttled_seconds_total", "counter", c.throttled_seconds, labels)
        out.add("container_fs_reads_bytes_total", "counter", c.read_bytes, {**trainer, "device": f"/dev/{self.disk}"})
        return out.text()

    def ksm(self) -> str:
        w = self.who
        lim = self.cgroup.limits
        out = _Text()
        out.add("kube_pod_info", "gauge", 1, {
            "namespace": w.namespace, "pod": w.pod, "uid": w.uid, "node": w.node, "created_by_kind": "Job",
            "created_by_name": w.job, "host_ip": w.node_ip, "pod_ip": w.pod_ip, "host_network": "false",
            "priority_class": ""})  # fmt: skip
        owner = {"namespace": w.namespace, "pod": w.pod, "uid": w.uid, "owner_kind": "Job", "owner_name": w.job,
                 "owner_is_controller": "true"}  # fmt: skip
        out.add("kube_pod_owner", "gauge", 1, owner)
        out.add("kube_job_owner", "gauge", 1, {"namespace": w.namespace, "job_name": w.job, "owner_kind": "<none>",
                                               "owner_name": "<none>", "owner_is_controller": "<none>"})  # fmt: skip
        base = {"namespace": w.namespace, "pod": w.pod, "node": w.node, "container": TRAINER}
        if lim.cpu_cores is not None:
            out.add("kube_pod_container_resource_limits", "gauge", lim.cpu_cores,
                    {**base, "resource": "cpu", "unit": "core"})  # fmt: skip
        if lim.memory_bytes is not None:
            out.add("kube_pod_container_resource_limits", "gauge", float(lim.memory_bytes),
                    {**base, "resource": "memory", "unit": "byte"})  # fmt: skip
        out.add("kube_pod_container_resource_limits", "gauge", 1.0,
                {**base, "resource": "nvidia_com_gpu", "unit": "integer"})  # fmt: skip
        return out.text()

    def sidecar(self) -> str:
        c = self.cgroup.read()
        lim = self.cgroup.limits
        w = self.who
        base = {"namespace": w.namespace, "pod": w.pod, "node": w.node}
        p = "bottleneck_sidecar_"
        out = _Text()
        out.add(p + "info", "gauge", 1, {**base, "source": "cgroup", "version": "recording"})
        out.add(p + "cpu_usage_seconds_total", "counter", c.cpu_seconds, base)
        if lim.cpu_cores is not None:
            out.add(p + "cpu_periods_total", "counter", c.nr_periods, base)
            out.add(p + "cpu_throttled_periods_total", "counter", c.nr_throttled, base)
            out.add(p + "cpu_throttled_seconds_total", "counter", c.throttled_seconds, base)
        _pressure(out, p, base, c)
        out.add(p + "io_read_bytes_total", "counter", c.read_bytes, base)
        out.add(p + "io_write_bytes_total", "counter", c.write_bytes, base)
        out.add(p + "io_reads_total", "counter", c.reads, base)
        out.add(p + "memory_current_bytes", "gauge", c.memory_bytes, base)
        if lim.memory_bytes is not None:
            out.add(p + "memory_max_bytes", "gauge", float(lim.memory_bytes), base)
        out.add(p + "memory_major_faults_total", "counter", c.major_faults, base)
        out.add(p + "memory_oom_kills_total", "counter", c.oom_kills, base)
        # the collector's own reading, of the cgroup's processes; any state but R and D counts as asleep
        procs = count_states(Path("/proc"), frozenset(), pids=self.cgroup.pids())
        states = {
            "running": procs.running,
            "iowait": procs.iowait,
            "sleeping": procs.seen - procs.running - procs.iowait,
        }
        for state, n in states.items():
            out.add(p + "processes", "gauge", float(n), {**base, "state": state})
        busy = self._tracker.update(procs, time.monotonic())
        if busy is not None:
            out.add(p + "busy_processes", "gauge", float(busy), base)
        return out.text()

    def dcgm(self) -> str:
        w = self.who
        labels = {"gpu": "0", "UUID": f"GPU-{zlib.crc32(w.node.encode()):08x}-0000-4000-8000-00000000rec0"[:40],
                  "pci_bus_id": "00000000:07:00.0", "device": "nvidia0", "modelName": self.gpu.model_name,
                  "Hostname": w.node, "container": TRAINER, "namespace": w.namespace, "pod": w.pod}  # fmt: skip
        labels.update(self.gpu.device_labels())
        out = _Text()
        for name, value in self.gpu.sample().items():
            out.add(name, "gauge", value, labels)
        return out.text()


def _pressure(out: _Text, p: str, base: dict[str, str], c: Counters) -> None:
    for res, total in (c.psi_some or {}).items():
        out.add(p + "pressure_waiting_seconds_total", "counter", total, {**base, "resource": res})
    for res, total in (c.psi_full or {}).items():
        out.add(p + "pressure_stalled_seconds_total", "counter", total, {**base, "resource": res})
