"""Matplotlib figures as inline SVG strings. Matplotlib is imported here only, inside the functions.

Each plot comes back with how many data points it drew, so the page can state it (``data-points``)
and a test can check the SVG against it. Path simplification is off so every point is a vertex.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bottleneck_operator.contract.signals import SIGNALS
from bottleneck_operator.html.series import SignalPlot

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

CLASS_COLOURS = {
    "IO": "#1f77b4",
    "CPU": "#ff7f0e",
    "Interconnect": "#9467bd",
    "GPU": "#2ca02c",
    "Memory": "#d62728",
    "Unknown": "#7f7f7f",
}
WIDTH_IN, HEIGHT_IN = 9.0, 3.0
_SVG_START = re.compile(r"^.*?(?=<svg)", re.S)
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.S)


@dataclass(frozen=True)
class Plot:
    """A rendered plot.

    Attributes:
        key: a stable name ("gpu-activity", "limiting-stage", "timeline"), used as the SVG ids' salt.
        title: the caption.
        svg: the ``<svg>`` element, without XML prolog or metadata.
        points: data points drawn (finite samples over all lines; segments for the timeline).
        series: lines (or segments) drawn.
    """

    key: str
    title: str
    svg: str
    points: int
    series: int


@contextmanager
def _style(key: str) -> Iterator[None]:
    import matplotlib

    # Agg: no display is needed or wanted, and nothing else in the process has chosen a backend yet.
    matplotlib.use("Agg")
    with matplotlib.rc_context(
        {
            "svg.fonttype": "none",  # text stays text: smaller, selectable, scaled by the browser
            "svg.hashsalt": key,  # distinct clip-path ids per plot, since several SVGs share one page
            "path.simplify": False,
            "font.size": 9,
            "axes.spines.top": False,
            "axes.spines.right": False,
        }
    ):
        yield


def _svg(fig: Figure) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = _METADATA.sub("", _SVG_START.sub("", buf.getvalue(), count=1))
    return text.strip()


def _scale(unit: str, peak: float) -> tuple[float, str]:
    if unit == "ratio":
        return 100.0, "%"
    if unit in ("B/s", "B"):
        for factor, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
            if peak >= factor:
                return 1.0 / factor, f"{prefix}{unit}"
    return 1.0, unit


def signal_plot(key: str, title: str, plot: SignalPlot) -> Plot:
    """Lines over minutes from the window start, with dotted horizontal reference levels."""
    from matplotlib.figure import Figure

    spec = SIGNALS.get(plot.signal)
    unit = spec.unit if spec else ""
    peak = max([float(abs(ln.y[ln.y == ln.y]).max(initial=0.0)) for ln in plot.lines] + [v for _, v in plot.references])
    factor, shown_unit = _scale(unit, peak)
    with _style(key):
        fig = Figure(figsize=(WIDTH_IN, HEIGHT_IN))
        ax = fig.add_subplot()
        for i, ln in enumerate(plot.lines):
            mean = ln.label == "Job mean"
            ax.plot(
                ln.x,
                ln.y * factor,
                label=ln.label,
                linewidth=2.2 if mean else 1.2,
                linestyle="--" if ln.dashed else "-",
                color="black" if mean else f"C{i % 10}",
            )
        for j, (label, level) in enumerate(plot.references):
            ax.axhline(level * factor, linestyle=":", linewidth=1.5, color=f"C{(j + 3) % 10}", label=label)
        _axes(ax, f"{plot.signal} ({shown_unit})" if shown_unit else plot.signal)
        if unit == "ratio":
            ax.set_ylim(bottom=0.0, top=max(100.0, ax.get_ylim()[1]))
        svg = _svg(fig)
    points = sum(ln.points for ln in plot.lines)
    return Plot(key, title, svg, points, len(plot.lines))


def _axes(ax: Axes, ylabel: str) -> None:
    ax.set_xlabel("minutes from the window start")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


@dataclass(frozen=True)
class Segment:
    """One window of the verdict timeline, in minutes from the report's window start."""

    start: float
    end: float
    bottleneck: str
    confidence: float


def timeline_plot(key: str, title: str, segments: Sequence[Segment]) -> Plot:
    """One bar per window, coloured by class, its height the verdict's confidence."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    with _style(key):
        fig = Figure(figsize=(WIDTH_IN, HEIGHT_IN * 0.8))
        ax = fig.add_subplot()
        for seg in segments:
            width = max(seg.end - seg.start, 1e-3)
            colour = CLASS_COLOURS.get(seg.bottleneck, CLASS_COLOURS["Unknown"])
            ax.bar(seg.start, seg.confidence * 100.0, width=width, align="edge", color=colour, edgecolor="white")
        seen = list(dict.fromkeys(s.bottleneck for s in segments))
        handles = [Patch(color=CLASS_COLOURS.get(c, CLASS_COLOURS["Unknown"]), label=c) for c in seen]
        ax.set_ylim(0.0, 100.0)
        ax.set_xlabel("minutes from the window start")
        ax.set_ylabel("confidence (%)")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
        svg = _svg(fig)
    return Plot(key, title, svg, len(segments), len(segments))
