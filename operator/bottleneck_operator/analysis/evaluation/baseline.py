"""The threshold-rule baseline: what a user might run instead of the trained model.

The rules follow the published ones (TELEMETRY.md, "Peers' rules worth knowing"):

- SageMaker Debugger CPUBottleneck: GPU utilisation < 10 % while CPU > 90 % in more than half the samples.
- SageMaker Debugger IOBottleneck: iowait > 50 % while GPU utilisation is low in more than half the samples.
- SageMaker Debugger LowGPUUtilization: p95 of GPU utilisation < 70 %; otherwise the GPU is the bound.
- XProf input-pipeline analysis: a job whose GPU waits is input-bound; we split input-bound into IO or
  CPU by whichever of iowait and CPU busy is higher.
- torchscope-style transfer rule: host-to-device copies dominating — PCIe or NVLink traffic above 70 % of
  the link while GPU utilisation is low — means Interconnect.
- Memory: GPU framebuffer >= 95 % full, or the node nearly out of memory (available < 5 %) or swapping.

They read only the fields every cluster has (``GPU_UTIL``, node CPU, framebuffer) plus PCIe/NVLink when
present, as these tools do.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bottleneck_operator.analysis.features.hardware import spec_for
from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator.contract.window import FloatArray, JobWindow

GPU_LOW = 0.10
CPU_HIGH = 0.90
IOWAIT_HIGH = 0.50
SHARE = 0.5
P95_LOW = 0.70
LINK_HIGH = 0.70


def _stack(window: JobWindow, name: str) -> FloatArray | None:
    rows = [p.signals[name] for p in window.pods if name in p.signals]
    if not rows:
        return None
    t = min(len(r) for r in rows)
    return np.asarray(np.nanmean(np.vstack([r[:t] for r in rows]), axis=0), dtype=np.float64)


def _share(cond: npt.NDArray[np.bool_], valid: npt.NDArray[np.bool_]) -> float:
    n = int(valid.sum())
    return float((cond & valid).sum() / n) if n else 0.0


def _mean(x: FloatArray | None) -> float:
    if x is None or not np.any(~np.isnan(x)):
        return float("nan")
    return float(np.nanmean(x))


def rule_verdict(window: JobWindow) -> Bottleneck:
    """The class the threshold rules give for a window.

    Args:
        window: the job window.

    Returns:
        One of the five classes, or Unknown when there is no GPU utilisation at all.
    """
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return _rules(window)


def _rules(window: JobWindow) -> Bottleneck:
    util = _stack(window, "gpu_util")
    if util is None or not np.any(~np.isnan(util)):
        return Bottleneck.UNKNOWN
    fb = _stack(window, "fb_used_frac")
    avail = _stack(window, "node_mem_avail_frac")
    swap = _stack(window, "node_swap_used_frac")
    if _mean(fb) >= 0.95 or _mean(avail) < 0.05 or _mean(swap) > 0.5:
        return Bottleneck.MEMORY
    valid = ~np.isnan(util)
    low = util < GPU_LOW
    cpu = _stack(window, "node_cpu_busy_frac")
    iowait = _stack(window, "node_cpu_iowait_frac")
    if cpu is not None:
        t = min(len(cpu), len(util))
        if _share((low[:t] & (cpu[:t] > CPU_HIGH)), valid[:t]) > SHARE:
            return Bottleneck.CPU
    if iowait is not None:
        t = min(len(iowait), len(util))
        if _share((util[:t] < P95_LOW) & (iowait[:t] > IOWAIT_HIGH), valid[:t]) > SHARE:
            return Bottleneck.IO
    p95 = float(np.nanpercentile(util, 95))
    spec = spec_for(next((p.gpu_model for p in window.pods if p.gpu_model), None))
    pcie = _mean(_stack(window, "pcie_rx_bps")) / spec.pcie_bps
    nvl = _mean(_stack(window, "nvlink_total_bps")) / spec.nvlink_bps if spec.nvlink_bps else float("nan")
    if p95 < P95_LOW and (pcie > LINK_HIGH or nvl > LINK_HIGH):
        return Bottleneck.INTERCONNECT
    if p95 >= P95_LOW:
        return Bottleneck.GPU
    # Low utilisation without a matching rule: "input-bound" in XProf's terms.
    return Bottleneck.IO if _mean(iowait) > _mean(cpu) else Bottleneck.CPU
