"""fetch_windows against a real Prometheus over the hand-made scenario (tests/data/basic).

The expected figures follow from tests/data/basic/make_basic.py: constant rates, so every value is
known exactly (two A100s at 40 % and 50 % GPU_UTIL, a trainer using 3 cores next to a collector, ...).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from bottleneck_operator.contract.signals import SIGNALS, Family
from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry import (
    InvalidName,
    InvalidWindow,
    PrometheusClient,
    WindowRequest,
    fetch_windows,
    job_lifetime,
)
from bottleneck_operator.telemetry.plan.grid import MAX_POINTS

pytestmark = pytest.mark.prometheus
T0 = 1767225600.0
END = T0 + 600


@pytest.fixture(scope="module")
def settings(basic_prometheus: Any) -> Settings:
    return Settings(prometheus_url=basic_prometheus.url, prometheus_retries=0)


@pytest.fixture(scope="module")
def windows(settings: Settings) -> dict[tuple[str, str], Any]:
    client = PrometheusClient(settings)
    reqs = [
        WindowRequest("ml", "resnet-io", T0, END),
        WindowRequest("ml", "legacy-job", T0, END),
        WindowRequest("ml", "never-ran", T0, END),
    ]
    return fetch_windows(client, reqs, settings.labels, step=settings.analysis.step)


def _late(values: np.ndarray) -> float:
    """Median of the last half of the window (after rate() ranges have filled)."""
    return float(np.nanmedian(values[len(values) // 2 :]))


def test_pod_node_and_gpus(windows: dict[tuple[str, str], Any]) -> None:
    w = windows[("ml", "resnet-io")]
    assert [p.pod for p in w.pods] == ["resnet-io-7xk2p"]
    pod = w.pods[0]
    assert pod.node == "gpu-node-1"
    assert pod.gpu_count == 2
    assert pod.gpu_model == "NVIDIA A100-SXM4-80GB"
    assert pod.co_located_pods == 2  # other-train and legacy-job share the node
    assert len(w.timestamps) == 21
    assert w.timestamps[0] == T0 and w.timestamps[-1] == END
    assert all(len(v) == 21 for v in pod.signals.values())


def test_signal_values(windows: dict[tuple[str, str], Any]) -> None:
    s = windows[("ml", "resnet-io")].pods[0].signals
    expected = {
        "gpu_util": 0.45,  # mean of 40 % and 50 %
        "fb_used_frac": 60000 / 81920,  # the fuller GPU
        "gr_engine_active": 0.40,
        "pcie_rx_bps": 3e9,
        "nvlink_total_bps": 5e5,
        "cpu_cores": 3.0,  # the trainer only: no collector, no pod-level or pause cgroup
        "mem_working_set_bytes": 20e9,
        "mem_limit_bytes": 64e9,
        "fs_read_bps": 1.5e8,
        "cpu_throttled_frac": 0.1,
        "cpu_limit_cores": 8.0,
        "node_cpus": 4.0,
        "node_cpu_busy_frac": 0.2,
        "node_cpu_iowait_frac": 0.3,
        "node_cpu_system_frac": 0.05,
        "node_disk_read_bps": 2.01e8,
        "node_disk_busy_frac": 0.9,  # the busiest device
        "node_mem_avail_frac": 0.75,
        "node_swap_used_frac": 0.0,  # no swap at all
        "node_net_rx_bps": 1e7,  # lo excluded
        "node_psi_io_some": 0.6,
        "node_majfault_ps": 2.0,
        "sc_cpu_cores": 3.0,
        "sc_throttled_frac": 0.1,
        "sc_psi_io_some": 0.7,
        "sc_psi_io_full": 0.5,
        "sc_procs_iowait": 6.0,
    }
    for name, value in expected.items():
        assert _late(s[name]) == pytest.approx(value, rel=1e-6), name
    assert set(s) <= set(SIGNALS)
    assert "sm_active" not in s  # never exported here: absent, not NaN-filled


def test_quality(windows: dict[tuple[str, str], Any]) -> None:
    q = windows[("ml", "resnet-io")].quality
    assert {Family.DCGM_DEV, Family.DCGM_PROF, Family.CADVISOR, Family.CADVISOR_CFS, Family.KSM} <= q.families
    assert {Family.NODE, Family.NODE_PSI, Family.SIDECAR} <= q.families
    assert Family.DCGM_PROF_SM not in q.families
    assert q.coverage == pytest.approx(1.0)
    assert q.scrape_interval == pytest.approx(30.0)
    assert any("SM activity" in n for n in q.notes)


def test_ownerless_pod_found_by_prefix(windows: dict[tuple[str, str], Any]) -> None:
    w = windows[("ml", "legacy-job")]
    assert [p.pod for p in w.pods] == ["legacy-job-q8v7z"]
    assert w.pods[0].node == "gpu-node-1"
    assert w.pods[0].gpu_count == 0
    assert "mem_working_set_bytes" in w.pods[0].signals
    assert any("name prefix" in n for n in w.quality.notes)
    assert w.quality.coverage == 0.0


def test_unknown_job_is_an_empty_window(windows: dict[tuple[str, str], Any]) -> None:
    w = windows[("ml", "never-ran")]
    assert w.pods == ()
    assert w.quality.families == frozenset()
    assert len(w.timestamps) == 21


def test_queries_do_not_grow_with_jobs(settings: Settings) -> None:
    # Without a size limit: one under max_query_bytes adds requests once the Jobs' names no longer
    # fit (tests/telemetry/test_query_size.py).
    settings = settings.model_copy(update={"max_query_bytes": 10**7})
    counts = []
    for n in (1, 3, 40):
        client = PrometheusClient(settings)
        reqs = [WindowRequest("ml", "resnet-io", T0, END)] + [
            WindowRequest(f"ns{i % 7}", f"job-{i}", T0 + i, END) for i in range(n - 1)
        ]
        fetch_windows(
            client,
            reqs,
            settings.labels,
            step=settings.analysis.step,
            max_query_bytes=settings.prometheus.max_query_bytes,
        )
        counts.append(client.queries_issued)
    assert counts[0] == counts[1] == counts[2], counts


def test_windows_are_cut_per_job(settings: Settings) -> None:
    client = PrometheusClient(settings)
    reqs = [WindowRequest("ml", "resnet-io", T0 + 300, END), WindowRequest("ml", "legacy-job", T0, T0 + 120)]
    out = fetch_windows(client, reqs, settings.labels, step=settings.analysis.step)
    assert out[("ml", "resnet-io")].timestamps[0] == T0 + 300
    assert len(out[("ml", "resnet-io")].timestamps) == 11
    assert len(out[("ml", "legacy-job")].timestamps) == 5


def test_long_window_is_split_into_segments_seamlessly(basic_prometheus: Any) -> None:
    settings = Settings(prometheus_url=basic_prometheus.url, step=1.0)
    client = PrometheusClient(settings)
    start = END - MAX_POINTS - 300  # two segments, the boundary inside the data
    w = fetch_windows(
        client, [WindowRequest("ml", "resnet-io", start, END)], settings.labels, step=settings.analysis.step
    )[("ml", "resnet-io")]
    assert len(w.timestamps) == END - start + 1
    cpu = w.pods[0].signals["cpu_cores"]
    assert np.isfinite(cpu[w.timestamps >= T0 + 30]).all()  # no hole at the segment boundary
    # the first segment sees the pod only in its last minutes: a young series gets an upper-bound
    # interval and so a wider rate() range; once that range is full the value is exact
    assert np.allclose(cpu[w.timestamps >= T0 + 300], 3.0)


def test_empty_and_short_windows(settings: Settings) -> None:
    client = PrometheusClient(settings)
    reqs = [
        WindowRequest("ml", "resnet-io", T0 + 300, T0 + 300),  # one instant, on the grid
        WindowRequest("ml", "legacy-job", T0 + 301, T0 + 302),  # between two steps
    ]
    out = fetch_windows(client, reqs, settings.labels, step=settings.analysis.step)
    assert len(out[("ml", "resnet-io")].timestamps) == 1
    assert out[("ml", "resnet-io")].pods[0].signals["gpu_util"][0] == pytest.approx(0.45)
    short = out[("ml", "legacy-job")]
    assert len(short.timestamps) == 0 and short.pods == ()
    assert any("shorter than one step" in n for n in short.quality.notes)


@pytest.mark.parametrize(
    "req",
    [
        WindowRequest("ml", 'x"} or vector(1) #', T0, END),
        WindowRequest("ML", "resnet-io", T0, END),
        WindowRequest("ml", "", T0, END),
        WindowRequest("ml", "a" * 300, T0, END),
    ],
)
def test_invalid_names_are_refused_before_any_query(bad_server: Any, req: WindowRequest) -> None:
    # A refused port: had any query been sent, this would be PrometheusUnavailable instead.
    settings = Settings(prometheus_url=bad_server.refused_url, prometheus_retries=0)
    client = PrometheusClient(settings)
    with pytest.raises(InvalidName):
        fetch_windows(client, [WindowRequest("ml", "fine", T0, END), req], settings.labels, step=settings.analysis.step)
    assert client.queries_issued == 0


@pytest.mark.parametrize(("start", "end"), [(END, T0), (float("nan"), END), (T0, float("inf"))])
def test_invalid_windows(bad_server: Any, start: float, end: float) -> None:
    settings = Settings(prometheus_url=bad_server.refused_url)
    with pytest.raises(InvalidWindow):
        fetch_windows(
            PrometheusClient(settings),
            [WindowRequest("ml", "resnet-io", start, end)],
            settings.labels,
            step=settings.analysis.step,
        )


def test_bad_label_setting_is_refused(bad_server: Any) -> None:
    settings = Settings(prometheus_url=bad_server.refused_url, dcgm_hostname_label='Hostname"}')
    with pytest.raises(InvalidName, match="dcgm_hostname_label"):
        fetch_windows(
            PrometheusClient(settings),
            [WindowRequest("ml", "resnet-io", T0, END)],
            settings.labels,
            step=settings.analysis.step,
        )


def test_no_requests_no_queries(settings: Settings) -> None:
    client = PrometheusClient(settings)
    assert fetch_windows(client, [], settings.labels, step=settings.analysis.step) == {}
    assert client.queries_issued == 0


def test_job_lifetime(settings: Settings) -> None:
    client = PrometheusClient(settings)
    assert job_lifetime(client, "ml", "resnet-io", now=T0 + 3600) == (T0, END)
    assert job_lifetime(client, "ml", "legacy-job", now=T0 + 3600) == (T0, END)  # by name prefix
    assert job_lifetime(client, "ml", "never-ran", now=T0 + 3600) is None
    with pytest.raises(InvalidName):
        job_lifetime(client, "ml", "Bad_Name")


def _relabelled_cluster() -> str:
    """node-exporter series carrying a `node` label; dcgm-exporter with `hostname` and no pod mapping."""
    lines = ["# TYPE kube_pod_info gauge"]
    lines += [
        f'kube_pod_info{{namespace="ml",pod="train-a1b2c",node="n1",created_by_kind="Job",created_by_name="train",job="kube-state-metrics"}} 1 {T0 + i * 30:.0f}'
        for i in range(21)
    ]
    lines.append("# TYPE node_memory_MemAvailable_bytes gauge")
    lines += [
        f'node_memory_MemAvailable_bytes{{node="n1",instance="a:9100",job="node-exporter"}} 30 {T0 + i * 30:.0f}'
        for i in range(21)
    ]
    lines.append("# TYPE node_memory_MemTotal_bytes gauge")
    lines += [
        f'node_memory_MemTotal_bytes{{node="n1",instance="a:9100",job="node-exporter"}} 120 {T0 + i * 30:.0f}'
        for i in range(21)
    ]
    lines.append("# TYPE DCGM_FI_DEV_FB_USED gauge")
    lines += [
        f'DCGM_FI_DEV_FB_USED{{gpu="0",UUID="GPU-1",modelName="Tesla T4",hostname="n1",job="dcgm-exporter"}} 100 {T0 + i * 30:.0f}'
        for i in range(21)
    ]
    return "\n".join([*lines, "# EOF"]) + "\n"


def test_node_label_setting_and_unmapped_gpus(start_prometheus: Any) -> None:
    prom = start_prometheus(_relabelled_cluster())
    settings = Settings(prometheus_url=prom.url, node_exporter_node_label="node", dcgm_hostname_label="hostname")
    w = fetch_windows(
        PrometheusClient(settings),
        [WindowRequest("ml", "train", T0, END)],
        settings.labels,
        step=settings.analysis.step,
    )[("ml", "train")]
    pod = w.pods[0]
    assert _late(pod.signals["node_mem_avail_frac"]) == pytest.approx(0.25)
    assert pod.gpu_count == 0
    assert any("pod mapping" in n for n in w.quality.notes)
    # the default join finds nothing here (no node_uname_info), and says so
    default = Settings(prometheus_url=prom.url)
    w2 = fetch_windows(
        PrometheusClient(default), [WindowRequest("ml", "train", T0, END)], default.labels, step=default.analysis.step
    )[("ml", "train")]
    assert "node_mem_avail_frac" not in w2.pods[0].signals
    assert any("no node-exporter series for node n1" in n for n in w2.quality.notes)
