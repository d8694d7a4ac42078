"""The GPU recordings' NVML reader turns NVML's units into dcgm-exporter's.

No GPU runs here, so NVML itself is replaced by a small stand-in module with the calls the reader
makes; what is checked is the reader's own arithmetic: GPM percentages to DCGM ratios, MiB/s to
bytes/s, metrics NVML refuses left out, and the window summary written into truth.json.
"""

from __future__ import annotations

import sys
import time
import types
from typing import Any

import pytest
from recordings.nvml_gpu import GPM_FIELDS, MIB, NvmlGpu

NOT_SUPPORTED = 3  # NVML_ERROR_NOT_SUPPORTED


class _Metric:
    def __init__(self) -> None:
        self.metricId = 0
        self.nvmlReturn = 0
        self.value = 0.0


class _MetricsGet:
    def __init__(self) -> None:
        self.metrics = [_Metric() for _ in range(len(GPM_FIELDS))]


def _fake_nvml(*, gpm: bool) -> types.ModuleType:
    nv = types.ModuleType("pynvml")
    ns = types.SimpleNamespace
    values = {1: 97.0, 2: 94.0, 3: 14.0, 5: 91.0, 10: 17.0, 20: 4.0, 21: 12.0}  # GPM percentages, MiB/s

    def metrics_get(get: Any) -> Any:
        for m in get.metrics:
            if m.metricId in values:
                m.value = values[m.metricId]
            else:
                m.nvmlReturn = NOT_SUPPORTED
        return get

    nv.__dict__.update(
        NVMLError=RuntimeError, NVML_CLOCK_SM=1, NVML_CLOCK_MEM=2, NVML_TEMPERATURE_GPU=0,
        NVML_GPM_METRICS_GET_VERSION=1, nvmlInit=lambda: None, nvmlShutdown=lambda: None,
        nvmlDeviceGetHandleByIndex=lambda i: i, nvmlDeviceGetName=lambda h: b"NVIDIA H200",
        nvmlDeviceGetUUID=lambda h: "GPU-0f0e0d0c", nvmlDeviceGetPciInfo=lambda h: ns(busId=b"00000000:1B:00.0"),
        nvmlGpmQueryDeviceSupport=lambda h: ns(isSupportedDevice=int(gpm)), nvmlGpmSampleAlloc=object,
        nvmlGpmSampleFree=lambda s: None, nvmlGpmSampleGet=lambda h, s: s, c_nvmlGpmMetricsGet_t=_MetricsGet,
        nvmlGpmMetricsGet=metrics_get, nvmlDeviceGetUtilizationRates=lambda h: ns(gpu=98, memory=21),
        nvmlDeviceGetMemoryInfo=lambda h: ns(used=40 * 1024 * MIB, free=100 * 1024 * MIB),
        nvmlDeviceGetPowerUsage=lambda h: 692_000, nvmlDeviceGetClockInfo=lambda h, c: 1980,
        nvmlDeviceGetTemperature=lambda h, t: 51,
    )  # fmt: skip
    return nv


def _first_reading(gpu: NvmlGpu) -> dict[str, float]:
    deadline = time.time() + 5
    while not gpu.sample() and time.time() < deadline:
        time.sleep(0.01)
    return gpu.sample()


def test_gpm_readings_in_dcgm_units(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml(gpm=True))
    gpu = NvmlGpu(interval=0.02)
    try:
        r = _first_reading(gpu)
        summary = gpu.summary(0.0, time.time() + 1)
    finally:
        gpu.close()
    assert gpu.gpm and gpu.model_name == "NVIDIA H200"
    assert gpu.device_labels() == {"gpu": "0", "UUID": "GPU-0f0e0d0c", "pci_bus_id": "00000000:1B:00.0",
                                   "device": "nvidia0"}  # fmt: skip
    assert r["DCGM_FI_DEV_GPU_UTIL"] == 98 and r["DCGM_FI_DEV_FB_USED"] == 40 * 1024
    assert r["DCGM_FI_DEV_POWER_USAGE"] == pytest.approx(692.0)
    assert r["DCGM_FI_PROF_SM_ACTIVE"] == pytest.approx(0.94)
    assert r["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"] == pytest.approx(0.91)
    assert r["DCGM_FI_PROF_PCIE_RX_BYTES"] == pytest.approx(12 * MIB)
    assert "DCGM_FI_PROF_NVLINK_TX_BYTES" not in r  # NVML refused it: left out, not zero
    assert summary["readings"] >= 1 and summary["gpu_util"] == pytest.approx(0.98)
    assert summary["pcie_rx_gb_per_s"] == pytest.approx(12 * MIB / 1e9, abs=1e-4)


def test_without_gpm_only_device_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml(gpm=False))
    gpu = NvmlGpu(interval=0.02)
    try:
        r = _first_reading(gpu)
    finally:
        gpu.close()
    assert not gpu.gpm
    assert r["DCGM_FI_DEV_GPU_UTIL"] == 98
    assert not [k for k in r if k.startswith("DCGM_FI_PROF_")]
