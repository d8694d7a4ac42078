"""The HTML report opened in a real headless Chromium: it draws every plot, logs nothing, reaches no network.

Each page's screenshot is kept under build/test-artefacts/ (``BOTTLENECK_TEST_ARTEFACTS``) to look at.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from _chromium import console_messages, dump_dom, keep_artefact, page_hosts, recording_proxy, screenshot
from _htmlreport import PARTS, Analysed, analysed

from bottleneck_operator.html import render_html, write_html

__all__ = ["analysed"]  # the fixture, shared by the tests below

pytestmark = pytest.mark.prometheus

SIGNAL_PLOTS = {"gpu-activity", "limiting-stage", "step-time"}
# Every plot is drawn at the page's plot width (plots.WIDTH_IN inches, in points as matplotlib writes SVG).
PLOT_WIDTH = "648pt"
# Enough that a flat line or an empty axis could not pass: a 15-minute window at a 30 s step has 30.
MIN_POINTS = 25
MIN_COLOURS = 50
_VERTEX = re.compile(r"[ML]\s*-?[\d.]+[\s,]+-?[\d.]+")


class _Figures(HTMLParser):
    """Collects each figure.plot's data attributes and the vertex counts of its SVG's paths."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: dict[str, dict[str, object]] = {}
        self._current: str | None = None
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        for key in ("src", "href", "xlink:href", "action", "data", "poster"):
            if a.get(key):
                self.urls.append(str(a[key]))
        if tag == "figure" and "plot" in (a.get("class") or "").split():
            self._current = str(a["data-plot"])
            self.figures[self._current] = {"points": int(str(a["data-points"])), "paths": [], "images": 0}
        elif tag == "svg" and self._current is not None and "width" not in self.figures[self._current]:
            self.figures[self._current]["width"] = a.get("width")
        elif tag == "image" and self._current is not None:
            images = self.figures[self._current]["images"]
            assert isinstance(images, int)
            self.figures[self._current]["images"] = images + 1
        elif tag == "path" and self._current is not None and a.get("d"):
            paths = self.figures[self._current]["paths"]
            assert isinstance(paths, list)
            paths.append(len(_VERTEX.findall(str(a["d"]))))

    def handle_endtag(self, tag: str) -> None:
        if tag == "figure":
            self._current = None


def _figures(page: str) -> _Figures:
    parser = _Figures()
    parser.feed(page)
    return parser


def test_page_draws_every_plot_in_chromium(analysed: Analysed, tmp_path: Path) -> None:
    page = write_html(analysed.status, tmp_path / "report.html", window=analysed.window, name=analysed.name)
    png = screenshot(page, tmp_path / "report.png")
    keep_artefact(png, "report.png")
    assert console_messages(page) == []
    from PIL import Image

    with Image.open(png) as img:
        assert img.format == "PNG" and img.width >= 1000
        colours = img.convert("RGB").getcolors(maxcolors=1 << 20) or []
    assert len(colours) >= MIN_COLOURS, f"the screenshot looks blank: {len(colours)} colours"

    with recording_proxy() as (proxy, hosts):
        found = _figures(dump_dom(page, proxy=proxy))
    assert page_hosts(hosts) == [], f"the page asked the network for {page_hosts(hosts)}"
    assert set(found.figures) == SIGNAL_PLOTS | {"timeline"}, found.figures.keys()
    assert {f["width"] for f in found.figures.values()} == {PLOT_WIDTH}
    for key in SIGNAL_PLOTS:
        fig = found.figures[key]
        points, paths = fig["points"], fig["paths"]
        assert isinstance(points, int) and isinstance(paths, list)
        assert points >= MIN_POINTS, (key, points)
        # every data point is one vertex of a line (path simplification is off)
        assert sum(paths) >= points, (key, points, sum(paths))
        assert max(paths) >= MIN_POINTS, (key, max(paths))
    timeline = found.figures["timeline"]
    assert timeline["points"] == PARTS
    paths = timeline["paths"]
    assert isinstance(paths, list) and sum(1 for n in paths if n >= 4) >= PARTS  # one bar per window
    assert analysed.status["bottleneck"] in page.read_text()


def test_many_pods_draw_a_heat_map_in_chromium(tmp_path: Path) -> None:
    import numpy as np

    from bottleneck_operator.contract.window import JobWindow, PodWindow
    from bottleneck_operator.html.series import MAX_POD_LINES

    # 3 x MAX_POD_LINES pods over an hour, the later pods busier: the heat map must show the gradient
    start = 1767225600.0
    ts = start + 15.0 * np.arange(240)
    pods = tuple(
        PodWindow(f"train-worker-{i}", f"node-{i}", None, 8, {"gr_engine_active": np.full(ts.size, 0.3 + 0.02 * i)})
        for i in range(3 * MAX_POD_LINES)
    )
    window = JobWindow("ml", "wide", start, float(ts[-1]), 15.0, ts, pods)
    page = write_html({"bottleneck": "GPU", "confidence": 0.9}, tmp_path / "many.html", window=window)
    # the heat map and its colour bar are data: images, which the page's CSP allows
    assert console_messages(page) == []
    found = _figures(dump_dom(page))
    heat = found.figures["gpu-heatmap"]
    assert heat["images"] == 2 and heat["points"] == 3 * MAX_POD_LINES * ts.size
    inline = [u for u in found.urls if not u.startswith("#")]
    assert inline and all(u.startswith("data:image/png;base64,") for u in inline), inline[:3]
    png = screenshot(page, tmp_path / "many.png")
    keep_artefact(png, "report-many-pods.png")
    from PIL import Image

    with Image.open(png) as img:
        colours = img.convert("RGB").getcolors(maxcolors=1 << 20) or []
    # viridis from 30 % to 76 %: many distinct colours where a blank or failed image has few
    assert len(colours) >= MIN_COLOURS


def test_console_check_catches_a_page_that_breaks_its_policy(tmp_path: Path) -> None:
    """The control for the console checks above: a script the page's CSP refuses is reported."""
    page = tmp_path / "refused.html"
    page.write_text(
        '<html><head><meta http-equiv="Content-Security-Policy" content="default-src \'none\'"></head>'
        "<body><script>document.title = 'ran'</script></body></html>"
    )
    messages = console_messages(page)
    assert messages and "Content Security Policy" in messages[0]


def test_the_proxy_sees_what_a_page_asks_for(tmp_path: Path) -> None:
    """The control for the check above: a page that does fetch is caught."""
    page = tmp_path / "fetches.html"
    page.write_text('<html><body><img src="http://report-assets.invalid/plot.png"></body></html>')
    with recording_proxy() as (proxy, hosts):
        dump_dom(page, proxy=proxy)
    assert "report-assets.invalid" in page_hosts(hosts)


def test_page_names_no_remote_resource(analysed: Analysed) -> None:
    page = render_html(analysed.status, window=analysed.window, name=analysed.name)
    found = _figures(page)
    remote = [u for u in found.urls if not u.startswith("#")]
    assert remote == [], remote
    assert "default-src 'none'" in page
    assert not re.search(r"url\((?!#)", page), "a CSS or SVG url() that is not a same-page reference"
    assert not re.search(r"<script|<link|<iframe|<img", page, re.I)


def test_status_only_page_renders_the_timeline(analysed: Analysed, tmp_path: Path) -> None:
    page = write_html(analysed.status, tmp_path / "status-only.html")
    found = _figures(dump_dom(page))
    assert set(found.figures) == {"timeline"}
    assert found.figures["timeline"]["points"] == PARTS
    text = page.read_text()
    assert 'id="no-signals"' in text and 'id="evidence"' in text and 'id="pods"' in text
