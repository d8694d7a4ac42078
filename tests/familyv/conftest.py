"""Shared family V jobs: generated once per session, so the tests stay fast."""

from __future__ import annotations

import pytest

from bottleneck_operator_dev.familyv import FamilyVJob, generate_family_v

START = 1_700_000_000.0


@pytest.fixture(scope="session")
def jobs() -> list[FamilyVJob]:
    return generate_family_v(seed=7, n=80, start=START)
