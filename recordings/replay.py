"""Replaying the recordings: each one moved in time and served by a real Prometheus of its own.

A recording (``tests/data/real-*/``, ``tests/data/gpu-*/``) is OpenMetrics exported from the
Prometheus that scraped it, with a ``truth.json`` beside it. To be analysed it is moved to end shortly
before now (whole hours, so that its samples keep their phase against the analysis grid and a run
today reads the same steps as a run tomorrow) and backfilled with promtool into a Prometheus of its
own: they were all made on one node, whose node-exporter instances must not meet in one TSDB. The
recordings test and the cross-family benchmark read them through here.
"""

from __future__ import annotations

import gzip
import json
import math
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bottleneck_operator.contract.window import JobWindow
    from bottleneck_operator.pipeline import JobResult

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
SHIFT_UNIT = 3600.0
# The recordings were scraped every 5 s (GPU) or 10 s (host) over about two minutes: read on a 5 s grid
# they hold the samples a verdict needs, where the 30 s default grid would leave five points.
STEP = 5.0


@dataclass(frozen=True)
class Shifted:
    """A recording's truth and its Job window once moved in time."""

    truth: dict[str, Any]
    start: float
    end: float


def recording_names(data: Path = DATA) -> list[str]:
    """The recordings under ``data``: ``real-*`` (this host's cgroups) and ``gpu-*`` (a GPU machine)."""
    return sorted(
        {p.parent.name for pattern in ("real-*/metrics.om*", "gpu-*/metrics.om*") for p in data.glob(pattern)}
    )


def is_gpu_recording(name: str) -> bool:
    """Whether a recording was made on a GPU machine (``gpu-*``), so that its DCGM fields can be read."""
    return name.startswith("gpu-")


def openmetrics_text(name: str, data: Path = DATA) -> str:
    """One recording's OpenMetrics text (gzip-packed or plain)."""
    packed = data / name / "metrics.om.gz"
    return (
        gzip.decompress(packed.read_bytes()).decode() if packed.exists() else (data / name / "metrics.om").read_text()
    )


def _shift_lines(text: str, offset: float) -> dict[str, list[str]]:
    """Family header -> its sample lines with timestamps moved by ``offset`` seconds."""
    families: dict[str, list[str]] = {}
    current: list[str] = []
    for line in text.splitlines():
        if line.startswith("# TYPE"):
            current = families.setdefault(line, [])
        elif line and not line.startswith("#"):
            head, ts = line.rsplit(" ", 1)
            current.append(f"{head} {float(ts) + offset:.3f}")
    return families


def shifted_openmetrics(name: str, now: float, *, phase: float = 0.0, data: Path = DATA) -> tuple[str, Shifted]:
    """One recording as OpenMetrics ending 2 to 62 minutes before ``now``, and its shifted window.

    Args:
        name: the recording's directory name.
        now: the current time (unix seconds).
        phase: seconds added to the whole-hour shift (to probe phase sensitivity by hand).
        data: where the recordings are.
    """
    truth = json.loads((data / name / "truth.json").read_text())
    offset = float(math.floor((now - 120.0 - truth["end"]) / SHIFT_UNIT) * SHIFT_UNIT) + phase
    families = _shift_lines(openmetrics_text(name, data), offset)
    body = [line for header, lines in families.items() for line in (header, *lines)]
    return "\n".join(body) + "\n# EOF\n", Shifted(truth, truth["start"] + offset, truth["end"] + offset)


def replay(names: Sequence[str], *, phase: float = 0.0, data: Path = DATA) -> dict[str, tuple[Shifted, JobResult]]:
    """Each recording analysed by the pipeline over its Job window, from a Prometheus of its own.

    Args:
        names: the recordings to replay.
        phase: see :func:`shifted_openmetrics`.
        data: where the recordings are.

    Returns:
        name -> (the shifted truth and window bounds, the pipeline's result: window and verdict).

    Raises:
        LocalPrometheusError: Debian's prometheus or promtool is missing, or a Prometheus failed.
    """
    from bottleneck_operator.pipeline import Analyzer, JobRequest
    from bottleneck_operator.settings import Settings
    from bottleneck_operator_dev.simulation.localprom import LocalPrometheus

    out: dict[str, tuple[Shifted, JobResult]] = {}
    with tempfile.TemporaryDirectory(prefix="recordings-") as root:
        for name in names:
            text, shifted = shifted_openmetrics(name, time.time(), phase=phase, data=data)
            prom = LocalPrometheus.from_openmetrics(text, workdir=Path(root) / name)
            try:
                analyzer = Analyzer.from_settings(Settings.model_validate({"prometheus_url": prom.url, "step": STEP}))
                t = shifted.truth
                request = JobRequest(namespace=t["namespace"], job=t["job"], start=shifted.start, end=shifted.end)
                out[name] = (shifted, analyzer.analyze_jobs([request], phase="Completed")[0])
            finally:
                prom.stop()
    return out


def without_profiling(window: JobWindow) -> JobWindow:
    """The window as a cluster whose dcgm-exporter collects no profiling fields (DEV fields only) gets it."""
    from dataclasses import replace

    from bottleneck_operator.contract.signals import Family, signals_of

    profiling = {
        *signals_of(Family.DCGM_PROF),
        *signals_of(Family.DCGM_PROF_SM),
        *signals_of(Family.DCGM_PROF_NVLINK),
        *signals_of(Family.DCGM_PROF_PIPES),
    }
    pods = tuple(replace(p, signals={k: v for k, v in p.signals.items() if k not in profiling}) for p in window.pods)
    return replace(window, pods=pods)
