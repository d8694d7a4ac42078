from __future__ import annotations

import pytest

from bottleneck_operator_dev.familys import FamilySJob, generate_family_s

START = 1_700_000_000.0


@pytest.fixture(scope="session")
def jobs() -> list[FamilySJob]:
    """Forty jobs: eight of each class, enough to see every class's physics."""
    return generate_family_s(seed=3, n=40, start=START)
