"""Matplotlib figures as inline SVG strings. Matplotlib is imported here only, inside the functions.

Times are UTC on every plot, so the signals and the verdict timeline (which reaches back past the
last analysed window) read on the same clock. Each plot comes back with how many data points it drew, so the page can state it (``data-points``)
and a test can check the SVG against it. Path simplification is off so every point is a vertex.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bottleneck_operator.contract.labels import UNIT_NAMES, signal_label, signal_unit
from bottleneck_operator.errors import UsageError
from bottleneck_operator.html.series import HeatMap, SignalPlot
from bottleneck_operator.html.shares import StepShares

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
DAY = 86400.0
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


def require_matplotlib() -> None:
    """Fail with what to install, since matplotlib is an optional extra of the package.

    Raises:
        UsageError: matplotlib is not installed.
    """
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise UsageError(
            "the HTML report needs matplotlib: pip install 'bottleneck-operator[html]' (or matplotlib)"
        ) from exc


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


def _svg(fig: Figure, *, left: float = 0.08, bottom: float = 0.17) -> str:
    buf = io.StringIO()
    # A fixed layout rather than a tight box: every plot's axes then line up on the page.
    fig.subplots_adjust(left=left, right=0.70, bottom=bottom, top=0.95)
    fig.savefig(buf, format="svg", metadata={"Date": None})
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


def signal_plot(key: str, title: str, plot: SignalPlot, span: tuple[float, float]) -> Plot:
    """Lines over UTC time, with dotted horizontal reference levels."""
    from matplotlib.figure import Figure

    unit = signal_unit(plot.signal)
    peak = max([float(abs(ln.y[ln.y == ln.y]).max(initial=0.0)) for ln in plot.lines] + [v for _, v in plot.references])
    factor, shown_unit = _scale(unit, peak)
    with _style(key):
        fig = Figure(figsize=(WIDTH_IN, HEIGHT_IN))
        ax = fig.add_subplot()
        for i, ln in enumerate(plot.lines):
            mean = ln.label == "Job mean"
            ax.plot(
                ln.x / DAY,
                ln.y * factor,
                label=_short(ln.label),
                linewidth=2.2 if mean else 1.2,
                linestyle="--" if ln.dashed else "-",
                color="black" if mean else f"C{i % 10}",
            )
        for j, (label, level) in enumerate(plot.references):
            ax.axhline(level * factor, linestyle=":", linewidth=1.5, color=f"C{(j + 3) % 10}", label=label)
        _axes(ax, axis_label(plot.signal, shown_unit), span)
        if unit == "ratio":
            ax.set_ylim(bottom=0.0, top=max(100.0, ax.get_ylim()[1]))
        svg = _svg(fig)
    points = sum(ln.points for ln in plot.lines)
    return Plot(key, title, svg, points, len(plot.lines))


def axis_label(signal: str, shown_unit: str) -> str:
    """ "<plain name> (<unit>)": the name from the contract's label table, the unit as drawn (after scaling)."""
    unit = UNIT_NAMES.get(shown_unit, shown_unit)
    return f"{signal_label(signal)} ({unit})" if unit else signal_label(signal)


def _time_axis(ax: Axes, span: tuple[float, float]) -> None:
    """UTC dates on x over ``span`` (unix seconds), the same on every plot of the page.

    Matplotlib's date numbers are days since 1970-01-01, its default epoch.
    """
    from datetime import UTC

    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter

    locator = AutoDateLocator(tz=UTC)  # type: ignore[no-untyped-call]  # matplotlib leaves these untyped
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(ConciseDateFormatter(locator, tz=UTC))  # type: ignore[no-untyped-call]
    ax.set_xlim(span[0] / DAY, span[1] / DAY)
    ax.set_xlabel("time (UTC)")


def _short(label: str, limit: int = 36) -> str:
    """Legend labels fit the space right of the axes; long pod names keep their distinctive end."""
    return label if len(label) <= limit else "…" + label[-(limit - 1) :]


def _axes(ax: Axes, ylabel: str, span: tuple[float, float]) -> None:
    _time_axis(ax, span)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


@dataclass(frozen=True)
class Segment:
    """One window of the verdict timeline (unix seconds)."""

    start: float
    end: float
    bottleneck: str
    confidence: float


def timeline_plot(key: str, title: str, segments: Sequence[Segment], span: tuple[float, float]) -> Plot:
    """One bar per window, coloured by class, its height the verdict's confidence.

    The operator's windows slide (each pass analyses the last 15 minutes, every minute), so they
    overlap: each bar covers what its window adds after the one before, the latest verdict for
    that stretch of time.
    """
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    with _style(key):
        fig = Figure(figsize=(WIDTH_IN, HEIGHT_IN * 0.8))
        ax = fig.add_subplot()
        shown_to = -float("inf")
        for seg in sorted(segments, key=lambda s: (s.end, s.start)):
            begin = max(seg.start, shown_to)
            shown_to = seg.end
            width = max(seg.end - begin, 1.0) / DAY
            colour = CLASS_COLOURS.get(seg.bottleneck, CLASS_COLOURS["Unknown"])
            ax.bar(begin / DAY, seg.confidence * 100.0, width=width, align="edge", color=colour, edgecolor="white")
        seen = list(dict.fromkeys(s.bottleneck for s in segments))
        handles = [Patch(color=CLASS_COLOURS.get(c, CLASS_COLOURS["Unknown"]), label=c) for c in seen]
        ax.set_ylim(0.0, 100.0)
        _time_axis(ax, span)
        ax.set_ylabel("confidence (%)")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
        svg = _svg(fig)
    return Plot(key, title, svg, len(segments), len(segments))


OTHER_COLOUR = "#d0d7de"


def stacked_plot(key: str, title: str, shares: StepShares, span: tuple[float, float]) -> Plot:
    """The step time as stacked shares over time: computing at the bottom, each wait above it."""
    from matplotlib.figure import Figure

    colours = [CLASS_COLOURS.get(layer.cls, OTHER_COLOUR) if layer.cls else OTHER_COLOUR for layer in shares.layers]
    with _style(key):
        fig = Figure(figsize=(WIDTH_IN, HEIGHT_IN))
        ax = fig.add_subplot()
        ax.stackplot(
            shares.x / DAY,
            *[layer.y * 100.0 for layer in shares.layers],
            labels=[layer.label for layer in shares.layers],
            colors=colours,
            alpha=0.85,
            linewidth=0.0,
        )
        ax.set_ylim(0.0, 100.0)
        _axes(ax, "share of wall time (%)", span)
        svg = _svg(fig)
    return Plot(key, title, svg, shares.points, len(shares.layers))


def heatmap_plot(key: str, title: str, heat: HeatMap, span: tuple[float, float]) -> Plot:
    """One row per pod, its colour the signal's value over time: where pods differ, at a glance."""
    from matplotlib.figure import Figure

    rows = len(heat.pods)
    x = heat.x / DAY
    half = (x[1] - x[0]) / 2 if len(x) > 1 else 0.5 / 1440
    with _style(key):
        fig = Figure(figsize=(WIDTH_IN, max(HEIGHT_IN, 0.16 * rows + 1.0)))
        ax = fig.add_subplot()
        image = ax.imshow(
            heat.values * 100.0,
            aspect="auto",
            interpolation="nearest",
            extent=(x[0] - half, x[-1] + half, rows - 0.5, -0.5),
            vmin=0.0,
            vmax=100.0,
            cmap="viridis",
        )
        every = max(1, -(-rows // 40))  # at most 40 names on the axis
        ax.set_yticks(range(0, rows, every), [_short(p, 28) for p in heat.pods[::every]], fontsize=7)
        _time_axis(ax, span)
        ax.set_ylabel("pod")
        bar = fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
        bar.set_label(axis_label(heat.signal, "%"))
        svg = _svg(fig, left=0.22, bottom=min(0.17, 0.6 / fig.get_figheight()))
    return Plot(key, title, svg, heat.points, rows)
