"""Shared family G jobs for the tests: one draw, reused (well under a second)."""

from __future__ import annotations

import pytest

from bottleneck_operator_dev.familyg.design import Design
from bottleneck_operator_dev.familyg.family import FamilyGJob, build_job, class_plan
from bottleneck_operator_dev.familyg.scrape import Scrapes

FAMILY_START = 1_767_225_600.0  # 2026-01-01T00:00:00Z: an explicit time, never the clock
FAMILY_SEED = 20260101

Drawn = tuple[FamilyGJob, Design, dict[str, Scrapes]]


@pytest.fixture(scope="session")
def family_start() -> float:
    """The windows' first timestamp."""
    return FAMILY_START


@pytest.fixture(scope="session")
def drawn() -> list[Drawn]:
    """120 jobs with their designs and raw scrapes, drawn exactly as generate_family_g draws them."""
    plan = class_plan(FAMILY_SEED, 120)
    return [build_job(FAMILY_SEED, i, c, m, start=FAMILY_START, step=30.0) for i, (c, m) in enumerate(plan)]
