"""The label layouts real stacks store telemetry in, each read from a real Prometheus with no setting changed.

The same simulated Jobs are written once as the project's own Prometheus stores them (``sim_dataset``)
and once per layout of :mod:`bottleneck_operator_dev.simulation.layouts`, each backfilled into a
Prometheus of its own. Reading a layout must give the same windows (signal for signal) and the same
verdicts as the project's layout, and say in data quality which layout it found.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator.contract.window import JobWindow
from bottleneck_operator.pipeline import Analyzer, JobRequest
from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry import InvalidName, PrometheusClient, WindowRequest, fetch_windows
from bottleneck_operator.telemetry.fetch.store import LayoutCache
from bottleneck_operator.telemetry.plan.catalog import KUBELET_PSI
from bottleneck_operator.telemetry.plan.names import add_matchers, validate_matchers
from bottleneck_operator_dev.simulation import generate_jobs
from bottleneck_operator_dev.simulation.layouts import kernel_hostname, layout_series, write_layout

from .same import favoured

pytestmark = pytest.mark.prometheus
STEP = 30.0
PSI_ATOL = 0.03  # on a window's mean pressure (0..1): the largest seen was 0.02


def _serve(jobs: list[Any], layout: str, start_prometheus: Any, tmp: Path) -> Any:
    path = tmp / f"{layout}.om"
    with path.open("w") as out:
        write_layout(jobs, out, layout)
    return start_prometheus(path)


@pytest.fixture(scope="module")
def kps(sim_jobs: list[Any], start_prometheus: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    return _serve(sim_jobs, "kube-prometheus-stack", start_prometheus, tmp_path_factory.mktemp("kps"))


@pytest.fixture(scope="module")
def multi(sim_jobs: list[Any], start_prometheus: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    return _serve(sim_jobs, "multi-cluster", start_prometheus, tmp_path_factory.mktemp("multi"))


def _requests(jobs: list[Any]) -> list[WindowRequest]:
    return [WindowRequest(j.namespace, j.name, (j.start // STEP + 1) * STEP, (j.end // STEP) * STEP) for j in jobs]


def _windows(url: str, jobs: list[Any], **settings: Any) -> dict[tuple[str, str], JobWindow]:
    s = Settings(prometheus_url=url, step=STEP, **settings)
    return fetch_windows(PrometheusClient(s), _requests(jobs), s.labels, step=s.analysis.step)


def _verdicts(url: str, jobs: list[Any], **settings: Any) -> list[Bottleneck]:
    analyzer = Analyzer.from_settings(Settings(prometheus_url=url, **settings))
    reqs = [JobRequest(namespace=j.namespace, job=j.name, start=j.start, end=j.end) for j in jobs]
    return [favoured(r.verdict) for r in analyzer.analyze_jobs(reqs, phase="Completed")]


PSI = frozenset(KUBELET_PSI)


def _assert_same(
    got: JobWindow, want: JobWindow, scale: float = 1.0, relaxed_limit: bool = False, kubelet_psi: bool = False
) -> None:
    assert [p.pod for p in got.pods] == [p.pod for p in want.pods]
    for g, w in zip(got.pods, want.pods, strict=True):
        assert (g.node, g.gpu_count, g.gpu_model) == (w.node, w.gpu_count, w.gpu_model), g.pod
        if kubelet_psi:
            # The kubelet's PSI gives every pod the pressure signals, with or without the collector.
            assert set(g.signals) >= PSI, g.pod
            _assert_psi_close(g.signals, w.signals)
        skip = PSI if kubelet_psi else frozenset()
        assert set(g.signals) - skip == set(w.signals) - skip, (g.pod, set(g.signals) ^ set(w.signals))
        for name, values in w.signals.items():
            if name in skip:
                continue
            if name == "mem_limit_bytes" and relaxed_limit:
                # Without container_spec_* the limit comes from kube-state-metrics (exact) or, without
                # it, from the collector's pod cgroup memory.max (the collector's own 64Mi included),
                # on those exporters' samples rather than cAdvisor's.
                mine, theirs = g.signals[name], values
                assert np.isfinite(mine[np.isfinite(theirs)]).all(), g.pod
                both = np.isfinite(mine) & np.isfinite(theirs)
                np.testing.assert_allclose(mine[both], theirs[both], rtol=0.01, err_msg=name)
                continue
            np.testing.assert_allclose(g.signals[name], values * scale, rtol=1e-9, atol=1e-12, err_msg=name)


def _assert_psi_close(kubelet: dict[str, np.ndarray], collector: dict[str, np.ndarray]) -> None:
    """Where the collector ran too, the kubelet's PSI is the same pressure, read at the kubelet's scrapes.

    The two exporters sample the same counters at different instants, so single rates of a bursty
    pressure differ; over the window they agree. The simulator drops stretches of one exporter's
    scrapes (an exporter gap), so the two overlap on most, not all, of the window.
    """
    for name in PSI & set(collector):
        both = np.isfinite(kubelet[name]) & np.isfinite(collector[name])
        assert both.mean() > 0.5, name
        assert kubelet[name][both].mean() == pytest.approx(collector[name][both].mean(), abs=PSI_ATOL), name


def test_kube_prometheus_stack_reads_like_the_project_layout(kps: Any, sim_dataset: Any) -> None:
    got = _windows(kps.url, sim_dataset.jobs)
    want = _windows(sim_dataset.prom.url, sim_dataset.jobs)
    for key, window in want.items():
        assert window.pods, key
        _assert_same(got[key], window, relaxed_limit=True, kubelet_psi=True)
        assert got[key].quality.layout == {"dcgm": "exported-labels", "node": "pod-join", "cadvisor": "no-spec"}
        assert window.quality.layout == {"dcgm": "pod-labels", "node": "uname-join", "cadvisor": "with-spec"}
        assert "label layout read: dcgm exported-labels, node pod-join, cadvisor no-spec" in got[key].quality.notes


def test_kube_prometheus_stack_gets_the_same_verdicts(kps: Any, sim_dataset: Any) -> None:
    want = _verdicts(sim_dataset.prom.url, sim_dataset.jobs)
    assert _verdicts(kps.url, sim_dataset.jobs) == want
    assert len(set(want)) >= 4  # the Jobs cover most classes: agreement is not agreement on Unknown


def test_the_simulated_stack_is_what_kube_prometheus_stack_stores(sim_jobs: list[Any]) -> None:
    job = sim_jobs[0]
    series = list(layout_series(job, "kube-prometheus-stack"))
    names = {s.name for s in series}
    assert not any(n.startswith("container_spec_") for n in names)
    dcgm = [s for s in series if s.exporter == "dcgm" and s.labels.get("exported_pod")]
    assert dcgm and all(s.scrape["pod"].startswith("nvidia-dcgm-exporter-") for s in dcgm)
    assert all("hostname" in s.labels and "Hostname" not in s.labels for s in dcgm)
    paths = {s.scrape.get("metrics_path") for s in series if s.name == "container_cpu_usage_seconds_total"}
    assert paths == {"/metrics/cadvisor", "/metrics/resource"}
    # The kubelet's per-cgroup PSI (Kubernetes >= 1.34): the pod-level cgroup and the trainer's container.
    psi = {s.name for s in series if s.name.startswith("container_pressure_")}
    assert psi == {
        f"container_pressure_{r}_{k}_seconds_total" for r in ("cpu", "io", "memory") for k in ("waiting", "stalled")
    }
    assert {s.labels["container"] for s in series if s.name in psi} == {"", "trainer"}
    assert not any(s.name in psi for s in layout_series(job, "project"))
    uname = [s for s in series if s.name == "node_uname_info"]
    assert uname and all(s.labels["nodename"] not in {nd.name for nd in job.nodes} for s in uname)
    assert kernel_hostname("gpu-node-1", "10.0.0.1") != "gpu-node-1"


def test_the_configured_labels_alone_miss_the_kube_prometheus_stack_layout(kps: Any, sim_dataset: Any) -> None:
    # Without detection the GPUs and nodes are not found: what every default install saw before.
    got = _windows(kps.url, sim_dataset.jobs[:2], label_layout_detection=False)
    for window in got.values():
        assert window.pods
        assert not any(p.gpu_count for p in window.pods)
        assert not any("node_cpus" in p.signals for p in window.pods)


def test_pods_of_the_same_name_in_two_clusters_never_merge(multi: Any, sim_dataset: Any) -> None:
    want = _windows(sim_dataset.prom.url, sim_dataset.jobs)
    a = _windows(multi.url, sim_dataset.jobs, selector_matchers=['cluster="a"'])
    b = _windows(multi.url, sim_dataset.jobs, selector_matchers=['cluster = "b"'])
    for key, window in want.items():
        _assert_same(a[key], window)
        for pa, pb in zip(a[key].pods, b[key].pods, strict=True):
            # cluster b holds every sample halved: its rates and gauges are half of a's
            np.testing.assert_allclose(pb.signals["cpu_cores"], pa.signals["cpu_cores"] * 0.5, rtol=1e-9)
            np.testing.assert_allclose(pb.signals["power_w"], pa.signals["power_w"] * 0.5, rtol=1e-9)


def test_multi_cluster_verdicts_per_cluster(multi: Any, sim_dataset: Any) -> None:
    want = _verdicts(sim_dataset.prom.url, sim_dataset.jobs)
    assert _verdicts(multi.url, sim_dataset.jobs, selector_matchers=['cluster="a"']) == want


def test_implausible_nvlink_is_missing_not_zero(start_prometheus: Any, tmp_path: Path) -> None:
    # An Interconnect job whose GPUs move more than 10 GB/s over NVLink (picked from its simulated window).
    drawn = generate_jobs(0, 16, start=1767225600.0, duration=600.0, classes=[Bottleneck.INTERCONNECT],
                          dcgm_fieldset="full")  # fmt: skip
    busy = [
        j for j in drawn
        if np.nanmedian(j.to_window().pods[0].signals.get("nvlink_total_bps", np.array([np.nan]))) > 1e10
    ]  # fmt: skip
    assert busy, "no simulated Interconnect job with NVLink traffic among those drawn"
    jobs = busy[:1]
    good = _windows(_serve(jobs, "project", start_prometheus, tmp_path).url, jobs)
    bad = _windows(_serve(jobs, "nvlink-implausible", start_prometheus, tmp_path).url, jobs)
    key = (jobs[0].namespace, jobs[0].name)
    assert np.nanmedian(good[key].pods[0].signals["nvlink_total_bps"]) > 1e10
    assert "nvlink_tx_bps" in good[key].pods[0].signals
    pod = bad[key].pods[0]
    assert not np.isfinite(pod.signals["nvlink_total_bps"]).any()
    assert "nvlink_tx_bps" not in pod.signals and "nvlink_rx_bps" not in pod.signals
    notes = " ".join(bad[key].quality.notes)
    assert "above any NVLink's capacity" in notes and "NVLink PROF fields read 0" in notes
    assert not any("NVLink" in n for n in good[key].quality.notes)


def test_a_family_that_comes_back_empty_is_detected_again(kps: Any, sim_dataset: Any) -> None:
    settings = Settings(prometheus_url=kps.url, step=STEP)
    client = PrometheusClient(settings)
    cache = LayoutCache()
    mapping, layout = cache.resolve(client, settings.labels, sim_dataset.end)
    assert mapping.dcgm_pod_label == "exported_pod" and mapping.dcgm_hostname_label == "hostname"
    assert mapping.node_exporter_join == "pod"
    before = client.queries_issued
    cache.resolve(client, settings.labels, sim_dataset.end)
    assert client.queries_issued == before  # kept
    # A pass that found no GPU series in a layout that has them: the exporter changed, ask again.
    wrong = settings.labels.model_copy(update={"label_layout_detection": False})
    windows = fetch_windows(client, _requests(sim_dataset.jobs[:1]), wrong, step=STEP)
    assert not any(p.gpu_count for w in windows.values() for p in w.pods)
    cache.check_pass(client, settings.labels, layout, windows.values())
    before = client.queries_issued
    assert cache.resolve(client, settings.labels, sim_dataset.end)[1].dcgm == "exported-labels"
    assert client.queries_issued == before + 1  # detected again


def test_extra_matchers_go_into_every_selector_and_nowhere_else() -> None:
    expr = 'sum(rate(a{x="{b}"}[5m])) or label_replace(b{}, "l", "v{1}", "", "") or c{y=~"\\\\x{10FFFF}"}'
    got = add_matchers(expr, ['cluster="a"'])
    assert got == (
        'sum(rate(a{cluster="a",x="{b}"}[5m])) or label_replace(b{cluster="a"}, "l", "v{1}", "", "") '
        'or c{cluster="a",y=~"\\\\x{10FFFF}"}'
    )
    assert add_matchers(expr, []) == expr
    assert validate_matchers("s", [' env =~ "prod|stage" ']) == ('env=~"prod|stage"',)
    for bad in ['cluster="a"}', "cluster=a", 'cluster="a",env="b"', '1x="a"']:
        with pytest.raises(InvalidName, match="not one label matcher"):
            validate_matchers("selector_matchers", [bad])


def test_a_bad_matcher_setting_is_refused_before_any_query(bad_server: Any) -> None:
    settings = Settings(prometheus_url=bad_server.refused_url, selector_matchers=['cluster="a"} or up{'])
    client = PrometheusClient(settings)
    with pytest.raises(InvalidName, match="selector_matchers"):
        fetch_windows(client, [WindowRequest("ml", "x", 0.0, 600.0)], settings.labels, step=settings.analysis.step)
    assert client.queries_issued == 0
