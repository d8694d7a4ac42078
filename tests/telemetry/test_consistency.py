"""Windows read back through a real Prometheus match the simulator's own windows for the same jobs.

The simulator writes every exporter's series as OpenMetrics (promtool-backfilled into Prometheus)
and also computes each job's signals directly (``SimulatedJob.to_window``). Agreement proves that
the catalog's PromQL computes the signals as contract/signals.py defines them: the right metrics,
labels, joins, unit conversions and aggregations over GPUs, containers, devices and nodes.

Both sides follow the sampling rules of contract/sampling.py (the simulator computes Prometheus's
rate() and last_over_time() itself, over the ranges the data layer asks for), so every signal must
agree sample for sample, from the window's first timestamp on: gauges exactly, counter rates and
their ratios to floating-point rounding (1e-9 relative), with the same gaps. The one known exception
is listed where it is allowed.

The rules themselves are checked against the real Prometheus on hand-made series whose samples sit
on range edges, restart from zero, start inside a range and stop for a while.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from bottleneck_operator.contract.sampling import counter_rate, gauge_window, last_sample
from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry import PrometheusClient, WindowRequest, fetch_windows
from bottleneck_operator.telemetry.plan import selectors as cat
from bottleneck_operator.telemetry.plan.names import escape_regex

pytestmark = pytest.mark.prometheus
STEP = 30.0
GAUGES = {
    "gpu_util", "mem_copy_util", "fb_used_frac", "power_w", "sm_clock_mhz", "gr_engine_active", "tensor_active",
    "dram_active", "pcie_tx_bps", "pcie_rx_bps", "sm_active", "sm_occupancy", "nvlink_tx_bps", "nvlink_rx_bps",
    "mem_working_set_bytes", "mem_limit_bytes", "cpu_limit_cores", "node_cpus", "node_mem_avail_frac",
    "node_swap_used_frac", "sc_procs_running", "sc_procs_iowait", "fp32_active", "fp16_active", "power_limit_w",
    "clock_slowdown_frac",
}  # fmt: skip
# Counter rates: floating-point rounding only (sums of per-CPU rates against the rate of their sum,
# reset corrections added in another order); 1e-9 absolute for shares close to zero.
RATE_RTOL, RATE_ATOL = 1e-9, 1e-9


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
    got = fetch_windows(client, reqs, settings.labels, step=settings.analysis.step)
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
        assert got.quality.coverage == pytest.approx(sim.quality.coverage, abs=1e-9), job.name
        # Exact for Jobs without gaps; with an exporter outage in a Job born inside the probe's window
        # the instant-selector estimate is an upper bound that reads a little high (discovery.py).
        true = job.params.scrape_interval
        tolerance = 0.05 if sim.quality.coverage >= 0.999 else 0.15
        assert true * 0.99 <= got.quality.scrape_interval <= true * (1 + tolerance), job.name
        for s, g in zip(sim.pods, got.pods, strict=True):
            provided = {n for n, v in s.signals.items() if np.isfinite(v).any()}
            assert set(g.signals) == provided, (job.name, set(g.signals) ^ provided)


def _gaps_must_match(job: Any, sim_values: np.ndarray, got_values: np.ndarray) -> None:
    """Same gaps on both sides, but for the data layer's fallback for pods found by name prefix.

    A Job without kube_pod_info (no kube-state-metrics) has its pods found by the "<job>-" prefix;
    the data layer then also asks for that prefix with the default 30 s interval's range, and where
    the pod's own (shorter) range holds under two samples, the default range's rate fills the gap.
    """
    differ = np.isfinite(sim_values) != np.isfinite(got_values)
    if job.params.env.ksm:
        assert not differ.any(), np.flatnonzero(differ)
    else:
        assert not (differ & np.isfinite(sim_values)).any(), np.flatnonzero(differ)


def test_gauges_agree_sample_for_sample(pairs: list[tuple[Any, Any, Any]]) -> None:
    checked, names = 0, set()
    for job, sim, got in pairs:
        for s, g in zip(sim.pods, got.pods, strict=True):
            for name in GAUGES & set(g.signals):
                a, b = s.signals[name], g.signals[name]
                both = np.isfinite(a) & np.isfinite(b)
                np.testing.assert_allclose(b[both], a[both], rtol=1e-12, atol=0, err_msg=f"{job.name} {name}")
                # gaps (missed scrapes, exporter outages) stay gaps, and only they
                assert (np.isfinite(a) == np.isfinite(b)).all(), (job.name, name)
                checked += int(both.sum())
                names.add(name)
    assert checked > 1000
    # the optional DCGM fields too: the pipes, the limit, and the reasons under either name
    assert {"fp32_active", "fp16_active", "power_limit_w", "clock_slowdown_frac"} <= names


def test_rates_agree_sample_for_sample(pairs: list[tuple[Any, Any, Any]]) -> None:
    checked, names = 0, set()
    for job, sim, got in pairs:
        for s, g in zip(sim.pods, got.pods, strict=True):
            for name in set(g.signals) - GAUGES:
                a, b = s.signals[name], g.signals[name]
                both = np.isfinite(a) & np.isfinite(b)
                np.testing.assert_allclose(
                    b[both], a[both], rtol=RATE_RTOL, atol=RATE_ATOL, err_msg=f"{job.name} {g.pod} {name}"
                )
                _gaps_must_match(job, a, b)
                checked += int(both.sum())
                names.add(name)
    assert checked > 5000
    # every kind of counter signal took part: pod, GPU, node, sidecar, and ratios of rates
    assert {"cpu_cores", "nvlink_total_bps", "node_net_rx_bps", "node_cpu_iowait_frac", "sc_psi_io_some"} <= names
    assert {"cpu_throttled_frac", "sc_throttled_frac"} <= names
    assert {"ib_rx_bps", "ib_tx_bps", "sc_swapin_ps", "sc_oom_kills"} <= names  # RDMA ports summed, swap, OOM
    assert {"sc_net_rx_bps", "sc_net_tx_bps"} <= names  # the pod's own network bytes


# --- the sampling rules against Prometheus itself -------------------------------------------

EDGE_T0 = 1767225600.0  # on every range edge used below


def _edge_series() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Counters and a gauge (sample times, values) built to hit the corner cases of rate()."""
    t15 = EDGE_T0 + np.arange(0.0, 900.0, 15.0)
    rng = np.random.default_rng(11)
    jitter = t15 + np.round(rng.uniform(-2.0, 2.0, t15.size), 3)
    steady = 5e5 + np.cumsum(rng.uniform(0.0, 300.0, t15.size))
    resets = steady.copy()
    resets[20:] -= resets[19] - 7.0  # restarts (at 7, not 0) ...
    resets[41:] -= resets[40]  # ... twice, the second time from exactly 0
    late = 100.0 + 10.0 * np.arange(t15.size - 6)  # starts at 100 inside the ranges below
    gappy = np.ones(t15.size, dtype=bool)
    gappy[[10, 11, 12, 13, 30, 31, 50]] = False  # a 75 s outage, a 45 s one, a single miss
    return {
        "steady": (t15, steady),  # samples exactly on the edges of every range
        "jitter": (jitter, steady),
        "resets": (t15, resets),
        "late": (t15[6:], late),
        "gappy": (t15[gappy], steady[gappy]),
        "short": (t15[:3], steady[:3]),  # ends early: two samples, then one, then none in range
    }


def _edge_openmetrics(series: dict[str, tuple[np.ndarray, np.ndarray]]) -> str:
    lines = ["# HELP edge A counter with awkward samples.", "# TYPE edge counter"]
    for name, (t, v) in series.items():
        lines += [f'edge_total{{case="{name}"}} {x!r} {ts:.3f}' for ts, x in zip(t.tolist(), v.tolist(), strict=True)]
    lines += ["# HELP edge_gauge The same values read as a gauge.", "# TYPE edge_gauge gauge"]
    for name, (t, v) in series.items():
        lines += [f'edge_gauge{{case="{name}"}} {x!r} {ts:.3f}' for ts, x in zip(t.tolist(), v.tolist(), strict=True)]
    return "\n".join([*lines, "# EOF", ""])


def _on_grid(values: list[Any], at: np.ndarray) -> np.ndarray:
    """A range answer's ``[[t, "v"], ...]`` on the evaluation times ``at`` (NaN where absent)."""
    out = np.full(at.size, np.nan)
    for ts, val in values:
        out[np.searchsorted(at, float(ts) - 1e-3)] = float(val)
    return out


def test_sampling_rules_match_prometheus_on_edge_cases(start_prometheus: Any) -> None:
    series = _edge_series()
    prom = start_prometheus(_edge_openmetrics(series))
    client = PrometheusClient(Settings(prometheus_url=prom.url))
    at = EDGE_T0 + np.arange(0.0, 960.0, 15.0)  # every sample time, and past the end
    compared = 0
    for seconds in (30.0, 45.0, 60.0, 61.5, 120.0, 240.0):
        expr = f"rate(edge_total[{cat.duration(seconds)}])"
        answer = {r["metric"]["case"]: r["values"] for r in client.query_range(expr, at[0], at[-1], 15.0)}
        for name, (t, v) in series.items():
            ours = counter_rate(t, v, at, seconds)
            theirs = _on_grid(answer.get(name, []), at)
            assert (np.isfinite(ours) == np.isfinite(theirs)).all(), (name, seconds)
            np.testing.assert_allclose(ours, theirs, rtol=RATE_RTOL, equal_nan=True, err_msg=f"{name} {seconds}")
            compared += int(np.isfinite(ours).sum())
    for step, si in ((15.0, 15.0), (30.0, 15.0), (30.0, 45.0)):
        seconds = gauge_window(step, si)
        expr = f"last_over_time(edge_gauge[{cat.duration(seconds)}])"
        answer = {r["metric"]["case"]: r["values"] for r in client.query_range(expr, at[0], at[-1], 15.0)}
        for name, (t, v) in series.items():
            ours = last_sample(t, v, at, seconds)
            theirs = _on_grid(answer.get(name, []), at)
            np.testing.assert_array_equal(ours, theirs, err_msg=f"{name} {seconds}")
    assert compared > 1000


class _RecordingClient(PrometheusClient):
    """A real client that remembers the instant queries it sent (answers untouched)."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.instant: list[str] = []

    def query(self, promql: str, at: float) -> Any:
        self.instant.append(promql)
        return super().query(promql, at)


def test_kept_scrape_intervals_change_no_window(sim_dataset: Any) -> None:
    """A second pass reusing the first one's interval estimates probes less and reads the same windows."""
    from bottleneck_operator.telemetry.fetch.store import IntervalCache

    settings = Settings(prometheus_url=sim_dataset.prom.url, step=STEP)
    client = _RecordingClient(settings)
    reqs = [
        WindowRequest(j.namespace, j.name, math.ceil(j.start / STEP) * STEP, math.floor(j.end / STEP) * STEP)
        for j in sim_dataset.jobs
    ]
    cache = IntervalCache()
    first = fetch_windows(client, reqs, settings.labels, step=settings.analysis.step, intervals=cache)
    assert len(cache) > 0
    # Pods kube-state-metrics places on a node (their Jobs ran long enough) are probed once only.
    # A Job with several pods is selected by its "<job>-.+" prefix rather than by each pod's name.
    placed = [
        (p.pod, escape_regex(j.name) + "-.+")
        for j in sim_dataset.jobs
        if j.params.env.ksm
        for p in first[(j.namespace, j.name)].pods
    ]
    assert placed
    assert all(any(pod in q or prefix in q for q in client.instant) for pod, prefix in placed)
    client.instant.clear()
    second = fetch_windows(client, reqs, settings.labels, step=settings.analysis.step, intervals=cache)
    assert not [pod for pod, prefix in placed if any(pod in q or prefix in q for q in client.instant)]
    for key, a in first.items():
        b = second[key]
        assert [p.pod for p in a.pods] == [p.pod for p in b.pods]
        assert a.quality.scrape_interval == b.quality.scrape_interval, key
        for pa, pb in zip(a.pods, b.pods, strict=True):
            assert set(pa.signals) == set(pb.signals), key
            for name, values in pa.signals.items():
                np.testing.assert_array_equal(values, pb.signals[name], err_msg=f"{key} {name}")
