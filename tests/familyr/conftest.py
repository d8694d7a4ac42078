"""One small family-R draw shared by the tests of this folder (explicit times, never the clock)."""

from __future__ import annotations

import pytest

from bottleneck_operator_dev.familyr import FamilyRJob, generate_family_r

START = 1_700_000_000.0


@pytest.fixture(scope="session")
def family() -> list[FamilyRJob]:
    return generate_family_r(11, 60, start=START)
