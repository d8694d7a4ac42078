"""A virtual GPU fed by the real input pipeline: every batch the pipeline delivers costs a fixed compute time.

The pipeline's processes count delivered batches in a progress file; at each scrape the GPU's busy
fraction over the last interval is ``batches x compute_s / interval`` (at most 1), which is what a
real GPU would show when a step's kernels take ``compute_s`` and the step waits for its batch. Its
other readings follow from that busy fraction the way they do on a real part running the same
kernels: SM activity and tensor-pipe activity a fixed share of busy time, PCIe receive the batches'
host-to-device bytes, the framebuffer as the caching allocator keeps it (constant).

A data-parallel step's collective runs as GPU kernels too: NCCL's kernels stay resident for the whole
exchange, waiting on the bytes its proxy moves over the network, so ``GPU_UTIL`` and the graphics
engine read busy while only the few SMs of its channels are active (TELEMETRY.md, "Reading the
profiling metrics": ``GPU_UTIL`` includes communication; the GPU_UTIL-SM gap is itself a signal).
The pipeline publishes the seconds it spent exchanging, and the GPU counts them as such kernels.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

MIB = 1024 * 1024


def write_progress(path: Path, batches: int, wire_bytes: float = 0.0, collective_s: float = 0.0) -> None:
    """Publish a pipeline's progress (called by the workload after each batch); atomic replace."""
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(f"{batches} {wire_bytes:.0f} {collective_s:.6f}\n")
    os.replace(tmp, path)


def read_progress(paths: list[Path]) -> tuple[float, float, float]:
    """(batches, wire bytes, seconds spent in collectives) summed over the pipeline's progress files."""
    batches = wire = collective = 0.0
    for path in paths:
        with contextlib.suppress(OSError, ValueError, IndexError):
            parts = path.read_text().split()
            batches += float(parts[0])
            wire += float(parts[1])
            collective += float(parts[2]) if len(parts) > 2 else 0.0
    return batches, wire, collective


@dataclass
class VirtualGpu:
    """The GPU side of one recorded pod."""

    compute_s: float  # kernel time of one training step on one batch
    h2d_bytes: float  # bytes copied host -> device per batch
    progress: list[Path]
    model_name: str = "NVIDIA H100 80GB HBM3"
    fb_total_mib: float = 81559.0
    fb_used_mib: float = 61440.0
    sm_share: float = 0.92  # SM activity while the engine is busy: these kernels fill the SMs
    tensor_share: float = 0.55  # bf16 matmuls dominate the step
    dram_share: float = 0.35
    # SM activity of a collective's kernels: a few NCCL channels' blocks on the 132 SMs of an H100
    collective_sm_share: float = 8 / 132
    _last: tuple[float, float, float, float] | None = field(default=None, repr=False)
    busy: float = 0.0
    batches_per_s: float = 0.0
    wire_bytes_per_s: float = 0.0
    collective_busy: float = 0.0

    def device_labels(self) -> dict[str, str]:
        return {}  # the exporter's made-up UUID and bus id stand

    def close(self) -> None:
        """Nothing to release (the real GPU's reader stops its sampling thread here)."""

    def sample(self) -> dict[str, float]:
        """Advance to now and return dcgm-exporter's field values (its names, its units)."""
        now = time.time()
        batches, wire, collective = read_progress(self.progress)
        if self._last is not None and now > self._last[0]:
            dt = now - self._last[0]
            self.batches_per_s = max(0.0, batches - self._last[1]) / dt
            self.wire_bytes_per_s = max(0.0, wire - self._last[2]) / dt
            self.busy = min(1.0, self.batches_per_s * self.compute_s)
            self.collective_busy = min(1.0 - self.busy, max(0.0, collective - self._last[3]) / dt)
        self._last = (now, batches, wire, collective)
        b = self.busy
        engine = b + self.collective_busy
        sm = b * self.sm_share + self.collective_busy * self.collective_sm_share
        return {
            "DCGM_FI_DEV_GPU_UTIL": round(engine * 100),
            "DCGM_FI_DEV_MEM_COPY_UTIL": round(b * self.dram_share * 100),
            "DCGM_FI_DEV_FB_USED": self.fb_used_mib,
            "DCGM_FI_DEV_FB_FREE": self.fb_total_mib - self.fb_used_mib - 512,
            "DCGM_FI_DEV_POWER_USAGE": 70.0 + 630.0 * sm * (0.5 + 0.5 * self.tensor_share),
            "DCGM_FI_DEV_SM_CLOCK": 1980.0,
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE": engine,
            "DCGM_FI_PROF_SM_ACTIVE": sm,
            "DCGM_FI_PROF_SM_OCCUPANCY": b * self.sm_share * 0.45
            + self.collective_busy * self.collective_sm_share * 0.1,
            "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": b * self.tensor_share,
            "DCGM_FI_PROF_DRAM_ACTIVE": b * self.dram_share,
            # Input batches go host -> device; gradients of a socket all-reduce cross PCIe both ways.
            "DCGM_FI_PROF_PCIE_RX_BYTES": self.batches_per_s * self.h2d_bytes + self.wire_bytes_per_s / 2,
            "DCGM_FI_PROF_PCIE_TX_BYTES": 2e6 * b + self.wire_bytes_per_s / 2,
            "DCGM_FI_PROF_NVLINK_TX_BYTES": 0.0,
            "DCGM_FI_PROF_NVLINK_RX_BYTES": 0.0,
        }
