"""A self-contained, offline HTML page for one BottleneckReport: the verdict, its evidence, plots.

The page is rendered from the report's typed status (or its API form, the camelCase JSON that
``analyze --output json`` prints, read through the report models), plus the window's signals when
the caller has them. Pages are written by one function (:mod:`.output`): a file that cannot be
written is a :class:`PageNotWritten`, a usage error (exit code 2). Plots are inline SVG from matplotlib, imported only when a page is
written, so nothing else in the package pays for it.
"""

from __future__ import annotations

from bottleneck_operator.html.output import PageNotWritten
from bottleneck_operator.html.render import render_html, write_html
from bottleneck_operator.html.summary import render_summary_html, write_summary_html

__all__ = ["PageNotWritten", "render_html", "render_summary_html", "write_html", "write_summary_html"]
