"""OpenMetrics text of simulated jobs, for ``promtool tsdb create-blocks-from openmetrics``.

promtool's parser wants each metric family in one contiguous block after its ``# HELP``/``# TYPE``
lines, a counter family named without its ``_total`` suffix (its samples keep it), the samples of each
series in time order with timestamps in seconds, and ``# EOF`` at the end. Counters that lack the
suffix in the exporters (dcgm's ``DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL``, node-exporter's untyped
``node_vmstat_pgmajfault``) are written as type ``unknown`` so their names stay what Prometheus stores.
Missed scrapes are simply absent.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, TextIO

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.simulation.exporters import Series, job_series

__all__ = ["format_timestamps", "job_series", "write_openmetrics", "write_series"]

if TYPE_CHECKING:
    from bottleneck_operator_dev.simulation.record import JobRecord


def escape_label_value(value: str) -> str:
    """Escape a label value for the exposition formats (backslash, double quote, newline)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def format_labels(labels: dict[str, str]) -> str:
    """``{a="x",b="y"}``, or the empty string without labels."""
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{escape_label_value(v)}"' for k, v in labels.items()) + "}"


def family_name(series: Series) -> str:
    """The OpenMetrics family name of a series (counters drop ``_total``)."""
    if series.kind == "counter" and series.name.endswith("_total"):
        return series.name[: -len("_total")]
    return series.name


def format_timestamps(times: Sequence[float] | npt.NDArray[np.float64]) -> npt.NDArray[np.object_]:
    """Sample times as the ``" <seconds>\\n"`` suffixes of OpenMetrics lines (millisecond precision)."""
    return np.array([f" {t:.3f}\n" for t in np.asarray(times, dtype=np.float64).tolist()], dtype=object)


def write_series(
    series: Iterable[tuple[Series, Sequence[float] | npt.NDArray[np.float64] | npt.NDArray[np.object_]]], out: TextIO
) -> int:
    """Write series grouped by family, then ``# EOF``.

    Args:
        series: (series, sample times) pairs: the times as floats (seconds) or already formatted by
            :func:`format_timestamps`; pairs that share one times object are formatted once. Samples
            where ``series.up`` is False are skipped.
        out: the text stream.

    Returns:
        Number of samples written.
    """
    # Keyed by identity; each entry keeps its times object alive so that no id is reused meanwhile.
    formatted: dict[int, tuple[object, npt.NDArray[np.object_]]] = {}
    families: dict[str, list[tuple[Series, npt.NDArray[np.object_]]]] = {}
    for s, times in series:
        key = id(times)
        if key not in formatted:
            if isinstance(times, np.ndarray) and times.dtype == object:
                formatted[key] = (times, np.asarray(times, dtype=object))
            else:
                formatted[key] = (times, format_timestamps(np.asarray(times, dtype=np.float64)))
        families.setdefault(family_name(s), []).append((s, formatted[key][1]))
    written = 0
    for fam, members in families.items():
        first = members[0][0]
        out.write(f"# HELP {fam} {first.help}\n# TYPE {fam} {first.kind}\n")
        for s, stamps in members:
            prefix = s.name + format_labels({**s.labels, **s.scrape}) + " "
            up = s.up
            lines = [prefix + repr(v) + t for v, t in zip(s.values[up].tolist(), stamps[up].tolist(), strict=True)]
            out.writelines(lines)
            written += len(lines)
    out.write("# EOF\n")
    return written


def write_openmetrics(jobs: Sequence[JobRecord], out: TextIO, *, extra_pods: bool = True) -> None:
    """Write every exporter's series of ``jobs`` as one OpenMetrics document.

    Args:
        jobs: the simulated jobs (their nodes must be distinct, as ``generate_jobs`` makes them).
        out: a text stream, e.g. an open file or ``sys.stdout``.
        extra_pods: also write the neighbour pods of other, non-profiled jobs on the same nodes.
    """
    pairs = []
    for job in jobs:
        st = job.state
        stamps = {e: format_timestamps(st.times(e)) for e in st.offsets}
        for s in job_series(job, extra_pods=extra_pods):
            pairs.append((s, stamps[s.exporter]))
    write_series(pairs, out)
