"""The demo's progress while it waits: a live table redrawn in place on a terminal, a few plain lines otherwise."""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from bottleneck_operator.reports import BottleneckReport, ReportStatus, as_report
from bottleneck_operator_dev.demo.report import LETTERS
from bottleneck_operator_dev.demo.story import DemoJob

BAR = 24  # characters of the progress bar
PLAIN_EVERY = 20.0  # seconds between plain progress lines


def _by_key(reports: Sequence[BottleneckReport | Mapping[str, Any]]) -> dict[str, ReportStatus]:
    typed = [as_report(r) for r in reports]
    return {r.key: r.status for r in typed}


def _strip(status: ReportStatus | None, width: int = 16) -> str:
    """The last per-window verdicts as letters (I, C, N, G, M, ?), newest right."""
    if status is None or not status.timeline:
        return ""
    letters = "".join(LETTERS.get(e.bottleneck, "?") for e in status.timeline)
    return letters[-width:]


class Progress:
    """Shows the Jobs' verdicts as they arrive.

    Args:
        stream: where to write.
        jobs: the demo's Jobs (their built-in classes are shown next to the verdicts).
        limit: seconds the watch lasts at most (the bar's full length).
        live: redraw a table in place (a terminal) rather than print occasional lines.
    """

    def __init__(self, stream: TextIO, jobs: Sequence[DemoJob], limit: float, *, live: bool) -> None:
        self.stream, self.jobs, self.limit, self.live = stream, list(jobs), limit, live
        self._drawn = 0
        self._last_plain = -PLAIN_EVERY

    def note(self, elapsed: float, text: str) -> None:
        """An event worth a line of its own (a Job completed)."""
        if self.live:
            self._clear()
        self.stream.write(f"[{elapsed:5.1f}s] {text}\n")
        self.stream.flush()

    def update(self, elapsed: float, reports: Sequence[BottleneckReport | Mapping[str, Any]]) -> None:
        """Redraw (terminal) or, every ``PLAIN_EVERY`` seconds, print one summary line."""
        statuses = _by_key(reports)
        if self.live:
            self._clear()
            # A line wider than the terminal would wrap, and the redraw would then climb too few lines.
            width = max(20, shutil.get_terminal_size().columns - 1)
            lines = [line[:width] for line in self._table(elapsed, statuses)]
            self.stream.write("\n".join(lines) + "\n")
            self._drawn = len(lines)
        elif elapsed - self._last_plain >= PLAIN_EVERY:
            self._last_plain = elapsed
            verdicts = sum(1 for s in statuses.values() if s.bottleneck not in (None, "Unknown"))
            self.stream.write(f"[{elapsed:5.1f}s] {len(statuses)} reports, {verdicts} with a verdict\n")
        self.stream.flush()

    def finish(self) -> None:
        """Leave the last drawing on screen and move on."""
        self._drawn = 0

    def _clear(self) -> None:
        if self._drawn:
            # Cursor up to the table's first line, then erase to the end of the screen.
            self.stream.write(f"\x1b[{self._drawn}F\x1b[J")
            self._drawn = 0

    def _table(self, elapsed: float, statuses: Mapping[str, ReportStatus]) -> list[str]:
        done = min(1.0, elapsed / self.limit) if self.limit > 0 else 1.0
        bar = "#" * int(done * BAR) + "." * (BAR - int(done * BAR))
        lines = [f"[{bar}] {elapsed:3.0f} s  I=IO C=CPU N=Interconnect G=GPU M=Memory"]
        width = max(len(j.key) for j in self.jobs)
        lines.append(
            f"  {'JOB':<{width}}  {'BUILT IN':<12}  {'VERDICT':<12}  {'CONF':>4}  {'PHASE':<9}  WINDOWS (a letter each)"
        )
        for j in self.jobs:
            s = statuses.get(j.key)
            built = "→".join(LETTERS[c] if j.changes else c for c in j.classes)
            verdict = (s.bottleneck or "…") if s else "…"
            conf = f"{100 * s.confidence:.0f}%" if s and s.confidence is not None else ""
            phase = s.phase if s else ""
            lines.append(f"  {j.key:<{width}}  {built:<12}  {verdict:<12}  {conf:>4}  {phase:<9}  {_strip(s)}")
        return lines
