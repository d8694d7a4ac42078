"""Published capacities of common datacenter GPUs, to turn rates into fractions of capacity.

Figures are the vendors' datasheet numbers as collected in the project's telemetry notes: dense
BF16/FP16 tensor TFLOPS, memory size and bandwidth, NVLink bandwidth per GPU (both directions
summed, as NVIDIA quotes it) and the host PCIe generation. PCIe x16 per direction: Gen3 ~15.8 GB/s,
Gen4 ~31.5 GB/s, Gen5 ~63 GB/s (from the per-lane rates).
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1e9

PCIE_X16_BPS: dict[int, float] = {3: 15.8 * GB, 4: 31.5 * GB, 5: 63.0 * GB}


@dataclass(frozen=True)
class GpuSpec:
    name: str
    tflops: float  # dense BF16/FP16 tensor TFLOPS
    memory_gb: float
    memory_bw_bps: float  # HBM/GDDR bandwidth, bytes/s
    nvlink_bps: float  # NVLink bandwidth per GPU, bytes/s, 0 when the part has none
    pcie_gen: int

    @property
    def pcie_bps(self) -> float:
        """Host link capacity per direction, bytes/s."""
        return PCIE_X16_BPS[self.pcie_gen]


# Order matters: the first key found in the modelName wins ("A100" before "A10").
GPU_SPECS: dict[str, GpuSpec] = {
    "H100 PCIE": GpuSpec("H100 PCIe", 756.0, 80, 2.0e12, 0.0, 5),
    "H100": GpuSpec("H100 SXM5", 989.0, 80, 3.35e12, 900 * GB, 5),
    "A100": GpuSpec("A100 SXM4 80GB", 312.0, 80, 2.039e12, 600 * GB, 4),
    "V100": GpuSpec("V100 SXM2", 125.0, 32, 0.9e12, 300 * GB, 3),
    "L4": GpuSpec("L4", 121.0, 24, 0.3e12, 0.0, 4),
    "A10": GpuSpec("A10", 125.0, 24, 0.6e12, 0.0, 4),
    "T4": GpuSpec("T4", 65.0, 16, 0.32e12, 0.0, 3),
}

# What the analysis assumes for a GPU it does not know: a mid-range PCIe Gen4 part.
DEFAULT_SPEC = GpuSpec("unknown", 125.0, 24, 0.6e12, 0.0, 4)


def spec_for(model_name: str | None) -> GpuSpec:
    """The spec of a dcgm-exporter ``modelName`` (e.g. "NVIDIA A100-SXM4-80GB"), or the default."""
    if not model_name:
        return DEFAULT_SPEC
    upper = model_name.upper().replace("-", " ")
    for key, spec in GPU_SPECS.items():
        if key in upper:
            return spec
    return DEFAULT_SPEC
