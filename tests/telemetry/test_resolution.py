"""The bounded step: at most SERIES_POINTS points per series, the base step doubled no more than needed."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from bottleneck_operator.telemetry.plan.grid import SERIES_POINTS, bounded_step

T0 = 1767225600.0


@given(
    span=st.floats(min_value=0, max_value=400 * 86400, allow_nan=False),
    base=st.sampled_from([1.0, 15.0, 30.0, 60.0]),
)
def test_points_stay_under_the_cap_with_the_smallest_doubling(span: float, base: float) -> None:
    step = bounded_step(T0, T0 + span, base)
    factor = step / base
    assert factor >= 1 and math.log2(factor) == int(math.log2(factor))
    assert span / step <= SERIES_POINTS * (1 + 1e-12)
    if factor > 1:  # half the step would not fit
        assert span / (step / 2) > SERIES_POINTS


def test_short_windows_keep_the_base_step_and_a_four_day_run_is_coarser() -> None:
    assert bounded_step(T0, T0 + 900, 30.0) == 30.0
    assert bounded_step(T0, T0 + 2 * 3600, 30.0) == 30.0  # exactly the cap
    assert bounded_step(T0, T0 + 4 * 86400, 30.0) == 30.0 * 64  # 180 points
    assert bounded_step(T0, T0 - 5, 30.0) == 30.0  # an empty window
    assert bounded_step(T0, float("inf"), 30.0) == 30.0  # refused later, with its own error
