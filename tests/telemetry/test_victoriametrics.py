"""The same verdicts through VictoriaMetrics as through Prometheus, on the same simulated Jobs.

``sim_dataset`` (tests/conftest.py) is backfilled into a real Prometheus; the very same OpenMetrics
file is imported into Debian's VictoriaMetrics at its default query limits (16 KiB queries
included). Every Job must get the same class through both, and the class probabilities must agree
within ``PROB_TOLERANCE``.

Why the probabilities may differ at all: VictoriaMetrics' ``rate()`` does not extrapolate to the
range's edges and uses the last sample before the range as its first point, where Prometheus
extrapolates from the samples inside it (a counter's rate over a 4-scrape range differs by up to
about a quarter of a scrape interval's worth, i.e. a few per cent); its ``last_over_time`` and
staleness rules match Prometheus's on samples this regular. The features are means and
percentiles over a 15-minute window of such rates, so they move by a few per cent at most, and the
calibrated probabilities by less: 0.1 is several times what that can move, and far below what it
takes to change a class (the test's Jobs are decided by margins above that).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bottleneck_operator.pipeline import Analyzer, JobRequest
from bottleneck_operator.settings import Settings
from bottleneck_operator.simulation import localvm
from bottleneck_operator.simulation.localvm import LocalVictoriaMetrics, to_prometheus_text

pytestmark = pytest.mark.prometheus

PROB_TOLERANCE = 0.1


@pytest.fixture(scope="module")
def victoria(sim_dataset: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalVictoriaMetrics]:
    if not localvm.available():
        pytest.skip("Debian's victoria-metrics is not installed: run `make test` or scripts/ensure-system-deps.sh")
    vm = LocalVictoriaMetrics.from_openmetrics(sim_dataset.openmetrics, workdir=tmp_path_factory.mktemp("vm"))
    yield vm
    vm.stop()


def _analyze(url: str, jobs: list[Any]) -> dict[str, Any]:
    analyzer = Analyzer(Settings(prometheus_url=url))
    try:
        results = analyzer.analyze_jobs([JobRequest(j.namespace, j.name, j.start, j.end) for j in jobs])
    finally:
        analyzer.client.close()
    return {r.request.job: r.verdict for r in results}


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
    analyzer = Analyzer(Settings(prometheus_url=victoria.url))
    job = sim_dataset.jobs[0]
    rows = analyzer.client.query(f'count(kube_pod_info{{namespace="{job.namespace}"}})', job.end)
    analyzer.client.close()
    assert rows and float(rows[0]["value"][1]) >= len(job.pods)


def test_same_verdicts_through_victoriametrics(victoria: LocalVictoriaMetrics, sim_dataset: Any) -> None:
    jobs = sim_dataset.jobs
    through_prom = _analyze(sim_dataset.prom.url, jobs)
    through_vm = _analyze(victoria.url, jobs)
    assert set(through_vm) == {j.name for j in jobs}
    classes = {name: (v.bottleneck.value, through_vm[name].bottleneck.value) for name, v in through_prom.items()}
    assert all(p == v for p, v in classes.values()), f"(Prometheus, VictoriaMetrics) per Job: {classes}"
    # Not all Unknown: the comparison must be about real verdicts.
    assert sum(v.bottleneck.value != "Unknown" for v in through_prom.values()) >= len(jobs) // 2
    worst = 0.0
    for name, verdict in through_prom.items():
        other = through_vm[name].probabilities
        for cls, p in verdict.probabilities.items():
            worst = max(worst, abs(p - other.get(cls, 0.0)))
    assert worst <= PROB_TOLERANCE, f"largest probability difference {worst:.3f}"


def test_default_query_limit_holds(victoria: LocalVictoriaMetrics) -> None:
    """The server under test really enforces its default 16 KiB query limit (so the test above proves fit)."""
    from bottleneck_operator.telemetry.errors import QueryRejected

    analyzer = Analyzer(Settings(prometheus_url=victoria.url))
    long_query = "vector(1)" + " + vector(1)" * 1500
    with pytest.raises(QueryRejected) as info:
        analyzer.client.query(long_query, 1767225600.0)
    analyzer.client.close()
    assert "maxQueryLen" in str(info.value) or "too long" in str(info.value)


def test_log_is_written(victoria: LocalVictoriaMetrics) -> None:
    assert Path(victoria.log_path).is_file()
