"""The headroom's bound: 1/(1 - share) of a measured wait, else 1/busy, and where telemetry stops resolving it."""

from __future__ import annotations

import pytest

from bottleneck_operator.analysis.explain.account import StepAccount, Wait
from bottleneck_operator.analysis.explain.headroom import estimate_headroom
from bottleneck_operator.analysis.features.levels import WAITED_ON
from bottleneck_operator.contract.verdict import Bottleneck

B = Bottleneck


def io_wait(share: float, busy: float = 0.5) -> StepAccount:
    return StepAccount(busy, {B.IO: Wait(share, "the pod's io.pressure", "sc_psi_io_some")})


def test_the_bound_is_what_is_left_of_the_step_read_at_xprofs_bar() -> None:
    """What remains of the step is read as no less than 5 % (XProf's bar): x20 at most as a figure."""
    assert io_wait(0.6).speedup(B.IO) == pytest.approx(2.5)
    assert io_wait(0.97).speedup(B.IO) == pytest.approx(1 / WAITED_ON)
    assert StepAccount(0.02, {}).ceiling() == pytest.approx(1 / WAITED_ON)
    assert StepAccount(0.25, {}).ceiling() == pytest.approx(4.0)


def test_a_bound_at_the_bar_is_said_as_or_more() -> None:
    """A wait of 97 % leaves 3 % of the step, under what telemetry resolves: x20 is a floor, not a ceiling."""
    capped = estimate_headroom(B.IO, io_wait(0.97))
    assert capped is not None and capped.high == pytest.approx(20.0)
    assert "x20 or more" in capped.basis and "at most" not in capped.basis
    measured = estimate_headroom(B.IO, io_wait(0.6))
    assert measured is not None and measured.low == 1.0 and measured.high == pytest.approx(2.5)
    assert "at most x2.5" in measured.basis and "or more" not in measured.basis


def test_the_bare_ceiling_says_so_and_hits_the_same_bar() -> None:
    bare = estimate_headroom(B.CPU, StepAccount(0.25, {}))
    assert bare is not None and bare.high == pytest.approx(4.0) and bare.basis.startswith("bare ceiling")
    idle = estimate_headroom(B.CPU, StepAccount(0.01, {}))
    assert idle is not None and idle.high == pytest.approx(20.0) and "x20 or more" in idle.basis
