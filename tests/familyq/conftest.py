"""One family Q draw shared by the tests of this folder (generating it takes well under a second)."""

from __future__ import annotations

import pytest

from bottleneck_operator_dev.familyq import FamilyQJob, generate_family_q

START = 1_760_000_000.0  # an explicit time: nothing here reads the clock


@pytest.fixture(scope="package")
def family() -> list[FamilyQJob]:
    return generate_family_q(7, 100, start=START)
