"""The pod webhook's memory of the training workloads it had to read from the API.

A pod of a profiled workload reaches the pod webhook before the operator's watch may have shown its
workload (the watch event and the pod's admission race). The webhook then reads the workload from
the API, and this cache makes that read happen once per workload, not once per pod: a 64-worker
PyTorchJob admitted on a slow API server would otherwise queue 64 (or, with every candidate kind,
several hundred) reads behind one another, past the admission timeout.

- Bounded: at most ``size`` workloads, the least recently used dropped first.
- Expiring: an answer is trusted ``ttl`` seconds (the profiling switches can change); a workload
  found unprofiled or absent a tenth of that, and a failed read a few seconds, so a slow or failing
  API server is asked again soon, but not by every pod.
- One read in flight per workload: pods admitted together wait for the same read.
- Inside the budget: a pod waits at most ``budget`` seconds; the read goes on after that and its
  answer serves the next pods.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from bottleneck_operator.webhook.workloads import Profiled

log = logging.getLogger(__name__)

Key = tuple[str, str, str]  # (namespace, kind, name)
# Reads one workload: its switches, None when it is absent or not profiled. Raises when the API fails.
Read = Callable[[str, str, str], Awaitable[Profiled | None]]

FAILED_TTL = 5.0  # seconds a failed read is remembered: the API is asked again soon, not by every pod


@dataclass(frozen=True)
class _Entry:
    value: Profiled | None
    expires: float


class OwnerCache:
    """Workload switches read from the API, kept bounded and for a while (see the module's docstring).

    Args:
        size: most workloads kept; 0 keeps none and shares no read (every pod reads on its own).
        ttl: seconds a profiled workload's switches are trusted.
        clock: monotonic seconds (tests move it).
    """

    def __init__(self, size: int = 4096, ttl: float = 300.0, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.size = size
        self.ttl = ttl
        self._clock = clock
        self._entries: OrderedDict[Key, _Entry] = OrderedDict()
        self._inflight: dict[Key, asyncio.Task[Profiled | None]] = {}
        self.reads = 0  # reads started: what the cache saves is visible in tests and the bench

    def __len__(self) -> int:
        return len(self._entries)

    def cached(self, key: Key) -> tuple[bool, Profiled | None]:
        """(known, switches): whether an unexpired answer is held for the workload, and that answer."""
        entry = self._entries.get(key)
        if entry is None:
            return False, None
        if entry.expires <= self._clock():
            del self._entries[key]
            return False, None
        self._entries.move_to_end(key)
        return True, entry.value

    def remember(self, key: Key, value: Profiled | None, ttl: float | None = None) -> None:
        """Hold an answer (the workload webhook seeds the cache with what it admitted)."""
        if self.size <= 0:
            return
        if ttl is None:
            ttl = self.ttl if value is not None else self.ttl / 10
        self._entries[key] = _Entry(value, self._clock() + ttl)
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    async def first_profiled(
        self, namespace: str, candidates: Sequence[tuple[str, str]], read: Read, *, budget: float
    ) -> tuple[str, str, Profiled] | None:
        """The first candidate workload found profiled, reading the unknown ones at once.

        Args:
            namespace: the pod's namespace.
            candidates: (kind, name) of the workloads the pod may belong to, the most certain first.
            read: reads one workload from the API.
            budget: seconds the admission may wait for reads; what is not answered by then counts
                as not profiled for this pod (the reads go on and serve the next pods).

        Returns:
            (kind, name, switches), or None.
        """
        keys = [(namespace, kind, name) for kind, name in candidates]
        answers: dict[Key, Profiled | None] = {}
        waiting: dict[Key, asyncio.Task[Profiled | None]] = {}
        for key in keys:
            known, value = self.cached(key)
            if known:
                answers[key] = value
            elif key not in waiting:
                waiting[key] = self._read(key, read)
        deadline = asyncio.get_running_loop().time() + budget
        while True:
            for key, task in list(waiting.items()):
                if task.done():
                    failed = task.cancelled() or task.exception() is not None
                    answers[key] = None if failed else task.result()
                    del waiting[key]
            decided = _first_in_order(keys, answers)
            left = deadline - asyncio.get_running_loop().time()
            if decided is not None or not waiting or left <= 0:
                break
            # asyncio.wait never cancels: a read still running at the deadline goes on for the next pods.
            await asyncio.wait(waiting.values(), timeout=left, return_when=asyncio.FIRST_COMPLETED)
        # At the deadline, a less certain candidate already answered is better than none.
        for key in [decided] if decided is not None else keys:
            found = answers.get(key)
            if found is not None:
                return key[1], key[2], found
        return None

    def _read(self, key: Key, read: Read) -> asyncio.Task[Profiled | None]:
        """The read of one workload: the one in flight, else a new one whose answer is remembered."""
        if self.size > 0 and key in self._inflight:
            return self._inflight[key]
        self.reads += 1

        async def run() -> Profiled | None:
            try:
                value = await read(*key)
            except Exception:  # the kind not installed, the API slow or down: no collector, no harm
                log.debug("cannot read %s %s/%s", key[1], key[0], key[2], exc_info=True)
                self.remember(key, None, ttl=min(self.ttl, FAILED_TTL))
                raise
            finally:
                self._inflight.pop(key, None)
            self.remember(key, value)
            return value

        task = asyncio.get_running_loop().create_task(run(), name=f"read {key[1]} {key[0]}/{key[2]}")
        task.add_done_callback(_retrieve)
        if self.size > 0:
            self._inflight[key] = task
        return task


def _first_in_order(keys: Sequence[Key], answers: dict[Key, Profiled | None]) -> Key | None:
    """The first profiled candidate, once every candidate before it is answered (not profiled)."""
    for key in keys:
        if key not in answers:
            return None  # a more certain candidate is still being read
        if answers[key] is not None:
            return key
    return None


def _retrieve(task: asyncio.Task[Profiled | None]) -> None:
    """Mark a read's failure as seen: it is logged and remembered, not an unhandled task error."""
    with contextlib.suppress(asyncio.CancelledError):
        task.exception()
