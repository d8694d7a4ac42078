"""Optional GPU readings through NVML (the ``nvidia-ml-py`` package, imported as ``pynvml``).

Never required: the package is an optional extra (``pip install bottleneck-operator[gpu]``) and the
collector normally runs without GPU devices (it requests none, so the device plugin gives it none).
dcgm-exporter remains the GPU source of the analysis; these gauges only help when it is missing.
Every failure (no package, no driver, no device) turns the GPU readings off after one log line.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GpuReading:
    """One GPU as NVML sees it."""

    index: str
    uuid: str
    utilization_ratio: float  # nvmlUtilization_t.gpu / 100: share of time a kernel ran
    memory_used_bytes: float
    memory_total_bytes: float


class Nvml:
    """Lazily initialised NVML; :meth:`read` returns [] for good once anything fails."""

    def __init__(self, *, enabled: bool = True) -> None:
        self._lib: Any = None
        self._handles: list[Any] = []
        self._disabled = not enabled
        self._started = False

    def _start(self) -> None:
        self._started = True
        try:
            import pynvml
        except ImportError:
            log.info("GPU readings off: nvidia-ml-py (pynvml) is not installed")
            self._disabled = True
            return
        try:
            pynvml.nvmlInit()
            count = int(pynvml.nvmlDeviceGetCount())
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        except Exception as exc:  # NVMLError and friends: no driver or no device in this container
            log.info("GPU readings off: NVML unavailable (%s)", exc)
            self._disabled = True
            return
        self._lib = pynvml
        if not self._handles:
            log.info("GPU readings off: NVML sees no GPU in this container")
            self._disabled = True

    def read(self) -> list[GpuReading]:
        """The current readings of every visible GPU; [] when NVML is off or failed."""
        if self._disabled:
            return []
        if not self._started:
            self._start()
            if self._disabled:
                return []
        lib = self._lib
        out: list[GpuReading] = []
        try:
            for index, handle in enumerate(self._handles):
                util = lib.nvmlDeviceGetUtilizationRates(handle)
                mem = lib.nvmlDeviceGetMemoryInfo(handle)
                uuid = lib.nvmlDeviceGetUUID(handle)
                out.append(
                    GpuReading(
                        index=str(index),
                        uuid=uuid.decode() if isinstance(uuid, bytes) else str(uuid),
                        utilization_ratio=float(util.gpu) / 100.0,
                        memory_used_bytes=float(mem.used),
                        memory_total_bytes=float(mem.total),
                    )
                )
        except Exception as exc:  # a GPU fell off the bus, the driver was reloaded, ...
            log.warning("GPU readings off after an NVML error: %s", exc)
            self._disabled = True
            return []
        return out
