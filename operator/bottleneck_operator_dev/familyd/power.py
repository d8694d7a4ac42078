"""GPU power and clocks: what a power limit below the demand does to the SM clock.

Dynamic power grows with clock times voltage squared, and voltage with clock in the DVFS range,
so a board held at a limit below its demand lowers its clock roughly as the cube root of the
ratio of allowed to demanded dynamic power (an exponent of 0.4 here allows for the static part).
Kernels of different kinds draw different power: tensor-core math the most, HBM-bound kernels
less, NCCL's copy kernels (a few SMs) least. The figures are estimates, kept within the board's
enforced limit as NVML reports it.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator_dev.familyd.hardware import Board
from bottleneck_operator_dev.familyd.stages import FloatArray

# Dynamic power per unit of time share, relative to the board's TDP headroom at boost (estimates).
POWER_WEIGHT = {"bf16": 1.0, "tf32": 0.9, "fp32": 0.8}
HBM_WEIGHT = 0.7
NCCL_WEIGHT = 0.3
CLOCK_EXPONENT = 0.4
LOWEST_CLOCK = 0.45


def dynamic_demand(board: Board, intensity: float, activity: FloatArray) -> FloatArray:
    """Watts above idle the kernels would draw at the boost clock."""
    return (board.tdp_w - board.idle_w) * intensity * activity


def clock_ratio(board: Board, cap_w: float, demand: FloatArray) -> FloatArray:
    """The SM clock (share of boost) a board settles at under its enforced limit."""
    allowed = max(cap_w - board.idle_w, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(demand > allowed, (allowed / np.maximum(demand, 1e-9)) ** CLOCK_EXPONENT, 1.0)
    return np.clip(ratio, LOWEST_CLOCK, 1.0)


def activity(precision: str, math_share: FloatArray, hbm_share: FloatArray, nccl_share: FloatArray) -> FloatArray:
    """Power-weighted kernel time share (1.0: tensor-core math all the time)."""
    return POWER_WEIGHT[precision] * math_share + HBM_WEIGHT * hbm_share + NCCL_WEIGHT * nccl_share


def board_power(
    board: Board, cap_w: float, demand: FloatArray, ratio: FloatArray, rng: np.random.Generator
) -> FloatArray:
    """Power draw, W: the demand where it fits under the limit, else just under the limit.

    A capped board's controller holds the average a little under the limit; the reading
    fluctuates by a percent or two and never exceeds the enforced limit.
    """
    capped = ratio < 1.0
    drawn = board.idle_w + demand * np.where(capped, 0.0, 1.0)
    held = cap_w * rng.uniform(0.955, 0.995, size=np.shape(demand))
    noisy = drawn * (1.0 + 0.015 * rng.standard_normal(np.shape(demand)))
    return np.minimum(np.where(capped, held, noisy), cap_w * 0.999)
