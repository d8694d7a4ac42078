"""Windows read back through a real Prometheus match the simulator's own windows for the same jobs.

The simulator writes every exporter's series as OpenMetrics (promtool-backfilled into Prometheus)
and also computes each job's signals directly (``SimulatedJob.to_window``). Agreement proves that
the catalog's PromQL computes the signals as analysis/signals.py defines them: the right metrics,
labels, joins, unit conversions and aggregations over GPUs, containers, devices and nodes.

Gauges must agree sample for sample. Counter rates are compared by their mean over the steady part
of the window: the data layer's rate() range (>= 4 scrape intervals) is wider than the simulator's
(2 intervals), which smooths bursts differently but leaves the mean alone once the range is full.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from bottleneck_operator.analysis.signals import SIGNALS
from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry import PrometheusClient, WindowRequest, fetch_windows
from bottleneck_operator.telemetry import selectors as cat

pytestmark = pytest.mark.prometheus
STEP = 30.0
GAUGES = {
    "gpu_util", "mem_copy_util", "fb_used_frac", "power_w", "sm_clock_mhz", "gr_engine_active", "tensor_active",
    "dram_active", "pcie_tx_bps", "pcie_rx_bps", "sm_active", "sm_occupancy", "nvlink_tx_bps", "nvlink_rx_bps",
    "mem_working_set_bytes", "mem_limit_bytes", "cpu_limit_cores", "node_cpus", "node_mem_avail_frac",
    "node_swap_used_frac", "sc_procs_running", "sc_procs_iowait",
}  # fmt: skip
# Differences below these are noise in a near-idle signal (e.g. 8 KB/s of block reads on a job that
# reads over NFS), not a query error.
NOISE_FLOOR = {"ratio": 0.01, "B/s": 1e5, "1/s": 1.0, "cores": 0.05}


@pytest.fixture(scope="module")
def pairs(sim_dataset: Any) -> list[tuple[Any, Any, Any]]:
    """(simulated job, simulator's window, window read from Prometheus) on the same step-aligned grid."""
    settings = Settings(prometheus_url=sim_dataset.prom.url, step=STEP)
    client = PrometheusClient(settings)
    reqs, expected = [], {}
    for job in sim_dataset.jobs:
        start, end = math.ceil(job.start / STEP) * STEP, math.floor(job.end / STEP) * STEP
        reqs.append(WindowRequest(job.namespace, job.name, start, end))
        expected[(job.namespace, job.name)] = (job, job.to_window(STEP, start, end))
    got = fetch_windows(client, reqs, settings)
    return [(job, sim, got[key]) for key, (job, sim) in expected.items()]


def test_same_pods_nodes_and_gpus(pairs: list[tuple[Any, Any, Any]]) -> None:
    for job, sim, got in pairs:
        assert [p.pod for p in got.pods] == [p.pod for p in sim.pods], job.name
        np.testing.assert_array_equal(got.timestamps, sim.timestamps)
        for s, g in zip(sim.pods, got.pods, strict=True):
            assert (g.node, g.gpu_count, g.gpu_model) == (s.node, s.gpu_count, s.gpu_model), job.name
            if job.params.env.ksm:  # neighbours are only visible through kube-state-metrics
                assert g.co_located_pods == s.co_located_pods, job.name


def test_same_families_signals_and_coverage(pairs: list[tuple[Any, Any, Any]]) -> None:
    for job, sim, got in pairs:
        assert got.quality.families == sim.quality.families, job.name
        assert got.quality.coverage == pytest.approx(sim.quality.coverage, abs=0.02), job.name
        assert got.quality.scrape_interval == pytest.approx(job.params.scrape_interval, rel=0.05), job.name
        for s, g in zip(sim.pods, got.pods, strict=True):
            provided = {n for n, v in s.signals.items() if np.isfinite(v).any()}
            assert set(g.signals) == provided, (job.name, set(g.signals) ^ provided)


def test_gauges_agree_sample_for_sample(pairs: list[tuple[Any, Any, Any]]) -> None:
    checked = 0
    for job, sim, got in pairs:
        for s, g in zip(sim.pods, got.pods, strict=True):
            for name in GAUGES & set(g.signals):
                a, b = s.signals[name], g.signals[name]
                both = np.isfinite(a) & np.isfinite(b)
                np.testing.assert_allclose(b[both], a[both], rtol=1e-6, atol=1e-9, err_msg=f"{job.name} {name}")
                # gaps (missed scrapes, exporter outages) stay gaps
                assert (np.isfinite(a) != np.isfinite(b)).sum() <= 1, (job.name, name)
                checked += int(both.sum())
    assert checked > 1000


def _steady(values: np.ndarray, skip: int) -> np.ndarray:
    """Mask of samples preceded by at least `skip` finite samples (the rate range is full)."""
    run, out = 0, np.zeros(values.shape, dtype=bool)
    for i, finite in enumerate(np.isfinite(values)):
        run = run + 1 if finite else 0
        out[i] = run > skip
    return out


def test_rates_agree_on_average(pairs: list[tuple[Any, Any, Any]]) -> None:
    checked = 0
    for job, sim, got in pairs:
        skip = math.ceil(cat.rate_range(STEP, job.params.scrape_interval) / STEP) + 1
        for s, g in zip(sim.pods, got.pods, strict=True):
            for name in set(g.signals) - GAUGES:
                a, b = s.signals[name], g.signals[name]
                mask = _steady(b, skip) & np.isfinite(a)
                if mask.sum() < 5:
                    continue
                ma, mb = float(a[mask].mean()), float(b[mask].mean())
                unit = SIGNALS[name].unit
                slack = NOISE_FLOOR.get(unit, 0.0)
                # event rates (major faults, reads) are Poisson-noisy: windows of different width differ more
                rel = 0.3 if unit == "1/s" else 0.15
                assert abs(ma - mb) <= rel * max(abs(ma), abs(mb)) + slack, (job.name, g.pod, name, ma, mb)
                checked += 1
    assert checked > 100
