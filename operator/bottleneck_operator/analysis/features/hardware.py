"""Published capacities of datacenter GPUs, to turn rates into fractions of capacity.

Figures are the vendors' datasheet numbers: dense (not sparse) BF16/FP16 tensor TFLOPS, memory
size and bandwidth, NVLink bandwidth per GPU (both directions summed, as NVIDIA quotes it; 0 where
the part has none or only an optional bridge) and the host PCIe generation. V100, A100 80 GB, H100,
L4, A10 and T4 are the rows of docs/telemetry.md's table (from NVIDIA's datasheets); the others are
from NVIDIA's datasheets for those parts. PCIe x16 per direction: Gen3 ~15.8 GB/s, Gen4 ~31.5 GB/s,
Gen5 ~63 GB/s (from the per-lane rates). Board power (TDP, the default power limit) and maximum boost
clock are the datasheets' too (NaN where the datasheet gives no clock: B200, the NVL parts): what
``DCGM_FI_DEV_POWER_USAGE`` and ``DCGM_FI_DEV_SM_CLOCK`` read against (an H200 at its 700 W limit ran
at 1455-1500 of its 1980 MHz, tests/data/gpu-compute).

A dcgm-exporter ``modelName`` is matched by its exact product token (``L40S`` is never ``L4``,
``A100`` never ``A10``), then by its form factor (SXM, PCIe, NVL) and memory size; a name that
names no known part gets :data:`DEFAULT_SPEC`, whose name is "unknown" so that callers can say so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import NamedTuple

from bottleneck_operator.contract.window import FloatArray

GB = 1e9
NAN = float("nan")

PCIE_X16_BPS: dict[int, float] = {3: 15.8 * GB, 4: 31.5 * GB, 5: 63.0 * GB}


@dataclass(frozen=True)
class GpuSpec:
    name: str
    tflops: float  # dense BF16/FP16 tensor TFLOPS
    memory_gb: float
    memory_bw_bps: float  # HBM/GDDR bandwidth, bytes/s
    nvlink_bps: float  # NVLink bandwidth per GPU, bytes/s, 0 when the part has none
    pcie_gen: int
    tdp_w: float = NAN  # board power limit, W (NaN: not known, or a MIG instance's share)
    max_clock_mhz: float = NAN  # maximum SM boost clock, MHz
    mig_slices: int = 7  # compute slices a MIG-capable part divides into (A30: 4)

    @property
    def pcie_bps(self) -> float:
        """Host link capacity per direction, bytes/s."""
        return PCIE_X16_BPS[self.pcie_gen]

    @property
    def known(self) -> bool:
        """False for the stand-in used when the model name matched no part."""
        return self.name != DEFAULT_SPEC.name


class PodCapacities(NamedTuple):
    """What each pod's GPUs can do, per pod, each of shape (pods, 1): the datasheet figures the derived
    series divide by (NaN where the part is not known)."""

    gpus: FloatArray  # GPUs attributed to the pod
    pcie: FloatArray  # PCIe bytes/s per direction
    nvlink: FloatArray  # NVLink bytes/s (0: none)
    tdp: FloatArray  # board power limit, W
    clock: FloatArray  # maximum SM clock, MHz


def _spec(
    name: str, tflops: float, memory_gb: float, bw_tbs: float, nvlink_gbs: float, gen: int, tdp_w: float, clock: float
) -> GpuSpec:
    return GpuSpec(name, tflops, memory_gb, bw_tbs * 1e12, nvlink_gbs * GB, gen, tdp_w, clock)


# Each product: its variants by form factor and memory size; the first variant is the default.
# A variant key is (form factor or "", memory GB or 0); "" / 0 match any.
_PARTS: dict[str, tuple[tuple[str, int, GpuSpec], ...]] = {
    "B200": (("", 0, _spec("B200", 2250.0, 180, 8.0, 1800, 5, 1000, NAN)),),
    "H200": (
        ("NVL", 0, _spec("H200 NVL", 836.0, 141, 4.8, 900, 5, 600, NAN)),
        ("", 0, _spec("H200 SXM", 989.0, 141, 4.8, 900, 5, 700, 1980)),
    ),
    "H100": (
        ("PCIE", 0, _spec("H100 PCIe", 756.0, 80, 2.0, 0, 5, 350, 1755)),
        ("NVL", 0, _spec("H100 NVL", 835.0, 94, 3.9, 600, 5, 400, NAN)),
        ("", 0, _spec("H100 SXM5", 989.0, 80, 3.35, 900, 5, 700, 1980)),
    ),
    "H800": (
        ("PCIE", 0, _spec("H800 PCIe", 756.0, 80, 2.0, 0, 5, 350, 1755)),
        ("", 0, _spec("H800 SXM5", 989.0, 80, 3.35, 400, 5, 700, 1980)),
    ),
    "A100": (
        ("PCIE", 80, _spec("A100 PCIe 80GB", 312.0, 80, 1.935, 0, 4, 300, 1410)),
        ("PCIE", 0, _spec("A100 PCIe 40GB", 312.0, 40, 1.555, 0, 4, 250, 1410)),
        ("", 40, _spec("A100 SXM4 40GB", 312.0, 40, 1.555, 600, 4, 400, 1410)),
        ("", 0, _spec("A100 SXM4 80GB", 312.0, 80, 2.039, 600, 4, 400, 1410)),
    ),
    "A30": (("", 0, replace(_spec("A30", 165.0, 24, 0.933, 0, 4, 165, 1440), mig_slices=4)),),
    "A10G": (("", 0, _spec("A10G", 125.0, 24, 0.6, 0, 4, 300, 1710)),),
    "A10": (("", 0, _spec("A10", 125.0, 24, 0.6, 0, 4, 150, 1695)),),
    "L40S": (("", 0, _spec("L40S", 362.0, 48, 0.864, 0, 4, 350, 2520)),),
    "L40": (("", 0, _spec("L40", 181.0, 48, 0.864, 0, 4, 300, 2490)),),
    "L4": (("", 0, _spec("L4", 121.0, 24, 0.3, 0, 4, 72, 2040)),),
    "T4": (("", 0, _spec("T4", 65.0, 16, 0.32, 0, 3, 70, 1590)),),
    "V100S": (("", 0, _spec("V100S PCIe", 130.0, 32, 1.134, 0, 3, 250, 1601)),),
    "V100": (
        ("PCIE", 0, _spec("V100 PCIe", 112.0, 16, 0.9, 0, 3, 250, 1380)),
        ("", 0, _spec("V100 SXM2", 125.0, 32, 0.9, 300, 3, 300, 1530)),
    ),
}


# Kept for callers that list the parts the analysis knows.
GPU_SPECS: dict[str, GpuSpec] = {variant.name: variant for variants in _PARTS.values() for *_, variant in variants}

# What the analysis assumes for a GPU it does not know: a mid-range PCIe Gen4 part.
DEFAULT_SPEC = GpuSpec("unknown", 125.0, 24, 0.6e12, 0.0, 4)

_TOKEN = re.compile(r"[A-Z0-9]+")
_MEMORY = re.compile(r"^(\d+)GB$")
_FORMS = {"SXM": "SXM", "SXM2": "SXM", "SXM4": "SXM", "SXM5": "SXM", "HBM3": "SXM", "PCIE": "PCIE", "NVL": "NVL"}
# "1g.10gb", and "1g.10gb+me" for the instance that also holds the media engines.
_MIG = re.compile(r"^(\d)g\.(\d+)gb(?:\+me)?$")


def spec_for(model_name: str | None, mig_profile: str | None = None) -> GpuSpec:
    """The spec of a dcgm-exporter ``modelName`` (e.g. "NVIDIA A100-SXM4-80GB"), or the default.

    Args:
        model_name: the ``modelName`` label.
        mig_profile: the ``GPU_I_PROFILE`` label under MIG (e.g. "1g.10gb"): the instance's share.

    Returns:
        The part's spec, scaled to the MIG instance when there is one.
    """
    if not model_name:
        return DEFAULT_SPEC
    tokens = _TOKEN.findall(model_name.upper())
    product = next((t for t in tokens if t in _PARTS), None)
    if product is None:
        return DEFAULT_SPEC
    form = next((_FORMS[t] for t in tokens if t in _FORMS), "")
    memory = next((int(m.group(1)) for t in tokens if (m := _MEMORY.match(t))), 0)
    spec = _PARTS[product][-1][2]
    for want_form, want_memory, variant in _PARTS[product]:
        if (not want_form or want_form == form) and (not want_memory or want_memory == memory):
            spec = variant
            break
    return _mig_share(spec, mig_profile) if mig_profile else spec


def _mig_share(spec: GpuSpec, profile: str) -> GpuSpec:
    """A MIG instance: g of the part's compute slices (7, or 4 on an A30) and its own memory slice; no NVLink."""
    match = _MIG.match(profile.strip().lower())
    if not match:
        return spec
    slices, memory_gb = int(match.group(1)), float(match.group(2))
    share = min(memory_gb / spec.memory_gb, 1.0)
    return replace(
        spec,
        name=f"{spec.name} MIG {profile}",
        tflops=spec.tflops * min(slices, spec.mig_slices) / spec.mig_slices,
        memory_gb=memory_gb,
        memory_bw_bps=spec.memory_bw_bps * share,
        nvlink_bps=0.0,
        # the board's power is the whole GPU's, every instance's together: not this instance's to read
        tdp_w=NAN,
    )
