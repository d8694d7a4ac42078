"""A real GPU read through NVML and served under dcgm-exporter's names (the ``gpu-*`` recordings).

dcgm-exporter publishes DCGM's fields. On Hopper, DCGM takes its profiling fields
(``DCGM_FI_PROF_*``: graphics-engine, SM, tensor-pipe and DRAM activity, PCIe and NVLink bytes) from
the GPU Performance Monitoring counters (GPM), which NVML exposes too (``nvmlGpmMetricsGet``), and
its device fields (``DCGM_FI_DEV_*``) from the same NVML queries used here. A thread takes one
reading a second, the GPM metrics over that second, and a scrape returns the latest reading, as
dcgm-exporter returns DCGM's latest value. Where GPM is not supported (a part before Hopper, or a
virtual machine that hides it) only the device fields are published, as dcgm-exporter does without
its profiling module.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from typing import Any

MIB = 1024 * 1024

# DCGM profiling field -> (GPM metric id, scale to DCGM's unit). GPM gives percentages and MiB/s;
# DCGM gives ratios and bytes/s. Ids are NVML's NVML_GPM_METRIC_* values (nvml.h).
GPM_FIELDS: dict[str, tuple[int, float]] = {
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": (1, 0.01),
    "DCGM_FI_PROF_SM_ACTIVE": (2, 0.01),
    "DCGM_FI_PROF_SM_OCCUPANCY": (3, 0.01),
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": (5, 0.01),
    "DCGM_FI_PROF_DRAM_ACTIVE": (10, 0.01),
    "DCGM_FI_PROF_PIPE_FP64_ACTIVE": (11, 0.01),
    "DCGM_FI_PROF_PIPE_FP32_ACTIVE": (12, 0.01),
    "DCGM_FI_PROF_PIPE_FP16_ACTIVE": (13, 0.01),
    "DCGM_FI_PROF_PCIE_TX_BYTES": (20, MIB),
    "DCGM_FI_PROF_PCIE_RX_BYTES": (21, MIB),
    "DCGM_FI_PROF_NVLINK_RX_BYTES": (60, MIB),
    "DCGM_FI_PROF_NVLINK_TX_BYTES": (61, MIB),
}

# The readings a recording's truth.json summarises over its window (name in truth -> DCGM field, scale).
SUMMARY: dict[str, tuple[str, float]] = {
    "gpu_util": ("DCGM_FI_DEV_GPU_UTIL", 0.01),
    "gr_engine_active": ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 1.0),
    "sm_active": ("DCGM_FI_PROF_SM_ACTIVE", 1.0),
    "sm_occupancy": ("DCGM_FI_PROF_SM_OCCUPANCY", 1.0),
    "tensor_active": ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 1.0),
    "dram_active": ("DCGM_FI_PROF_DRAM_ACTIVE", 1.0),
    "pcie_rx_gb_per_s": ("DCGM_FI_PROF_PCIE_RX_BYTES", 1e-9),
    "pcie_tx_gb_per_s": ("DCGM_FI_PROF_PCIE_TX_BYTES", 1e-9),
    "power_w": ("DCGM_FI_DEV_POWER_USAGE", 1.0),
    "sm_clock_mhz": ("DCGM_FI_DEV_SM_CLOCK", 1.0),
}


class NvmlGpu:
    """GPU 0 of this machine, sampled once a second while a recording runs."""

    def __init__(self, index: int = 0, interval: float = 1.0) -> None:
        import pynvml

        self._nv: Any = pynvml
        pynvml.nvmlInit()
        self._handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        self.index = index
        self.model_name = _text(pynvml.nvmlDeviceGetName(self._handle))
        self.uuid = _text(pynvml.nvmlDeviceGetUUID(self._handle))
        self.pci_bus_id = _text(pynvml.nvmlDeviceGetPciInfo(self._handle).busId)
        self.gpm = _gpm_supported(pynvml, self._handle)
        self.interval = interval
        self.history: list[tuple[float, dict[str, float]]] = []
        self._latest: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nvml-sampler", daemon=True)
        self._thread.start()

    def device_labels(self) -> dict[str, str]:
        return {"gpu": str(self.index), "UUID": self.uuid, "pci_bus_id": self.pci_bus_id,
                "device": f"nvidia{self.index}"}  # fmt: skip

    def sample(self) -> dict[str, float]:
        """The latest second's readings under DCGM's names and units (empty before the first second)."""
        with self._lock:
            return dict(self._latest)

    def summary(self, start: float, end: float) -> dict[str, float]:
        """Means over the readings taken in [start, end], for truth.json."""
        with self._lock:
            rows = [r for t, r in self.history if start <= t <= end]
        out: dict[str, float] = {"readings": float(len(rows))}
        for name, (field, scale) in SUMMARY.items():
            values = [r[field] for r in rows if field in r]
            if values:
                out[name] = round(sum(values) / len(values) * scale, 4)
        return out

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        with contextlib.suppress(Exception):
            self._nv.nvmlShutdown()

    def _run(self) -> None:
        nv = self._nv
        samples = [nv.nvmlGpmSampleAlloc(), nv.nvmlGpmSampleAlloc()] if self.gpm else []
        if samples:
            nv.nvmlGpmSampleGet(self._handle, samples[0])
        while not self._stop.wait(self.interval):
            reading = self._device_fields()
            if samples:
                nv.nvmlGpmSampleGet(self._handle, samples[1])
                reading.update(self._gpm_fields(samples[0], samples[1]))
                samples.reverse()
            with self._lock:
                self._latest = reading
                self.history.append((time.time(), reading))
        for s in samples:
            nv.nvmlGpmSampleFree(s)

    def _device_fields(self) -> dict[str, float]:
        nv, h = self._nv, self._handle
        util = nv.nvmlDeviceGetUtilizationRates(h)
        mem = nv.nvmlDeviceGetMemoryInfo(h)
        out = {
            "DCGM_FI_DEV_GPU_UTIL": float(util.gpu),
            "DCGM_FI_DEV_MEM_COPY_UTIL": float(util.memory),
            "DCGM_FI_DEV_FB_USED": mem.used / MIB,
            "DCGM_FI_DEV_FB_FREE": mem.free / MIB,
            "DCGM_FI_DEV_POWER_USAGE": nv.nvmlDeviceGetPowerUsage(h) / 1000.0,
            "DCGM_FI_DEV_SM_CLOCK": float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
            "DCGM_FI_DEV_MEM_CLOCK": float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)),
        }
        with contextlib.suppress(nv.NVMLError):
            out["DCGM_FI_DEV_GPU_TEMP"] = float(nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))
        return out

    def _gpm_fields(self, first: Any, second: Any) -> dict[str, float]:
        nv = self._nv
        get = nv.c_nvmlGpmMetricsGet_t()
        get.version = nv.NVML_GPM_METRICS_GET_VERSION
        get.numMetrics = len(GPM_FIELDS)
        get.sample1, get.sample2 = first, second
        for i, (metric, _) in enumerate(GPM_FIELDS.values()):
            get.metrics[i].metricId = metric
        try:
            nv.nvmlGpmMetricsGet(get)
        except nv.NVMLError:
            return {}
        out: dict[str, float] = {}
        for i, (field, (_, scale)) in enumerate(GPM_FIELDS.items()):
            m = get.metrics[i]
            if int(m.nvmlReturn) == 0 and math.isfinite(m.value):
                out[field] = max(0.0, float(m.value)) * scale
        return out


def _gpm_supported(nv: Any, handle: Any) -> bool:
    try:
        return bool(nv.nvmlGpmQueryDeviceSupport(handle).isSupportedDevice)
    except Exception:  # an older driver or a virtual machine without GPM: device fields only
        return False


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value
