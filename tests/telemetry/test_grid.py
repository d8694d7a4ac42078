"""The one time grid: window grids, query grids, segments, and the columns of a decoded answer."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry import InvalidWindow, PrometheusClient
from bottleneck_operator.telemetry.plan.grid import Grid, format_ms, segments

T0 = 1767225600.0
STEP_MS = 30_000


@st.composite
def windows(draw: st.DrawFn) -> tuple[float, float, float]:
    """(start, end, step) in seconds at any resolution; at most about 2,000 steps long."""
    step = draw(st.floats(0.001, 900.0))
    start = draw(st.floats(T0 - 86400.0, T0 + 86400.0))
    span = draw(st.floats(0.0, 2000.0 * step))
    return start, start + span, step


@pytest.fixture(scope="module")
def client(basic_prometheus: Any) -> PrometheusClient:
    return PrometheusClient(Settings(prometheus_url=basic_prometheus.url, prometheus_retries=0))


@pytest.mark.prometheus
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(window=windows(), on_the_step=st.booleans())
@example(window=(T0, T0 + 10, 1.001), on_the_step=False)  # sent as float seconds, 1.001 became 1000 ms
@example(window=(T0 + 15, T0 + 600, 30.0), on_the_step=False)  # half a step off the multiples
def test_decoded_columns_are_the_grid_timestamps(
    client: PrometheusClient, window: tuple[float, float, float], on_the_step: bool
) -> None:
    # time() is the evaluation time: the value in column k says which instant Prometheus evaluated.
    grid = Grid.within(*window) if on_the_step else Grid.query(*window)
    assume(grid.size > 0)
    matrix = client.query_matrix("vector(time())", grid)
    assert matrix.columns == grid.size
    np.testing.assert_array_equal(matrix.row(0), grid.timestamps())


@given(window=windows())
def test_a_window_grid_holds_exactly_the_multiples_of_the_step_inside(window: tuple[float, float, float]) -> None:
    start, end, step = window
    grid = Grid.within(start, end, step)
    first_ms, last_ms, step_ms = round(start * 1000), round(end * 1000), round(step * 1000)
    instants = [round(t * 1000) for t in grid.timestamps()]
    assert all(t % step_ms == 0 and first_ms <= t <= last_ms for t in instants)
    assert (grid.first - 1) * step_ms < first_ms  # no multiple of the step left out at either end
    assert (grid.last + 1) * step_ms > last_ms
    assert grid.step == step_ms / 1000


@given(window=windows())
def test_every_instant_is_its_own_column(window: tuple[float, float, float]) -> None:
    grid = Grid.query(*window)
    assert grid.columns(grid.timestamps()).tolist() == list(range(grid.size))
    assert grid.timestamps()[0] == grid.start and grid.timestamps()[-1] == grid.end


def test_a_grid_half_a_step_off_the_multiples_keeps_every_sample() -> None:
    # Rounding time / step here rounds half to even: every other sample landed in the wrong column.
    grid = Grid.query(T0 + 15, T0 + 165, 30)
    assert grid.size == 6
    assert grid.columns(T0 + 15 + 30.0 * np.arange(6)).tolist() == [0, 1, 2, 3, 4, 5]


def test_windows_between_two_steps_and_on_one_instant() -> None:
    assert Grid.within(T0 + 1, T0 + 29, 30).size == 0
    one = Grid.within(T0 + 300, T0 + 300, 30)
    assert one.size == 1 and one.start == T0 + 300
    # float noise below a millisecond does not move a window off its instant
    assert Grid.within(T0 + 300 + 1e-7, T0 + 300 - 1e-7, 30).size == 1


def test_parameters_are_exact_milliseconds() -> None:
    assert Grid.query(T0 + 0.5, T0 + 60, 30).params() == {"start": "1767225600.5", "end": "1767225630.5", "step": "30"}
    # a float step such as 1.001 is truncated by Prometheus to 1000 ms: send a duration instead
    assert Grid.query(T0, T0 + 10, 1.001).params()["step"] == "1001ms"
    assert format_ms(-1500) == "-1.5"


@pytest.mark.parametrize(("start", "end", "step"), [(T0, T0 - 1, 30), (float("nan"), T0, 30), (T0, T0, 0.0001)])
def test_invalid_ranges_are_refused(start: float, end: float, step: float) -> None:
    with pytest.raises(InvalidWindow):
        Grid.query(start, end, step)


@settings(max_examples=200)
@given(
    spans=st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 3000)), max_size=6),
    max_points=st.integers(1, 4000),
)
def test_segments_cover_every_window_once(spans: list[tuple[int, int]], max_points: int) -> None:
    grids = [Grid.indices(lo, lo + n - 1, STEP_MS) for lo, n in spans]
    covered: set[int] = set()
    previous = -1
    for seg in segments(grids, max_points):
        assert 0 < seg.size <= max_points and seg.step_ms == STEP_MS
        assert seg.first > previous  # sorted and disjoint
        previous = seg.last
        covered |= set(range(seg.first, seg.last + 1))
    assert all(set(range(g.first, g.last + 1)) <= covered for g in grids)


def test_overlapping_windows_are_one_segment() -> None:
    grids = [Grid.within(T0, T0 + 900, 30), Grid.within(T0 + 600, T0 + 1500, 30)]
    assert segments(grids) == [Grid.within(T0, T0 + 1500, 30)]
