"""One small family D, simulated once for the tests of this folder (with the generator's internals)."""

from __future__ import annotations

import pytest

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyd.family import labels, simulate_family_job
from bottleneck_operator_dev.familyd.job import Simulated

SEED = 11
COUNT = 60
START = 1_750_000_000.0  # an explicit time: nothing here reads the clock
STEP = 30.0


@pytest.fixture(scope="session")
def simulated() -> list[tuple[Bottleneck, str, Simulated]]:
    """(label, Memory kind, simulated job) for the family's first ``COUNT`` jobs."""
    return [
        (label, memory, simulate_family_job(SEED, i, label, memory, start=START, step=STEP))
        for i, (label, memory) in enumerate(labels(SEED, COUNT))
    ]
