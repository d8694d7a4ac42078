"""Whether the analysis passes are alive: what the liveness probe asks, and when one last completed.

Every pass runs under a deadline (``pass_deadline``): past it the pass is cancelled and the next one
starts on schedule. Cancelling cannot stop the work a pass has handed to a thread (a fetch stuck in
the C code of a decoder, a deadlock), nor a pass whose coroutine never yields. Either is *stuck*:
the pass, or one of its threads, has run longer than the deadline plus a grace period. A stuck
operator cannot heal itself, so it fails the liveness probe and Kubernetes restarts it; a slow
Prometheus only makes passes time out, which the reports and the alerts say, without restarts.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

__all__ = ["GRACE", "PassHealth"]

# Seconds past the deadline before a pass or a thread counts as stuck: cancelling a pass waits for
# its report writes to be reaped, and a thread may be finishing one last query.
GRACE = 60.0


@dataclass
class PassHealth:
    """The pass loop's heartbeat, read by the liveness probe.

    Attributes:
        deadline: seconds a pass may run (``pass_deadline``).
        clock: monotonic seconds (tests move it).
        running_since: when the running pass started, None between passes.
        last_completed: wall-clock time (unix seconds) of the last pass that completed.
    """

    deadline: float
    clock: Callable[[], float] = time.monotonic
    running_since: float | None = None
    last_completed: float | None = None
    _threads: dict[int, float] = field(default_factory=dict, repr=False)
    _tokens: Iterator[int] = field(default_factory=itertools.count, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def started(self) -> None:
        """A pass starts."""
        self.running_since = self.clock()

    def ended(self, *, completed: bool) -> None:
        """The pass ended: completed, or cut short (deadline, failure)."""
        self.running_since = None
        if completed:
            self.last_completed = time.time()

    @contextlib.contextmanager
    def working(self) -> Iterator[None]:
        """Around a pass's work in a thread: a thread that never returns is seen (thread-safe)."""
        with self._lock:
            token = next(self._tokens)
            self._threads[token] = self.clock()
        try:
            yield
        finally:
            with self._lock:
                self._threads.pop(token, None)

    def stuck(self) -> str | None:
        """Why the passes are stuck, or None while they are alive."""
        now, limit = self.clock(), self.deadline + GRACE
        if self.running_since is not None and now - self.running_since > limit:
            return f"the analysis pass has run {now - self.running_since:.0f}s, past its {self.deadline:g}s deadline"
        with self._lock:
            oldest = min(self._threads.values(), default=None)
        if oldest is not None and now - oldest > limit:
            return f"an analysis thread has run {now - oldest:.0f}s, past the {self.deadline:g}s pass deadline"
        return None

    def summary(self) -> dict[str, float | None]:
        """What the probe shows while alive: seconds since the last completed pass, and the running one's age."""
        now = self.clock()
        return {
            "lastCompletedAgo": None if self.last_completed is None else round(time.time() - self.last_completed, 1),
            "runningFor": None if self.running_since is None else round(now - self.running_since, 1),
        }
