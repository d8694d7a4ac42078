"""GPU model strings as dcgm-exporter reports them map to exactly one part (no substring matching)."""

from __future__ import annotations

import math

import pytest

from bottleneck_operator.analysis.features.hardware import DEFAULT_SPEC, GB, spec_for

# (modelName as NVML/dcgm-exporter reports it, expected part, NVLink expected)
MODEL_NAMES = [
    ("NVIDIA B200", "B200", True),
    ("NVIDIA H200", "H200 SXM", True),
    ("NVIDIA H200 NVL", "H200 NVL", True),
    ("NVIDIA H100 80GB HBM3", "H100 SXM5", True),
    ("NVIDIA H100 PCIe", "H100 PCIe", False),
    ("NVIDIA H100 NVL", "H100 NVL", True),
    ("NVIDIA H800", "H800 SXM5", True),
    ("NVIDIA H800 PCIe", "H800 PCIe", False),
    ("NVIDIA H800 80GB HBM3", "H800 SXM5", True),
    ("NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB", True),
    ("NVIDIA A100-SXM4-40GB", "A100 SXM4 40GB", True),
    ("NVIDIA A100-PCIE-40GB", "A100 PCIe 40GB", False),
    ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB", False),
    ("NVIDIA A30", "A30", False),
    ("NVIDIA A10G", "A10G", False),
    ("NVIDIA A10", "A10", False),
    ("NVIDIA L4", "L4", False),
    ("NVIDIA L40", "L40", False),
    ("NVIDIA L40S", "L40S", False),
    ("Tesla T4", "T4", False),
    ("Tesla V100-SXM2-16GB", "V100 SXM2", True),
    ("Tesla V100-SXM2-32GB", "V100 SXM2", True),
    ("Tesla V100-PCIE-16GB", "V100 PCIe", False),
    ("Tesla V100S-PCIE-32GB", "V100S PCIe", False),
]


@pytest.mark.parametrize(("model_name", "part", "nvlink"), MODEL_NAMES)
def test_each_reported_model_name_is_its_own_part(model_name: str, part: str, nvlink: bool) -> None:
    spec = spec_for(model_name)
    assert spec.name == part
    assert spec.known
    assert (spec.nvlink_bps > 0) is nvlink


def test_l40s_is_not_l4_and_a100_is_not_a10() -> None:
    assert spec_for("NVIDIA L40S").tflops > 2 * spec_for("NVIDIA L4").tflops
    assert spec_for("NVIDIA A100-SXM4-80GB").memory_bw_bps > 3 * spec_for("NVIDIA A10").memory_bw_bps


@pytest.mark.parametrize("model_name", [None, "", "NVIDIA GeForce RTX 4090", "NVIDIA GH200 480GB", "AMD MI300X"])
def test_unknown_parts_say_so(model_name: str | None) -> None:
    spec = spec_for(model_name)
    assert spec is DEFAULT_SPEC and not spec.known


@pytest.mark.parametrize(
    ("model_name", "profile", "slices", "memory_gb"),
    [
        ("NVIDIA A100-SXM4-80GB", "1g.10gb", 1, 10),
        ("NVIDIA A100-SXM4-80GB", "3g.40gb", 3, 40),
        ("NVIDIA A100-SXM4-40GB", "2g.10gb", 2, 10),
        ("NVIDIA H100 80GB HBM3", "7g.80gb", 7, 80),
        ("NVIDIA H100 80GB HBM3", "1g.20gb", 1, 20),
        ("NVIDIA H100 80GB HBM3", "1g.10gb+me", 1, 10),
        ("NVIDIA H100 NVL", "3g.47gb", 3, 47),
        ("NVIDIA H200", "1g.18gb", 1, 18),
        ("NVIDIA H200", "4g.71gb", 4, 71),
        ("NVIDIA B200", "1g.23gb", 1, 23),
        ("NVIDIA B200", "7g.180gb", 7, 180),
    ],
)
def test_mig_instances_get_their_share(model_name: str, profile: str, slices: int, memory_gb: int) -> None:
    whole, part = spec_for(model_name), spec_for(model_name, profile)
    assert whole.mig_slices == 7
    assert part.tflops == pytest.approx(whole.tflops * slices / 7)
    assert part.memory_gb == memory_gb
    assert part.memory_bw_bps == pytest.approx(whole.memory_bw_bps * min(memory_gb / whole.memory_gb, 1.0))
    assert part.nvlink_bps == 0.0  # MIG instances have no NVLink peer access
    assert profile in part.name and part.known


@pytest.mark.parametrize(("profile", "slices", "memory_gb"), [("1g.6gb", 1, 6), ("2g.12gb", 2, 12), ("4g.24gb", 4, 24)])
def test_a30_divides_into_four_compute_slices_not_seven(profile: str, slices: int, memory_gb: int) -> None:
    whole, part = spec_for("NVIDIA A30"), spec_for("NVIDIA A30", profile)
    assert part.tflops == pytest.approx(whole.tflops * slices / 4)
    assert part.memory_gb == memory_gb and part.nvlink_bps == 0.0


def test_an_unrecognised_mig_profile_leaves_the_whole_part() -> None:
    assert spec_for("NVIDIA A100-SXM4-80GB", "not-a-profile") == spec_for("NVIDIA A100-SXM4-80GB")


def test_pcie_generation_follows_the_part() -> None:
    assert spec_for("NVIDIA H100 PCIe").pcie_bps == 63.0 * GB
    assert spec_for("NVIDIA A100-PCIE-40GB").pcie_bps == 31.5 * GB
    assert spec_for("Tesla T4").pcie_bps == 15.8 * GB


def test_every_known_part_has_its_power_limit_and_unknown_ones_have_none() -> None:
    for model_name, *_ in MODEL_NAMES:
        assert spec_for(model_name).tdp_w > 0, model_name
    assert spec_for("NVIDIA H200").tdp_w == 700 and spec_for("NVIDIA H200").max_clock_mhz == 1980
    assert spec_for("NVIDIA H100 PCIe").tdp_w == 350 and spec_for("NVIDIA L4").tdp_w == 72
    assert math.isnan(DEFAULT_SPEC.tdp_w) and math.isnan(DEFAULT_SPEC.max_clock_mhz)
    # a MIG instance shares the board's power with the others: its limit is not the board's
    assert math.isnan(spec_for("NVIDIA A100-SXM4-80GB", "3g.40gb").tdp_w)
