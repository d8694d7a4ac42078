"""The path one analysis takes through the package: which modules it visits, in which order.

:func:`trace` runs a callable under a profile hook (in the calling thread and in every thread it
starts) and records, per thread, the module a reader is in after each call and each return of a
Python function of ``bottleneck_operator``. Consecutive repeats collapse; a *return* is a step of
that sequence into a module the thread had already left once, counted once per distinct pair of
modules (so a loop over a thousand series counts as one, as it reads once).
"""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

PACKAGE = "bottleneck_operator"


@dataclass
class Path:
    """Module sequences of one traced call, one per thread that ran package code."""

    threads: dict[int, list[str]] = field(default_factory=dict)

    def modules(self, prefix: str = PACKAGE) -> set[str]:
        """Distinct modules visited whose dotted name starts with ``prefix``."""
        return {m for seq in self.threads.values() for m in seq if _within(m, prefix)}

    def returns(self, prefix: str = PACKAGE) -> int:
        """Distinct steps (from, to), within ``prefix``, into a module the thread had already left."""
        back: set[tuple[str, str]] = set()
        for seq in self.threads.values():
            kept = _collapse([m for m in seq if _within(m, prefix)])
            seen: set[str] = set()
            for before, now in itertools.pairwise(kept):
                seen.add(before)
                if now in seen:
                    back.add((before, now))
        return len(back)


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _collapse(seq: list[str]) -> list[str]:
    return [m for i, m in enumerate(seq) if i == 0 or seq[i - 1] != m]


def trace(run: Callable[[], Any]) -> tuple[Any, Path]:
    """``run()``'s result and the module path it took."""
    path = Path()
    lock = threading.Lock()

    def hook(frame: FrameType, event: str, _: Any) -> None:
        if event == "call":
            where: FrameType | None = frame
        elif event == "return":
            where = frame.f_back
        else:
            return
        module = where.f_globals.get("__name__", "") if where is not None else ""
        if not _within(module, PACKAGE):
            return
        ident = threading.get_ident()
        with lock:
            seq = path.threads.setdefault(ident, [])
        if not seq or seq[-1] != module:
            seq.append(module)

    threading.setprofile(hook)
    sys.setprofile(hook)
    try:
        result = run()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    return result, path
