"""The collector against synthetic cgroup v2 trees, this machine's real cgroup files and /proc."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

import pytest
from _sidecar_support import FILES, POD_UID, build_tree, samples, value, write_proc
from prometheus_client import CollectorRegistry, generate_latest

from bottleneck_operator.sidecar import cgroup
from bottleneck_operator.sidecar.collector import SnapshotCollector
from bottleneck_operator.sidecar.gpu import Nvml
from bottleneck_operator.sidecar.procs import ProcessCounts, busy_processes, count_states, parse_stat
from bottleneck_operator.sidecar.reader import Identity, Reader
from bottleneck_operator.sidecar.service import CollectorOptions, build

IDENTITY = Identity(namespace="ml", pod="train-resnet-x7k2p", node="gpu-node-3", pod_uid=POD_UID)
LABELS = {"namespace": "ml", "pod": "train-resnet-x7k2p", "node": "gpu-node-3"}
PROCS = {
    1: ("pause", "S"),
    7: ("python", "R"),
    8: ("pt_data_worker", "D"),
    9: ("pt_data_worker", "D"),
    10: ("python", "S"),
}


def _render(tmp_path: Path, **options: Any) -> str:
    proc_root = options.pop("proc_root", None) or write_proc(tmp_path / "proc", PROCS)
    opts = CollectorOptions(proc_root=proc_root, gpu=False, **options)
    _, _, registry = build(opts, IDENTITY)
    return generate_latest(registry).decode()


# --- parsers


def test_parsers_read_the_kernel_formats() -> None:
    assert cgroup.parse_flat_keyed(FILES["cpu.stat"])["throttled_usec"] == 98765432
    assert cgroup.parse_pressure(FILES["io.pressure"]) == {"some": 120.0, "full": 90.0}
    assert cgroup.parse_pressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=7\n") == {"some": 7e-6}
    assert cgroup.parse_io_stat(FILES["io.stat"]) == {
        "rbytes": 1500000,
        "wbytes": 2000,
        "rios": 150,
        "wios": 2,
        "dbytes": 0,
        "dios": 0,
    }
    assert cgroup.parse_io_stat("") == {}
    assert cgroup.parse_single("max\n") is None
    assert cgroup.parse_single("42\n") == 42
    with pytest.raises(ValueError):
        cgroup.parse_single("forty-two")


def test_stat_lines_with_odd_command_names() -> None:
    assert parse_stat("42 (python3 (worker) 1) D 1 42 42 0 -1 4194560") == ("python3 (worker) 1", "D", 1, 0)
    full = "7 (pt_data_worker) R 1 7 7 0 -1 4194560 100 0 0 0 250 40 0 0 20 0 1 0 100 1000 10"
    assert parse_stat(full) == ("pt_data_worker", "R", 1, 290)  # utime + stime
    assert parse_stat("garbage") is None
    assert parse_stat("42 (x)") is None


# --- synthetic trees


@pytest.mark.parametrize("driver", ["systemd", "cgroupfs", "kind"])
def test_pod_cgroup_is_found_by_uid_and_every_value_parsed(tmp_path: Path, driver: str) -> None:
    pod = build_tree(tmp_path / "cg", driver=driver)
    assert cgroup.find_pod_cgroup(tmp_path / "cg", POD_UID) == pod
    text = _render(tmp_path, cgroup_root=tmp_path / "cg")
    expected = {
        "bottleneck_sidecar_cpu_usage_seconds_total": 123.456789,
        "bottleneck_sidecar_cpu_periods_total": 4000,
        "bottleneck_sidecar_cpu_throttled_periods_total": 1500,
        "bottleneck_sidecar_cpu_throttled_seconds_total": 98.765432,
        "bottleneck_sidecar_cpu_limit_cores": 4.0,
        "bottleneck_sidecar_io_read_bytes_total": 1500000,
        "bottleneck_sidecar_io_write_bytes_total": 2000,
        "bottleneck_sidecar_io_reads_total": 150,
        "bottleneck_sidecar_memory_current_bytes": 3221225472,
        "bottleneck_sidecar_memory_max_bytes": 8589934592,
        "bottleneck_sidecar_memory_major_faults_total": 4321,
        "bottleneck_sidecar_memory_swapins_total": 2718,
        "bottleneck_sidecar_memory_oom_kills_total": 1,
    }
    for name, want in expected.items():
        assert value(text, name, **LABELS) == pytest.approx(want), name
    for resource, some, full in (("cpu", 45.0, 3.0), ("io", 120.0, 90.0), ("memory", 0.0025, 0.001)):
        assert value(
            text, "bottleneck_sidecar_pressure_waiting_seconds_total", resource=resource, **LABELS
        ) == pytest.approx(some)
        assert value(
            text, "bottleneck_sidecar_pressure_stalled_seconds_total", resource=resource, **LABELS
        ) == pytest.approx(full)
    assert value(text, "bottleneck_sidecar_processes", state="running", **LABELS) == 1
    assert value(text, "bottleneck_sidecar_processes", state="iowait", **LABELS) == 2
    assert value(text, "bottleneck_sidecar_processes", state="sleeping", **LABELS) == 1  # pause is not counted
    assert value(text, "bottleneck_sidecar_info", source="cgroup2", **LABELS) == 1
    # Every series of ours carries the three join labels.
    for (name, labels), _ in samples(text).items():
        if name.startswith("bottleneck_sidecar_") and not name.startswith("bottleneck_sidecar_process_"):
            assert {k: v for k, v in labels if k in LABELS} == LABELS, name


def test_no_limit_means_no_period_series_and_max_means_no_memory_max(tmp_path: Path) -> None:
    overrides = {
        "cpu.max": "max 100000\n",
        "cpu.stat": "usage_usec 5000000\nuser_usec 4000000\nsystem_usec 1000000\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n",
        "memory.max": "max\n",
    }
    build_tree(tmp_path / "cg", overrides=overrides)
    text = _render(tmp_path, cgroup_root=tmp_path / "cg")
    assert value(text, "bottleneck_sidecar_cpu_usage_seconds_total", **LABELS) == pytest.approx(5.0)
    for absent in (
        "bottleneck_sidecar_cpu_periods_total",
        "bottleneck_sidecar_cpu_throttled_periods_total",
        "bottleneck_sidecar_cpu_limit_cores",
        "bottleneck_sidecar_memory_max_bytes",
    ):
        assert value(text, absent) is None, absent


def test_swapins_are_absent_on_kernels_without_pswpin(tmp_path: Path) -> None:
    # memory.stat carries pswpin from Linux 6.15 on: before, no swap-in series (not a zero one)
    stat = "anon 2147483648\nfile 1073741824\npgfault 900000\npgmajfault 4321\ninactive_file 536870912\n"
    build_tree(tmp_path / "cg", overrides={"memory.stat": stat})
    text = _render(tmp_path, cgroup_root=tmp_path / "cg")
    assert value(text, "bottleneck_sidecar_memory_swapins_total") is None
    assert value(text, "bottleneck_sidecar_memory_major_faults_total", **LABELS) == 4321


def test_missing_files_mean_absent_metrics_and_one_log_line_each(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    build_tree(tmp_path / "cg", omit=("io.stat", "memory.stat", "memory.pressure"))
    reader = Reader(cgroup_root=tmp_path / "cg", proc_root=write_proc(tmp_path / "proc", PROCS), identity=IDENTITY)
    collector = SnapshotCollector(IDENTITY)
    with caplog.at_level(logging.INFO, logger="bottleneck_operator.sidecar"):
        for _ in range(5):
            collector.update(reader.snapshot())
    text = generate_latest(types.SimpleNamespace(collect=collector.collect)).decode()  # type: ignore[arg-type]
    assert value(text, "bottleneck_sidecar_io_read_bytes_total") is None
    assert value(text, "bottleneck_sidecar_memory_major_faults_total") is None
    assert value(text, "bottleneck_sidecar_pressure_waiting_seconds_total", resource="memory") is None
    assert value(text, "bottleneck_sidecar_pressure_waiting_seconds_total", resource="io") == pytest.approx(120.0)
    assert value(text, "bottleneck_sidecar_memory_current_bytes") is not None
    for name in ("io.stat", "memory.stat", "memory.pressure"):
        lines = [r for r in caplog.records if name in r.getMessage()]
        assert len(lines) == 1, (name, [r.getMessage() for r in caplog.records])


def test_malformed_file_is_absent_with_one_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    build_tree(tmp_path / "cg", overrides={"memory.current": "lots\n"})
    reader = Reader(cgroup_root=tmp_path / "cg", proc_root=write_proc(tmp_path / "proc", PROCS), identity=IDENTITY)
    with caplog.at_level(logging.WARNING, logger="bottleneck_operator.sidecar"):
        snaps = [reader.snapshot() for _ in range(3)]
    assert all(s.memory_current is None for s in snaps)
    assert snaps[-1].memory_max == 8589934592
    assert len([r for r in caplog.records if "memory.current" in r.getMessage()]) == 1


def test_hybrid_layout_reads_the_unified_mount(tmp_path: Path) -> None:
    # v1 controllers at the top, a controller-less v2 tree under unified/: cpu.stat usage and PSI only.
    root = tmp_path / "cg"
    for v1 in ("cpu", "memory", "blkio"):
        (root / v1).mkdir(parents=True)
    only = {"cpu.stat", "cpu.pressure", "io.pressure", "memory.pressure", "cgroup.controllers"}
    omit = tuple(name for name in FILES if name not in only)
    build_tree(
        root / "unified",
        omit=omit,
        overrides={"cgroup.controllers": "", "cpu.stat": "usage_usec 2000000\nuser_usec 1500000\nsystem_usec 500000\n"},
    )
    assert cgroup.unified_root(root) == root / "unified"
    text = _render(tmp_path, cgroup_root=root)
    assert value(text, "bottleneck_sidecar_cpu_usage_seconds_total", **LABELS) == pytest.approx(2.0)
    assert value(text, "bottleneck_sidecar_pressure_stalled_seconds_total", resource="io") == pytest.approx(90.0)
    assert value(text, "bottleneck_sidecar_cpu_throttled_periods_total") is None
    assert value(text, "bottleneck_sidecar_memory_current_bytes") is None


def test_pod_not_found_then_found_after_the_back_off(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "cg"
    build_tree(root, uid="11111111-2222-3333-4444-555555555555")  # somebody else's pod
    now = [1000.0]
    reader = Reader(
        cgroup_root=root, proc_root=write_proc(tmp_path / "proc", PROCS), identity=IDENTITY, clock=lambda: now[0]
    )
    with caplog.at_level(logging.WARNING, logger="bottleneck_operator.sidecar"):
        first = [reader.snapshot() for _ in range(3)]
    assert all(not s.cpu and s.source == "proc" for s in first)
    assert len([r for r in caplog.records if "not found" in r.getMessage()]) == 1

    build_tree(root)  # the pod's cgroup appears
    now[0] += 10
    assert not reader.snapshot().cpu  # searched at most once a minute
    now[0] += 60
    found = reader.snapshot()
    assert found.source == "cgroup2" and found.cpu["usage_usec"] == 123456789


def test_no_cgroup_v2_and_no_processes_gives_source_none(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "empty").mkdir()
    with caplog.at_level(logging.INFO, logger="bottleneck_operator.sidecar"):
        text = _render(
            tmp_path, cgroup_root=tmp_path / "empty", proc_root=write_proc(tmp_path / "p1", {1: ("pause", "S")})
        )
    assert value(text, "bottleneck_sidecar_info", source="none", **LABELS) == 1
    assert value(text, "bottleneck_sidecar_cpu_usage_seconds_total") is None
    assert value(text, "bottleneck_sidecar_processes", state="running") is None
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "no cgroup v2 hierarchy" in messages and "no other process visible" in messages


def test_explicit_cgroup_path_skips_the_search(tmp_path: Path) -> None:
    pod = build_tree(tmp_path / "cg")
    text = _render(tmp_path, cgroup_root=tmp_path / "nowhere", cgroup_path=pod)
    assert value(text, "bottleneck_sidecar_memory_oom_kills_total") == 1


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv to drop to nobody"
)
def test_unreadable_file_as_a_non_root_user(tmp_path: Path) -> None:
    # Root reads everything, so the collector runs as nobody (uid 65534), as it does in the pod (65532).
    base = Path(tempfile.mkdtemp(prefix="bn-perm-"))
    try:
        os.chmod(base, 0o755)
        pod = build_tree(base / "cg")
        proc = write_proc(base / "proc", PROCS)
        for d in [base, *(p for p in base.rglob("*") if p.is_dir())]:
            os.chmod(d, 0o755)
        os.chmod(pod / "memory.stat", 0o000)
        script = (
            "import logging,sys\n"
            "from pathlib import Path\n"
            "from bottleneck_operator.sidecar.reader import Identity, Reader\n"
            "logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format='%(message)s')\n"
            f"r = Reader(cgroup_root=Path({str(base / 'cg')!r}), proc_root=Path({str(proc)!r}),"
            f" identity=Identity('ml', 'p', 'n', {POD_UID!r}))\n"
            "snaps = [r.snapshot() for _ in range(4)]\n"
            "print(snaps[-1].memory_stat, snaps[-1].cpu.get('usage_usec'))\n"
        )
        result = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", script],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.split() == ["{}", "123456789"]
        lines = [line for line in result.stderr.splitlines() if "memory.stat" in line]
        assert len(lines) == 1 and "Permission denied" in lines[0]
    finally:
        shutil.rmtree(base, ignore_errors=True)


# --- this machine


def test_this_machines_cgroup_files() -> None:
    v2root = cgroup.unified_root(Path("/sys/fs/cgroup"))
    if v2root is None:
        pytest.skip("no cgroup v2 hierarchy on this machine")
    reader = Reader(identity=Identity("", "host", "host", ""), processes=True)
    before = cgroup.parse_flat_keyed((reader._locate() or v2root).joinpath("cpu.stat").read_text())["usage_usec"]
    snap = reader.snapshot()
    after = cgroup.parse_flat_keyed((reader.cgroup_dir or v2root).joinpath("cpu.stat").read_text())["usage_usec"]
    assert reader.cgroup_dir is not None and reader.cgroup_dir.is_relative_to(v2root)
    assert before <= snap.cpu["usage_usec"] <= after  # a counter read between two direct reads
    for resource in ("cpu", "io", "memory"):
        f = reader.cgroup_dir / f"{resource}.pressure"
        assert (resource in snap.pressure) == f.exists()
        if f.exists():
            assert snap.pressure[resource]["some"] >= 0
    # Files the hybrid layout lacks are absent, present ones parsed: nothing in between.
    assert (snap.memory_current is not None) == (reader.cgroup_dir / "memory.current").exists()
    assert (bool(snap.io)) == (reader.cgroup_dir / "io.stat").exists()
    assert snap.source == "cgroup2"


def test_this_machines_processes() -> None:
    child = subprocess.Popen(["sleep", "30"])
    try:
        counts = count_states(Path("/proc"), frozenset({os.getpid()}))
        assert counts.seen >= 1 and counts.sleeping >= 1
        assert counts.running + counts.iowait + counts.sleeping <= counts.seen
    finally:
        child.kill()
        child.wait()


def test_busy_processes_are_those_at_a_full_core_between_two_readings(tmp_path: Path) -> None:
    procs = {1: ("pause", "S"), 10: ("python3", "S"), 11: ("pt_data_worker", "R"), 12: ("pt_data_worker", "R")}
    root = write_proc(tmp_path / "proc", procs, {1: 0, 10: 100, 11: 100, 12: 100})
    now = [500.0]
    reader = Reader(cgroup_root=tmp_path / "none", proc_root=root, identity=IDENTITY, clock=lambda: now[0])
    reader.busy.ticks_per_second = 100.0
    assert reader.snapshot().busy_processes is None  # one reading: no interval yet
    # 10 s later: worker 11 used 9.5 core-seconds, worker 12 (time-sliced with others) 6, the trainer 1
    now[0] += 10.0
    write_proc(root, procs, {1: 0, 10: 200, 11: 1050, 12: 700})
    collector = SnapshotCollector(IDENTITY)
    collector.update(reader.snapshot())
    registry = CollectorRegistry()
    registry.register(collector)
    text = generate_latest(registry).decode()
    assert value(text, "bottleneck_sidecar_busy_processes", **LABELS) == 1


def test_busy_processes_need_the_same_pid_and_a_long_enough_interval() -> None:
    before = ProcessCounts(seen=2, ticks={11: 100, 12: 5000})
    after = ProcessCounts(seen=3, ticks={11: 1100, 12: 40, 13: 9000})  # 12 is a new process, 13 appeared
    assert busy_processes(before, after, 10.0, 100.0) == 1
    assert busy_processes(before, after, 0.05, 100.0) is None  # five ticks cannot tell 0.9 from 1.0


def test_this_machines_busy_and_sleeping_processes() -> None:
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        time.sleep(0.3)
        first = count_states(Path("/proc"), frozenset({os.getpid()}))
        time.sleep(1.5)
        second = count_states(Path("/proc"), frozenset({os.getpid()}))
        tick = float(os.sysconf("SC_CLK_TCK"))

        def only(counts: ProcessCounts, pid: int) -> ProcessCounts:
            return ProcessCounts(seen=1, ticks={pid: counts.ticks[pid]})

        assert busy_processes(only(first, sleeper.pid), only(second, sleeper.pid), 1.5, tick) == 0
        used = (second.ticks[spinner.pid] - first.ticks[spinner.pid]) / tick / 1.5
        assert used > 0.05  # a loaded machine may give it a sliver of a core; a sleeper uses none
    finally:
        for p in (spinner, sleeper):
            p.kill()
            p.wait()


# --- NVML (optional)


def test_without_pynvml_gpu_readings_are_off(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails as if not installed
    nvml = Nvml()
    with caplog.at_level(logging.INFO, logger="bottleneck_operator.sidecar"):
        assert nvml.read() == [] and nvml.read() == []
    assert len([r for r in caplog.records if "pynvml" in r.getMessage()]) == 1


def test_nvml_readings_become_gpu_series(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # A stand-in for the driver library: no GPU on the test machines.
    fake = types.SimpleNamespace(
        nvmlInit=lambda: None,
        nvmlDeviceGetCount=lambda: 1,
        nvmlDeviceGetHandleByIndex=lambda i: f"h{i}",
        nvmlDeviceGetUtilizationRates=lambda h: types.SimpleNamespace(gpu=87, memory=40),
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(used=30 * 2**30, total=80 * 2**30, free=50 * 2**30),
        nvmlDeviceGetUUID=lambda h: b"GPU-abc",
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    build_tree(tmp_path / "cg")
    reader = Reader(
        cgroup_root=tmp_path / "cg", proc_root=write_proc(tmp_path / "proc", PROCS), identity=IDENTITY, nvml=Nvml()
    )
    collector = SnapshotCollector(IDENTITY)
    collector.update(reader.snapshot())
    text = generate_latest(types.SimpleNamespace(collect=collector.collect)).decode()  # type: ignore[arg-type]
    assert value(text, "bottleneck_sidecar_gpu_utilization_ratio", gpu="0", UUID="GPU-abc", **LABELS) == pytest.approx(
        0.87
    )
    assert value(text, "bottleneck_sidecar_gpu_memory_total_bytes", gpu="0") == 80 * 2**30

    def broken(h: Any) -> Any:
        raise RuntimeError("GPU has fallen off the bus")

    fake.nvmlDeviceGetUtilizationRates = broken
    assert reader.snapshot().gpus == [] and reader.snapshot().gpus == []
