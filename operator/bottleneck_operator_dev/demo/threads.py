"""Background event loops for the demo and the benchmark: live exporters and the operator itself."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from bottleneck_operator.controller.state import AnalyzerLike
from bottleneck_operator.errors import BottleneckError
from bottleneck_operator.settings import Settings

T = TypeVar("T")


class BackgroundLoop:
    """An asyncio loop on a daemon thread; ``run(coro)`` executes a coroutine there and waits."""

    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        """Run ``coro`` on the loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def close(self) -> None:
        """Stop the loop and its thread."""
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        if not self._loop.is_running():
            self._loop.close()


def _emulator_login(server: str) -> Any:
    import kopf

    return kopf.ConnectionInfo(server=server, token="emulator")  # noqa: S106 - the emulator takes any token


class OperatorThread:
    """The operator (kopf) on its own thread and loop, stopped through kopf's stop flag.

    Args:
        settings: the operator's settings.
        analyzer_factory: optional analyzer (default: the real pipeline).
        clock: the operator's "now" (default: wall time).
        server: the API server's URL (default: credentials as kopf finds them, e.g. ``KUBECONFIG``).
    """

    def __init__(
        self,
        settings: Settings,
        *,
        analyzer_factory: Callable[[], AnalyzerLike] | None = None,
        clock: Callable[[], float] | None = None,
        server: str | None = None,
    ) -> None:
        self.settings = settings
        self._kwargs: dict[str, Any] = {"analyzer_factory": analyzer_factory}
        if server is not None:
            self._kwargs["login"] = lambda: _emulator_login(server)
        if clock is not None:
            self._kwargs["clock"] = clock
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._done: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._run, name="operator", daemon=True)

    def _run(self) -> None:
        import kopf

        from bottleneck_operator.handlers import register_handlers

        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            registry = kopf.OperatorRegistry()
            register_handlers(registry, self.settings, **self._kwargs)
            kopf.run(
                loop=loop,
                registry=registry,
                settings=kopf.OperatorSettings(),
                standalone=True,
                clusterwide=not self.settings.operation.namespaces,
                namespaces=self.settings.operation.namespaces,
                liveness_endpoint=self.settings.operation.liveness_endpoint or None,
                stop_flag=self._stop,
                ready_flag=self._ready,
            )
        except BaseException as exc:  # reported to whoever stops it
            self._done.set_exception(exc)
        else:
            self._done.set_result(None)
        finally:
            self._ready.set()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    def start(self, timeout: float = 60.0) -> OperatorThread:
        """Start the operator; returns once its startup handlers have run."""
        self._thread.start()
        self._ready.wait(timeout)
        if self._done.done() and self._done.exception() is not None:
            raise BottleneckError(f"the operator did not start: {self._done.exception()}")
        return self

    def stop(self, timeout: float = 60.0) -> None:
        """Ask kopf to stop and wait for the thread."""
        self._stop.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise BottleneckError("the operator did not stop in time")
        exc = self._done.exception() if self._done.done() else None
        if exc is not None:
            raise BottleneckError(f"the operator failed: {exc}") from exc
