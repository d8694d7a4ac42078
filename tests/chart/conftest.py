"""Fixtures of the chart tests: the chart loaded once, and every scenario rendered once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import helm_python as helm
import pytest

from ._helpers import CHART, SCENARIOS, Manifest, render_docs


@pytest.fixture(scope="session")
def chart() -> Iterator[Any]:
    with helm.Chart.load(CHART) as loaded:
        yield loaded


@pytest.fixture(scope="session")
def rendered(chart: Any) -> dict[str, list[Manifest]]:
    """Every scenario rendered once per session."""
    return {name: render_docs(chart, values) for name, values in SCENARIOS.items()}
