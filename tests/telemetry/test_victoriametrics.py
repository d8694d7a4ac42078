"""The same verdicts through VictoriaMetrics as through Prometheus, on the same simulated Jobs.

``sim_dataset`` (tests/conftest.py) is backfilled into a real Prometheus; the very same OpenMetrics
file is imported into Debian's VictoriaMetrics at its default query limits (16 KiB queries
included). Every Job must get the same class through both (or, a hair either side of the abstain
threshold, lean to the same class), and the class probabilities must agree within the tolerances below.

Why the probabilities may differ at all, and the two tolerances: VictoriaMetrics' ``rate()`` does
not extrapolate to the range's edges and takes the last sample *before* the range as its first
point, where Prometheus extrapolates from the samples inside the range. On regular scrapes the two
agree to a fraction of one scrape interval over a range of four or more; the features (means and
percentiles over the window) move by a few per cent at most, and the calibrated probabilities of
a fully covered Job by a few hundredths (measured: at most 0.019; the temperature fitted across
worlds leaves probabilities less saturated, where the same feature change moves them more). Across a scrape outage they differ
more: at the gap's edges VictoriaMetrics' rate reaches back over the gap to the last sample before
it, where Prometheus has fewer than two samples in range (no value); the rates next to a gap then
differ by up to a fifth, and the probabilities of a Job with such gaps by up to 0.1 (measured:
0.0996 on the Job with a third of its window missing). ``GAP_TOLERANCE`` leaves room above that;
the classes must still be identical.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bottleneck_operator.pipeline import Analyzer, JobRequest
from bottleneck_operator.settings import Settings
from bottleneck_operator_dev.simulation import localvm
from bottleneck_operator_dev.simulation.localprom import LocalPrometheusError
from bottleneck_operator_dev.simulation.localvm import LocalVictoriaMetrics, to_prometheus_text

from .same import favoured

pytestmark = pytest.mark.prometheus

FULL_TOLERANCE = 0.03  # Jobs whose telemetry covers the whole window
GAP_TOLERANCE = 0.15  # Jobs with scrape outages
FULL = 0.99  # coverage from which a window counts as fully covered


@pytest.fixture(scope="module")
def victoria(sim_dataset: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalVictoriaMetrics]:
    if not localvm.available():
        pytest.skip("Debian's victoria-metrics is not installed: run `make test` or scripts/ensure-system-deps.sh")
    vm = LocalVictoriaMetrics.from_openmetrics(sim_dataset.openmetrics, workdir=tmp_path_factory.mktemp("vm"))
    yield vm
    vm.stop()


def _analyze(url: str, jobs: list[Any]) -> dict[str, Any]:
    analyzer = Analyzer.from_settings(Settings(prometheus_url=url))
    try:
        results = analyzer.analyze_jobs([JobRequest(j.namespace, j.name, j.start, j.end) for j in jobs])
    finally:
        analyzer.client.close()
    return {r.request.job: r for r in results}


def test_openmetrics_lines_become_prometheus_text_in_milliseconds() -> None:
    lines = [
        "# TYPE x gauge",
        'x{modelName="NVIDIA A100 80GB",pod="a"} 1.5 1767225600.25',
        "y_total 3 1767225630",
        "# EOF",
    ]
    assert list(to_prometheus_text(lines)) == [
        'x{modelName="NVIDIA A100 80GB",pod="a"} 1.5 1767225600250',
        "y_total 3 1767225630000",
    ]


def test_victoriametrics_serves_the_imported_samples(victoria: LocalVictoriaMetrics, sim_dataset: Any) -> None:
    analyzer = Analyzer.from_settings(Settings(prometheus_url=victoria.url))
    job = sim_dataset.jobs[0]
    rows = analyzer.client.query(f'count(kube_pod_info{{namespace="{job.namespace}"}})', job.end)
    analyzer.client.close()
    assert rows and float(rows[0]["value"][1]) >= len(job.pods)


def test_same_verdicts_through_victoriametrics(victoria: LocalVictoriaMetrics, sim_dataset: Any) -> None:
    jobs = sim_dataset.jobs
    through_prom = _analyze(sim_dataset.prom.url, jobs)
    through_vm = _analyze(victoria.url, jobs)
    assert set(through_vm) == {j.name for j in jobs}
    classes = {
        name: (favoured(r.verdict).value, favoured(through_vm[name].verdict).value) for name, r in through_prom.items()
    }
    assert all(p == v for p, v in classes.values()), f"(Prometheus, VictoriaMetrics) per Job: {classes}"
    # Not all Unknown: the comparison must be about real verdicts.
    assert sum(p != "Unknown" for p, _ in classes.values()) >= len(jobs) // 2
    covered = [r.window is not None and r.window.quality.coverage >= FULL for r in through_prom.values()]
    assert any(covered), "no fully covered Job: the tight tolerance would check nothing"
    for (name, result), full in zip(through_prom.items(), covered, strict=True):
        assert result.window is not None
        other = through_vm[name].verdict.probabilities
        diff = max(abs(p - other.get(cls, 0.0)) for cls, p in result.verdict.probabilities.items())
        tolerance = FULL_TOLERANCE if full else GAP_TOLERANCE
        assert diff <= tolerance, f"{name} (coverage {result.window.quality.coverage:.2f}): {diff:.4f}"


def test_default_query_limit_holds(victoria: LocalVictoriaMetrics) -> None:
    """The server under test really enforces its default 16 KiB query limit (so the test above proves fit)."""
    from bottleneck_operator.telemetry.errors import QueryRejected

    analyzer = Analyzer.from_settings(Settings(prometheus_url=victoria.url))
    long_query = "vector(1)" + " + vector(1)" * 1500
    with pytest.raises(QueryRejected) as info:
        analyzer.client.query(long_query, 1767225600.0)
    analyzer.client.close()
    assert "maxQueryLen" in str(info.value) or "too long" in str(info.value)


def test_log_is_written(victoria: LocalVictoriaMetrics) -> None:
    assert Path(victoria.log_path).is_file()


def test_an_import_waits_until_its_series_are_found(victoria: LocalVictoriaMetrics, sim_dataset: Any) -> None:
    # the import returned only once a search over the data found every series it imported (at least a
    # hundred); over the day before the data none is found, and the wait says so instead of letting a
    # query answer empty
    span, held = sim_dataset.end - sim_dataset.start, 100
    victoria._wait_searchable(sim_dataset.end, span, held)
    with pytest.raises(LocalPrometheusError, match="found 0 of the 100 imported series"):
        victoria._wait_searchable(sim_dataset.start - 86_400.0, span, held, timeout=0.3)
    # it counts the series it finds: some found is not enough while more were imported
    with pytest.raises(LocalPrometheusError, match=r"found [1-9]\d* of the 1000000 imported series"):
        victoria._wait_searchable(sim_dataset.end, span, 1_000_000, timeout=0.3)
