"""Shared, seeded job sets for the simulator tests (module-level caches keep the folder fast)."""

from __future__ import annotations

import pytest

from bottleneck_operator.contract.verdict import CLASSES
from bottleneck_operator_dev.simulation import SimulatedJob, generate_jobs

START = 1_700_000_000.0


@pytest.fixture(scope="session")
def many_jobs() -> list[SimulatedJob]:
    """Sixty jobs, twelve of each class, 20 minutes each."""
    return generate_jobs(123, 12 * len(CLASSES), start=START, duration=1200.0)


@pytest.fixture(scope="session")
def few_jobs() -> list[SimulatedJob]:
    """Five short jobs, one per class, small enough to render and backfill quickly."""
    return generate_jobs(7, len(CLASSES), start=START, duration=600.0, scrape_interval=30.0)
