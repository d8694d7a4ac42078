"""Family M's jobs, drawn once per test session (generation is deterministic)."""

from __future__ import annotations

import pytest

from bottleneck_operator_dev.familym import FamilyMJob, generate_family_m

START = 1_700_000_000.0  # an explicit time: windows never depend on the clock


@pytest.fixture(scope="session")
def family_m() -> list[FamilyMJob]:
    return generate_family_m(11, 60, start=START)
