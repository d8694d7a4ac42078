"""job_lifetime on a real Prometheus: short Jobs over long look-backs, Jobs between coarse steps, gaps.

The data are written relative to the time the test runs (NOW), and every search passes NOW
explicitly, so nothing depends on the calendar.
"""

from __future__ import annotations

import math
import time
from typing import Any

import pytest

from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry import InvalidWindow, PrometheusClient, job_lifetime
from bottleneck_operator.telemetry.fetch.lifetime import MAX_INTERVALS, coarse_step

pytestmark = pytest.mark.prometheus

DAY = 86400
LONG = 400 * DAY
SCRAPE = 30
NOW = float(math.floor(time.time() / 60) * 60)  # whole minutes: every sample time below is exact
STEP = coarse_step(LONG)
# A 5-minute Job 200 days ago.
SHORT = (NOW - 200 * DAY, NOW - 200 * DAY + 300)
# Two minutes of pods, centred between two of the coarse search's evaluation times (NOW - k·STEP).
BETWEEN_MID = NOW - 1000 * STEP - STEP // 2
BETWEEN = (BETWEEN_MID - 60, BETWEEN_MID + 60)
# Pods that restarted: three lives with gaps of an hour and more, 3 days ago.
GAPPY_T0 = NOW - 3 * DAY + 17
GAPPY = [
    (GAPPY_T0, GAPPY_T0 + 600),
    (GAPPY_T0 + 3600, GAPPY_T0 + 4200),
    (GAPPY_T0 + 4 * 3600, GAPPY_T0 + 4 * 3600 + 90),
]
# A pod without kube-state-metrics' owner labels (found by name prefix), 40 days ago.
ORPHAN = (NOW - 40 * DAY + 5, NOW - 40 * DAY + 905)


def _series(out: list[str], pod: str, owner: str | None, span: tuple[float, float], namespace: str = "ml") -> None:
    owner_labels = f',created_by_kind="Job",created_by_name="{owner}"' if owner else ',created_by_name="<none>"'
    labels = f'{{namespace="{namespace}",pod="{pod}",node="n1"{owner_labels}}}'
    t = span[0]
    while t <= span[1]:
        out.append(f"kube_pod_info{labels} 1 {t:.0f}")
        t += SCRAPE


def _openmetrics() -> str:
    out = ["# TYPE kube_pod_info gauge"]
    _series(out, "short-job-x1", "short-job", SHORT)
    _series(out, "between-job-x1", "between-job", BETWEEN)
    for i, span in enumerate(GAPPY):
        _series(out, f"gappy-job-r{i}", "gappy-job", span)
    _series(out, "legacy-run-abc", None, ORPHAN)
    # A neighbour in another namespace with the same Job name: never part of the answer.
    _series(out, "short-job-zz", "short-job", (NOW - 10 * DAY, NOW - 10 * DAY + 60), namespace="other")
    out.append("# EOF")
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def client(start_prometheus: Any) -> PrometheusClient:
    prom = start_prometheus(_openmetrics())
    return PrometheusClient(Settings(prometheus_url=prom.url, prometheus_retries=0))


def test_the_coarse_step_is_long_here() -> None:
    # The premise of the next tests: the search's first query is far coarser than the Jobs are long.
    assert 10 * (SHORT[1] - SHORT[0]) < STEP
    assert math.ceil(LONG / STEP) <= MAX_INTERVALS


def test_a_five_minute_job_is_found_over_400_days(client: PrometheusClient) -> None:
    assert job_lifetime(client, "ml", "short-job", lookback=LONG, now=NOW) == SHORT


def test_a_job_between_two_coarse_steps_is_found(client: PrometheusClient) -> None:
    assert job_lifetime(client, "ml", "between-job", lookback=LONG, now=NOW) == BETWEEN


def test_restarted_pods_give_exact_first_and_last_samples(client: PrometheusClient) -> None:
    last_sample = GAPPY[-1][0] + SCRAPE * ((GAPPY[-1][1] - GAPPY[-1][0]) // SCRAPE)
    for lookback in (LONG, 30 * DAY, 4 * DAY):
        assert job_lifetime(client, "ml", "gappy-job", lookback=lookback, now=NOW) == (GAPPY[0][0], last_sample)


def test_an_ownerless_pod_is_found_by_its_name_prefix(client: PrometheusClient) -> None:
    assert job_lifetime(client, "ml", "legacy-run", lookback=LONG, now=NOW) == ORPHAN


def test_only_what_lies_inside_the_lookback_counts(client: PrometheusClient) -> None:
    # The search ends in the middle of the 5-minute Job: its last sample is the one at "now".
    middle = SHORT[0] + 150
    assert job_lifetime(client, "ml", "short-job", lookback=LONG, now=middle) == (SHORT[0], middle)
    # A look-back that ends before the Job started, or starts after it ended, finds nothing.
    assert job_lifetime(client, "ml", "short-job", lookback=LONG, now=SHORT[0] - 1) is None
    assert job_lifetime(client, "ml", "short-job", lookback=100 * DAY, now=NOW) is None
    assert job_lifetime(client, "ml", "no-such-job", lookback=LONG, now=NOW) is None


def test_invalid_lookback_is_refused(client: PrometheusClient) -> None:
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(InvalidWindow):
            job_lifetime(client, "ml", "short-job", lookback=bad, now=NOW)


def test_the_search_costs_a_bounded_number_of_queries(client: PrometheusClient) -> None:
    before = client.queries_issued
    job_lifetime(client, "ml", "gappy-job", lookback=LONG, now=NOW)
    assert client.queries_issued - before <= 5
