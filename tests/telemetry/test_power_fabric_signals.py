"""The power-limit, clock-reason, pipe, RDMA-port, swap-in and OOM signals, read from a real Prometheus.

Three pods of one Job with values the test sets (written relative to the time the test runs,
backfilled with promtool):

- ``train-0`` (two GPUs, node ``n1``): FP32 pipes 0.6 and 0.2, FP16 0.05 and 0.15, a power limit of
  500 W on both, clock-event reasons 0x5 (SW power cap and idle: slowed) and 0x1 (idle alone: not);
  ``n1`` has one HCA with two ports (RX 100 and 300 MB/s, TX 150 and 50 MB/s); its collector counts
  250 swap-ins a second and no OOM kill.
- ``train-1`` (one GPU, node ``n2``): an older dcgm-exporter naming the reasons
  ``DCGM_FI_DEV_CLOCK_THROTTLE_REASONS``, at 0x140 (HW thermal and display clocks: slowed); ``n2``
  has no infiniband collector and its collector's kernel no ``pswpin``; one OOM kill halfway.
- ``train-2`` (two GPUs, node ``n2``): one GPU exported under both names as an exporter is upgraded
  (0x12 new, sync boost and application clocks: not slowed; 0x4 old: the new name wins), the other
  at 0x20 (SW thermal: slowed); no pipes, no limit.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import pytest

from bottleneck_operator.contract.signals import Family
from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry import PrometheusClient, WindowRequest, fetch_windows
from bottleneck_operator.telemetry.doctor import check

pytestmark = pytest.mark.prometheus

NOW = float(math.floor(time.time() / 60) * 60)
START = NOW - 1800
HALF = START + 900
SCRAPE = 15
STEP = 30.0
NODES = {"train-0": "n1", "train-1": "n2", "train-2": "n2"}
IPS = {"n1": "10.0.0.1", "n2": "10.0.0.2"}
# pod -> per GPU: (FP32, FP16, power limit, {reasons metric: value}); None: not exported
NEW, OLD = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"
GPUS: dict[str, list[tuple[float | None, float | None, float | None, dict[str, int]]]] = {
    "train-0": [(0.6, 0.05, 500.0, {NEW: 0x4 | 0x1}), (0.2, 0.15, 500.0, {NEW: 0x1})],
    "train-1": [(None, None, 400.0, {OLD: 0x40 | 0x100})],
    "train-2": [(None, None, None, {NEW: 0x10 | 0x2, OLD: 0x4}), (None, None, None, {NEW: 0x20})],
}
# (device, port, RX B/s, TX B/s) of n1's adapter
PORTS = [("mlx5_0", "1", 1e8, 1.5e8), ("mlx5_0", "2", 3e8, 0.5e8)]


# The scrape job of each family's series, as kube-prometheus-stack names them.
SCRAPE_JOBS = {
    "kube_": "kube-state-metrics",
    "DCGM_": "dcgm-exporter",
    "container_": "kubelet",
    "node_": "node-exporter",
    "bottleneck_sidecar_": "bottleneck-collector",
}


def _openmetrics() -> str:
    times = range(int(START), int(NOW) + 1, SCRAPE)
    out: list[str] = []

    def family(name: str, kind: str, series: list[tuple[str, Any]]) -> None:
        """``series``: (labels, value or a function of the sample time)."""
        out.append(f"# TYPE {name.removesuffix('_total') if kind == 'counter' else name} {kind}")
        job = next(j for prefix, j in SCRAPE_JOBS.items() if name.startswith(prefix))
        for labels, value in series:
            labels = labels if 'job="' in labels else f'{labels},job="{job}"'
            out.extend(f"{name}{{{labels}}} {value(t) if callable(value) else value} {t}" for t in times)

    pods = sorted(NODES)
    family("kube_pod_info", "gauge", [
        (f'namespace="ml",pod="{p}",node="{NODES[p]}",created_by_kind="Job",created_by_name="train"', 1) for p in pods
    ])  # fmt: skip
    gpu: dict[str, list[tuple[str, Any]]] = {}
    for pod, boards in GPUS.items():
        for i, (fp32, fp16, limit, reasons) in enumerate(boards):
            labels = (
                f'gpu="{i}",UUID="GPU-{pod}-{i}",modelName="NVIDIA H100 80GB HBM3",Hostname="{NODES[pod]}",'
                f'namespace="ml",pod="{pod}",container="trainer"'
            )
            values = {"DCGM_FI_DEV_FB_USED": 70000, "DCGM_FI_DEV_GPU_UTIL": 90, **reasons}
            values |= {"DCGM_FI_PROF_PIPE_FP32_ACTIVE": fp32, "DCGM_FI_PROF_PIPE_FP16_ACTIVE": fp16}
            values |= {"DCGM_FI_DEV_POWER_MGMT_LIMIT": limit}
            for name, value in values.items():
                if value is not None:
                    gpu.setdefault(name, []).append((labels, value))
    for name, series in gpu.items():
        family(name, "gauge", series)
    family("node_uname_info", "gauge", [
        (f'instance="{ip}:9100",job="node-exporter",nodename="{node}"', 1) for node, ip in IPS.items()
    ])  # fmt: skip
    family("node_cpu_seconds_total", "counter", [
        (f'instance="{ip}:9100",job="node-exporter",cpu="0",mode="idle"', lambda t: t - START) for ip in IPS.values()
    ])  # fmt: skip
    n1 = f'instance="{IPS["n1"]}:9100",job="node-exporter"'
    for direction, column in (("received", 2), ("transmitted", 3)):
        family(f"node_infiniband_port_data_{direction}_bytes_total", "counter", [
            (f'{n1},device="{p[0]}",port="{p[1]}"', lambda t, r=p[column]: (t - START) * r + 1e12) for p in PORTS
        ])  # fmt: skip
    sidecar = 'namespace="ml",pod="{}",node="{}"'
    family("bottleneck_sidecar_memory_swapins_total", "counter", [
        (sidecar.format("train-0", "n1"), lambda t: (t - START) * 250.0)
    ])  # fmt: skip
    family("bottleneck_sidecar_memory_oom_kills_total", "counter", [
        (sidecar.format("train-0", "n1"), 0), (sidecar.format("train-1", "n2"), lambda t: 1 if t >= HALF else 0)
    ])  # fmt: skip
    out.append("# EOF")
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def prometheus(start_prometheus: Any) -> Any:
    return start_prometheus(_openmetrics())


@pytest.fixture(scope="module")
def pods(prometheus: Any) -> dict[str, Any]:
    settings = Settings(prometheus_url=prometheus.url, prometheus_retries=0, step=STEP)
    request = WindowRequest("ml", "train", START + 300, NOW - 60)
    window = fetch_windows(
        PrometheusClient(settings.prometheus), [request], settings.labels, step=settings.analysis.step
    )[("ml", "train")]
    assert {Family.DCGM_PROF_PIPES, Family.DCGM_POWER_CLOCKS, Family.NODE_IB} <= window.quality.families
    return {p.pod: p for p in window.pods}


def test_pipes_and_the_power_limit_are_the_mean_over_the_pods_gpus(pods: dict[str, Any]) -> None:
    train0 = pods["train-0"].signals
    np.testing.assert_allclose(train0["fp32_active"], 0.4)
    np.testing.assert_allclose(train0["fp16_active"], 0.1)
    np.testing.assert_allclose(train0["power_limit_w"], 500.0)
    np.testing.assert_allclose(pods["train-1"].signals["power_limit_w"], 400.0)
    for name in ("fp32_active", "fp16_active", "power_limit_w"):  # a metric that is missing: no signal
        assert name not in pods["train-2"].signals, name
    assert "fp32_active" not in pods["train-1"].signals


def test_clock_slowdown_counts_the_gpus_with_a_slowdown_bit(pods: dict[str, Any]) -> None:
    # 0x4 counts, 0x1 (idle) alone does not: one GPU of two
    np.testing.assert_array_equal(pods["train-0"].signals["clock_slowdown_frac"], 0.5)
    # an older exporter's name, 0x40 with 0x100 beside it: the one GPU
    np.testing.assert_array_equal(pods["train-1"].signals["clock_slowdown_frac"], 1.0)
    # 0x10 | 0x2 does not count, 0x20 does; under both names the newer wins (its 0x12, not the old 0x4)
    np.testing.assert_array_equal(pods["train-2"].signals["clock_slowdown_frac"], 0.5)


def test_infiniband_bytes_are_summed_over_the_nodes_ports(pods: dict[str, Any]) -> None:
    train0 = pods["train-0"].signals
    np.testing.assert_allclose(train0["ib_rx_bps"], 4e8, rtol=1e-9)
    np.testing.assert_allclose(train0["ib_tx_bps"], 2e8, rtol=1e-9)
    for pod in ("train-1", "train-2"):  # n2 has no infiniband collector: no signal
        assert "ib_rx_bps" not in pods[pod].signals and "ib_tx_bps" not in pods[pod].signals


def test_swap_ins_and_oom_kills_are_the_collectors_rates(pods: dict[str, Any]) -> None:
    np.testing.assert_allclose(pods["train-0"].signals["sc_swapin_ps"], 250.0, rtol=1e-9)
    assert "sc_swapin_ps" not in pods["train-1"].signals  # a kernel without pswpin
    np.testing.assert_array_equal(pods["train-0"].signals["sc_oom_kills"], 0.0)
    kills = pods["train-1"].signals["sc_oom_kills"]
    ts = np.asarray(START + 300 + STEP * np.arange(kills.size))
    assert (kills[ts < HALF - 30] == 0).all() and (kills[ts > HALF + 300] == 0).all()
    assert kills.max() > 0 and np.isfinite(kills).all()


def test_doctor_names_the_optional_fields_and_ports(prometheus: Any) -> None:
    settings = Settings(prometheus_url=prometheus.url, prometheus_retries=0)
    found = {f.family: f for f in check(PrometheusClient(settings), settings.labels, NOW).findings}
    dcgm, node = found["dcgm-exporter"], found["node-exporter"]
    assert "power limit/clock reasons" in dcgm.found and "FP32/FP16 pipes" in dcgm.found, dcgm.found
    assert "enforced power limit" in dcgm.can
    assert "InfiniBand ports" in node.found and "RDMA" in node.can, node
