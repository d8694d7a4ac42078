"""A small family shared by the tests (generation takes a second or two)."""

from __future__ import annotations

import pytest

from bottleneck_operator_dev.familyaa import FamilyAAJob, generate_family_aa

START = 1_700_000_000.0


@pytest.fixture(scope="session")
def family() -> list[FamilyAAJob]:
    return generate_family_aa(seed=3, n=60, start=START)
