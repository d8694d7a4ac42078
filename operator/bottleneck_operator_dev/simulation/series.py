"""One exported time series, as every exporter renderer produces it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bottleneck_operator.contract.signals import metrics_of
from bottleneck_operator_dev.simulation.state import B, F


@dataclass
class Series:
    """One time series: name, OpenMetrics type, labels, and values at the exporter's scrape times.

    ``up`` marks the scrapes that succeeded; ``scrape`` holds the labels Prometheus would attach
    (``instance``, ``job``), kept apart so the live endpoints can leave them to the scraper.
    """

    name: str
    kind: str  # "counter" | "gauge" | "unknown"
    help: str
    labels: dict[str, str]
    values: F
    exporter: str
    up: B
    scrape: dict[str, str]


SeriesMaker = Callable[..., Series]


def series_maker(exporter: str, up: B, scrape: dict[str, str], base: dict[str, str], prefix: str = "") -> SeriesMaker:
    """A shorthand for the series of one target: name, type, help, values and extra labels."""

    def make(name: str, kind: str, text: str, values: F, extra: dict[str, str] | None = None) -> Series:
        return Series(prefix + name, kind, text, {**base, **(extra or {})}, values, exporter, up, scrape)

    return make


def table_metric(signal: str, index: int = 0, *, strip: str = "") -> str:
    """The ``index``-th exporter metric the signal table reads ``signal`` from, less the prefix ``strip``."""
    return metrics_of(signal)[index].removeprefix(strip)
