"""One small family for the whole folder: generating it once keeps the tests fast."""

from __future__ import annotations

import pytest

from bottleneck_operator_dev.familyh import FamilyHJob, generate_family_h

START = 1_750_000_000.0  # an explicit time: nothing here reads the clock


@pytest.fixture(scope="package")
def family() -> list[FamilyHJob]:
    return generate_family_h(11, 150, start=START)
