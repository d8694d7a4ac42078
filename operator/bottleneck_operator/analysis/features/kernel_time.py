"""What the GPUs' kernels do with their time: how long they run, whether they fill the SMs, and how much
of it is small kernels launched one after another.

The evidence gates read launch gaps as GPU evidence, the mechanism reads small kernels as launch-bound,
and both read the kernels' time from the graphics engine, else from ``GPU_UTIL`` less the copy engines'.
"""

from __future__ import annotations

from collections.abc import Callable

from bottleneck_operator.analysis.features.derived import copy_engine_share, small_kernel_share
from bottleneck_operator.analysis.features.series_names import FeatureKey, Series


def launch_gap(f: Callable[[FeatureKey], float | None]) -> float | None:
    """Time in small kernels between collectives: kernels launched one after another.

    Kernels that keep neither the tensor pipes nor HBM busy (``launch_gap`` in :mod:`.derived`) run
    for a share of the time and the GPU idles between them: it waits on the host thread that launches
    them, not on a data stage (an H200 ran a 256-wide MLP's kernels 48 % of the time with tensor and
    DRAM activity at 0.0, tests/data/gpu-launch). NCCL's kernels look the same, so the feature leaves
    out every sample in which a link carries collective bytes (Interconnect's gates read those). The
    window's one-way traffic is no reason to discard the rest: a dataset streamed in runs no kernel
    on the GPU.

    Kernels that fill the SMs are not small whatever their pipes (:func:`sms_filled`).

    Args:
        f: reads a feature by name (None when missing).

    Returns:
        The share, or None when missing (the explanations read launches binding from their ``LAUNCH_GAP``).
    """
    return 0.0 if sms_filled(f) else f(Series.LAUNCH_GAP.mean)


# SM activity per unit of kernel time from which the kernels fill the SMs: fp32 products on the FP32
# units read 0.97 with the tensor pipes at 0.0 and DRAM at 0.05 (tests/data/gpu-compute-fp32); small
# kernels launched one by one read 0.04 and 0.52 (gpu-launch, gpu-launch-wide)
SM_FULL = 0.8


def sms_filled(f: Callable[[FeatureKey], float | None]) -> bool:
    """The kernels keep the SMs busy for most of their time: compute on the FP32 units (or any pipe the
    profiling fields do not name), not small kernels, whatever the tensor pipes and HBM read."""
    return _fills_sms(f(Series.SM_ACTIVE.mean), kernel_time(f))


def _fills_sms(sm: float | None, kt: float | None) -> bool:
    return sm is not None and kt is not None and kt > 0 and sm / kt >= SM_FULL


def kernel_time(f: Callable[[FeatureKey], float | None]) -> float | None:
    """The share of time kernels ran: the graphics engine's, else ``GPU_UTIL`` less the copy engines'.

    ``GPU_UTIL`` counts copies too: pinned copies streaming at the link's rate read 0.99 with the SMs
    idle (tests/data/gpu-h2d-pinned).
    """
    gr = f(Series.GR_ENGINE_ACTIVE.mean)
    if gr is not None:
        return gr
    util = f(Series.GPU_UTIL.mean)
    if util is None:
        return None
    copying = float(copy_engine_share(f(Series.PCIE_RX_FRAC.mean) or 0.0, f(Series.PCIE_TX_FRAC.mean) or 0.0))
    return max(util - copying, 0.0)


def small_kernel_time(f: Callable[[FeatureKey], float | None]) -> float | None:
    """The window's time in kernels that keep neither the tensor pipes nor HBM busy nor the SMs full,
    links or not.

    What ``launch_gap`` reads sample by sample outside the samples with collective bytes; once the
    class is GPU, the links are not what the kernels wait on, so the mechanism reads every sample.
    """
    kt = kernel_time(f)
    pipes = [v for v in (f(Series.TENSOR_ACTIVE.mean), f(Series.HBM_BUSY.mean)) if v is not None]
    if kt is None or not pipes:
        return None
    return 0.0 if _fills_sms(f(Series.SM_ACTIVE.mean), kt) else float(small_kernel_share(kt, max(pipes)))
