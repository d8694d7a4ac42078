"""OpenMetrics output: exporters' names and labels, counters, and a real promtool backfill."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from bottleneck_operator_dev.simulation import SimulatedJob, generate_jobs, write_openmetrics
from bottleneck_operator_dev.simulation.openmetrics import escape_label_value

START = 1_700_000_000.0
DCGM_LABELS = {"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "namespace", "pod", "container"}
SIDECAR_NAMES = {
    "bottleneck_sidecar_cpu_usage_seconds_total", "bottleneck_sidecar_cpu_periods_total",
    "bottleneck_sidecar_cpu_throttled_periods_total", "bottleneck_sidecar_cpu_throttled_seconds_total",
    "bottleneck_sidecar_pressure_waiting_seconds_total", "bottleneck_sidecar_pressure_stalled_seconds_total",
    "bottleneck_sidecar_io_read_bytes_total", "bottleneck_sidecar_io_write_bytes_total",
    "bottleneck_sidecar_io_reads_total", "bottleneck_sidecar_memory_current_bytes",
    "bottleneck_sidecar_memory_max_bytes", "bottleneck_sidecar_memory_major_faults_total",
    "bottleneck_sidecar_memory_oom_kills_total", "bottleneck_sidecar_processes", "bottleneck_sidecar_info",
    "bottleneck_sidecar_busy_processes", "bottleneck_sidecar_network_receive_bytes_total",
    "bottleneck_sidecar_network_transmit_bytes_total",
}  # fmt: skip
# Only where the collector's kernel counts swap-ins per cgroup (memory.stat pswpin, Linux >= 6.15).
SIDECAR_OPTIONAL = {"bottleneck_sidecar_memory_swapins_total"}
CONTRACT = {
    "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_OCCUPANCY",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_PCIE_TX_BYTES",
    "DCGM_FI_PROF_PCIE_RX_BYTES", "DCGM_FI_PROF_NVLINK_TX_BYTES", "DCGM_FI_PROF_NVLINK_RX_BYTES",
    "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_MEM_COPY_UTIL",
    "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "node_cpu_seconds_total",
    "node_disk_read_bytes_total", "node_disk_reads_completed_total", "node_disk_io_time_seconds_total",
    "node_memory_MemAvailable_bytes", "node_memory_MemTotal_bytes", "node_memory_SwapTotal_bytes",
    "node_memory_SwapFree_bytes", "node_vmstat_pgmajfault", "node_network_receive_bytes_total",
    "node_network_transmit_bytes_total", "node_pressure_cpu_waiting_seconds_total",
    "node_pressure_io_waiting_seconds_total", "node_pressure_io_stalled_seconds_total",
    "node_pressure_memory_waiting_seconds_total", "node_pressure_memory_stalled_seconds_total", "node_uname_info",
    "container_cpu_usage_seconds_total", "container_cpu_cfs_periods_total", "container_cpu_cfs_throttled_periods_total",
    "container_memory_working_set_bytes", "container_spec_memory_limit_bytes", "container_fs_reads_bytes_total",
    "kube_pod_info", "kube_pod_container_resource_limits",
}  # fmt: skip


@pytest.fixture(scope="module")
def jobs() -> list[SimulatedJob]:
    """Jobs that together use every family (full field set, sidecars, PSI, CPU limits, neighbours)."""
    pool = generate_jobs(17, 150, start=START, duration=600, scrape_interval=30, dcgm_fieldset="full")
    chosen: list[SimulatedJob] = []
    wants = [
        lambda j: (
            j.params.env.sidecar
            and j.params.cpu_limit is not None
            and j.params.env.mem_limit_bytes
            and j.params.env.ksm
        ),
        lambda j: j.params.env.node_psi and j.params.env.ksm and j.params.env.neighbour_pods > 0,
        lambda j: "nvlink" in j.params.gpu.lower() or j.params.gpu in ("A100", "H100", "V100"),
    ]
    for want in wants:
        # small nodes keep the text (one node_cpu_seconds_total series per CPU and mode) quick to parse
        chosen.append(next(j for j in pool if want(j) and j not in chosen and j.params.node_cpus * len(j.nodes) <= 128))
    return chosen


@pytest.fixture(scope="module")
def text(jobs: list[SimulatedJob]) -> str:
    buf = io.StringIO()
    write_openmetrics(jobs, buf)
    return buf.getvalue()


@pytest.fixture(scope="module")
def samples(text: str) -> dict[str, list[tuple[dict[str, str], float, float]]]:
    """Sample name -> (labels, value, timestamp), parsed by the strict OpenMetrics parser."""
    out: dict[str, list[tuple[dict[str, str], float, float]]] = defaultdict(list)
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[s.name].append((s.labels, s.value, float(s.timestamp)))
    return out


def test_every_contract_family_present(samples: dict[str, list[tuple[dict[str, str], float, float]]]) -> None:
    assert set(samples) >= CONTRACT
    sidecar = {n for n in samples if n.startswith("bottleneck_sidecar_")}
    assert SIDECAR_NAMES <= sidecar <= SIDECAR_NAMES | SIDECAR_OPTIONAL


def test_labels_as_the_exporters_name_them(
    samples: dict[str, list[tuple[dict[str, str], float, float]]], jobs: list[SimulatedJob]
) -> None:
    for labels, _, _ in samples["DCGM_FI_DEV_GPU_UTIL"]:
        assert set(labels) >= DCGM_LABELS
        assert labels["device"] == f"nvidia{labels['gpu']}"
    cpu = samples["node_cpu_seconds_total"]
    assert {lab["mode"] for lab, _, _ in cpu} == {"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"}
    assert all(lab["job"] == "node-exporter" and lab["instance"].endswith(":9100") for lab, _, _ in cpu)
    uname = {lab["instance"]: lab["nodename"] for lab, _, _ in samples["node_uname_info"]}
    assert set(uname.values()) == {n.name for j in jobs for n in j.nodes}
    containers = {lab["container"] for lab, _, _ in samples["container_cpu_usage_seconds_total"]}
    assert {"trainer", "bottleneck-collector", ""} <= containers
    for lab, _, _ in samples["container_cpu_usage_seconds_total"]:
        assert {"namespace", "pod", "container", "id", "image"} <= set(lab)
    info = samples["kube_pod_info"]
    ours = [lab for lab, _, _ in info if lab["namespace"] == "ml"]
    assert ours and all(lab["created_by_kind"] == "Job" for lab in ours)
    assert {"namespace", "pod", "uid", "node", "created_by_name", "host_ip", "pod_ip"} <= set(ours[0])
    assert any(lab["namespace"] != "ml" for lab, _, _ in info), "neighbour pods of other jobs"
    limits = samples["kube_pod_container_resource_limits"]
    assert {lab["resource"] for lab, _, _ in limits} >= {"cpu", "memory"}
    assert {lab["unit"] for lab, _, _ in limits} >= {"core", "byte"}
    for lab, _, _ in samples["bottleneck_sidecar_cpu_usage_seconds_total"]:
        assert {"namespace", "pod", "node"} <= set(lab)


def test_units(samples: dict[str, list[tuple[dict[str, str], float, float]]]) -> None:
    util = np.array([v for _, v, _ in samples["DCGM_FI_DEV_GPU_UTIL"]])
    prof = np.array([v for _, v, _ in samples["DCGM_FI_PROF_SM_ACTIVE"]])
    fb = np.array([v for _, v, _ in samples["DCGM_FI_DEV_FB_USED"]])
    assert util.max() > 1.0 and util.max() <= 100  # percent
    assert prof.max() <= 1.0  # ratio
    assert fb.max() > 1000 and (fb == np.round(fb)).all()  # MiB


def test_counters_monotone_and_series_in_time_order(
    samples: dict[str, list[tuple[dict[str, str], float, float]]],
) -> None:
    for name, rows in samples.items():
        series: dict[tuple[tuple[str, str], ...], list[tuple[float, float]]] = defaultdict(list)
        for labels, value, ts in rows:
            series[tuple(sorted(labels.items()))].append((ts, value))
        for points in series.values():
            times = [t for t, _ in points]
            assert times == sorted(times) and len(set(times)) == len(times), name
            if name.endswith("_total"):
                values = np.array([v for _, v in points])
                assert (np.diff(values) >= 0).sum() >= len(values) - 2, name  # at most one deliberate reset


def test_escaping() -> None:
    assert escape_label_value('a"b\\c\nd') == 'a\\"b\\\\c\\nd'


def test_ends_with_eof_and_families_contiguous(text: str) -> None:
    assert text.endswith("# EOF\n")
    types = [line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")]
    assert len(types) == len(set(types))
    assert "# TYPE node_cpu_seconds counter" in text  # counters' family drops _total


@pytest.mark.prometheus
def test_promtool_backfills(text: str, tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool missing: `make test` installs Debian's prometheus")
    src = tmp_path / "sim.om"
    src.write_text(text)
    out = tmp_path / "tsdb"
    proc = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(src), str(out)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    metas = list(out.glob("*/meta.json"))
    assert metas
    stats = json.loads(metas[0].read_text())["stats"]
    assert stats["numSamples"] > 1000 and stats["numSeries"] > 100


def test_other_gpus_of_the_node() -> None:
    """dcgm-exporter reports every GPU of a node: neighbours' (their pod labels) and free ones (empty)."""
    pool = generate_jobs(5, 30, start=START, duration=300, scrape_interval=60)
    job = next(
        j
        for j in pool
        if j.params.gpus_per_pod * j.params.pods_per_node < j.params.gpus_per_node
        and j.params.env.neighbour_pods
        and j.params.node_cpus <= 96
    )
    buf = io.StringIO()
    write_openmetrics([job], buf)
    util = [
        s for f in text_string_to_metric_families(buf.getvalue()) if f.name == "DCGM_FI_DEV_GPU_UTIL" for s in f.samples
    ]
    pods = {s.labels.get("pod", "") for s in util}
    ours = {p.pod for p in job.pods}
    assert ours < pods
    assert len({(s.labels["Hostname"], s.labels["gpu"]) for s in util}) == sum(n.gpus for n in job.nodes)
    only = io.StringIO()
    write_openmetrics([job], only, extra_pods=False)
    kept = {s.labels.get("namespace", "") for f in text_string_to_metric_families(only.getvalue()) for s in f.samples}
    assert kept <= {job.namespace, ""}


def test_optional_families_as_the_exporters_name_them() -> None:
    """The FP32/FP16 pipes, the power limit and the clock-event reasons (under either of dcgm-exporter's
    names), the infiniband collector's port counters and the collector's swap-ins, where a job has them."""
    pool = generate_jobs(31, 120, start=START, duration=300, scrape_interval=60, dcgm_fieldset="full")

    def names(job: SimulatedJob) -> dict[str, list[dict[str, str]]]:
        buf = io.StringIO()
        write_openmetrics([job], buf, extra_pods=False)
        out: dict[str, list[dict[str, str]]] = defaultdict(list)
        for family in text_string_to_metric_families(buf.getvalue()):
            for s in family.samples:
                out[s.name].append(s.labels)
        return out

    small = [j for j in pool if j.params.node_cpus * len(j.nodes) <= 96]
    env = [j.params.env for j in small]
    assert any(e.dcgm_pipes for e in env) and not all(e.dcgm_pipes for e in env)
    for want, present in (
        (lambda e: e.dcgm_pipes, ("DCGM_FI_PROF_PIPE_FP32_ACTIVE", "DCGM_FI_PROF_PIPE_FP16_ACTIVE")),
        (lambda e: e.dcgm_power_clocks and not e.legacy_dcgm,
         ("DCGM_FI_DEV_POWER_MGMT_LIMIT", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS")),
        (lambda e: e.dcgm_power_clocks and e.legacy_dcgm,
         ("DCGM_FI_DEV_POWER_MGMT_LIMIT", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")),
        (lambda e: e.ib_ports > 0, ("node_infiniband_port_data_received_bytes_total",
                                    "node_infiniband_port_data_transmitted_bytes_total")),
        (lambda e: e.swapins_counted and e.sidecar, ("bottleneck_sidecar_memory_swapins_total",)),
    ):  # fmt: skip
        job = next(j for j in small if want(j.params.env))
        found = names(job)
        for name in present:
            assert found[name], name
            if name.startswith("DCGM_FI_"):
                assert all(set(labels) >= DCGM_LABELS for labels in found[name]), name
            if name.startswith("node_infiniband_"):
                ports = {(labels["device"], labels["port"]) for labels in found[name]}
                assert len(ports) == job.params.env.ib_ports, name  # one series per port and node
        without = next(j for j in small if not want(j.params.env))
        assert not names(without).get(present[-1]), present


def test_write_series_takes_plain_times(few_jobs: list[SimulatedJob]) -> None:
    """``write_series`` with float times (as callers that filter series use it) matches ``write_openmetrics``."""
    from bottleneck_operator_dev.simulation.openmetrics import job_series, write_series

    job = few_jobs[0]
    times = {e: job.state.times(e).tolist() for e in job.state.offsets}
    buf = io.StringIO()
    n = write_series(((s, times[s.exporter]) for s in job_series(job)), buf)
    whole = io.StringIO()
    write_openmetrics([job], whole)
    assert buf.getvalue() == whole.getvalue()
    assert n == buf.getvalue().count("\n") - 2 * buf.getvalue().count("# TYPE") - 1
