"""The HTML report opened in a real headless Chromium: it draws every plot, and reaches no network."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from _chromium import dump_dom, page_hosts, recording_proxy, screenshot
from _htmlreport import PARTS, Analysed, analysed

from bottleneck_operator.html import render_html, write_html

__all__ = ["analysed"]  # the fixture, shared by the tests below

pytestmark = pytest.mark.prometheus

SIGNAL_PLOTS = {"gpu-activity", "limiting-stage"}
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
            self.figures[self._current] = {"points": int(str(a["data-points"])), "paths": []}
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
    from PIL import Image

    with Image.open(png) as img:
        assert img.format == "PNG" and img.width >= 1000
        colours = img.convert("RGB").getcolors(maxcolors=1 << 20) or []
    assert len(colours) >= MIN_COLOURS, f"the screenshot looks blank: {len(colours)} colours"

    with recording_proxy() as (proxy, hosts):
        found = _figures(dump_dom(page, proxy=proxy))
    assert page_hosts(hosts) == [], f"the page asked the network for {page_hosts(hosts)}"
    assert set(found.figures) == SIGNAL_PLOTS | {"timeline"}, found.figures.keys()
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
