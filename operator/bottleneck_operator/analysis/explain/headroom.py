"""How much faster the job could run, and what the limiting resource would have to deliver.

Both read the step-time account (:mod:`.account`), which holds measured waits only. Removing a wait
of share ``s`` of wall time makes a step at most ``1 / (1 - s)`` times faster. Where nothing measured
the wait, the headroom is the bare ceiling ``1 / busy`` (every idle moment of the GPUs gone) and says
so. No low end is invented: how much of a stall a fix recovers depends on the fix, so the range runs
from no gain to the measured bound. The same speed-up turns an observed rate into the rate needed to
keep the GPUs busy: ``needed = observed x speed-up``.

A GPU-bound job has no stall worth removing; its further gains are inside the kernels, where
telemetry cannot see: the headroom says what a profile would show.
"""

from __future__ import annotations

from bottleneck_operator.analysis.explain.account import MAX_SPEEDUP, StepAccount
from bottleneck_operator.analysis.explain.datapath import data_path
from bottleneck_operator.analysis.features.levels import DRAM_PEAK
from bottleneck_operator.analysis.features.summary import JobSummary, human_bytes, pct
from bottleneck_operator.contract.verdict import Bottleneck, CapacityNeed, Headroom, Mechanism

PROFILE_HINT = (
    "further gains are inside the kernels: a PyTorch profiler trace (read with Holistic Trace Analysis) "
    "shows the split between matrix-multiply, memory-bound and communication kernels and the launch gaps "
    "between them, which telemetry cannot"
)


def _at_most(speedup: float) -> str:
    """The bound in words: where what is left of the step fell under XProf's 5 % bar it is read there,
    and the bound is a floor of what removing the wait could give, not a ceiling."""
    if speedup >= MAX_SPEEDUP - 1e-9:
        return f"x{MAX_SPEEDUP:.2g} or more (what is left of the step is under 5 %, which telemetry does not resolve)"
    return f"at most x{speedup:.2g}"


def estimate_headroom(cls: Bottleneck, acc: StepAccount, mechanism: Mechanism | None = None) -> Headroom | None:
    """Speed-up range if the bottleneck were removed, from the measured account.

    Args:
        cls: the verdict class (None is returned for Unknown).
        acc: the window's step-time account.
        mechanism: the verdict's mechanism (HBM-bound kernels have no wait to remove).

    Returns:
        The range with its basis, or None when the GPUs' busy share was not read.
    """
    if cls is Bottleneck.UNKNOWN or acc.busy is None:
        return None
    ceiling = acc.ceiling()
    if cls is Bottleneck.GPU or (cls is Bottleneck.MEMORY and mechanism is Mechanism.HBM_BANDWIDTH):
        what = "GPU-bound" if cls is Bottleneck.GPU else "HBM-bandwidth-bound kernels"
        return Headroom(
            1.0,
            ceiling,
            f"{what}: the GPUs were busy {pct(acc.busy)} of training time, so removing every wait outside the "
            f"kernels gives {_at_most(ceiling)}; {PROFILE_HINT}",
        )
    wait = acc.waits.get(cls)
    if wait is None and cls is Bottleneck.INTERCONNECT:
        # collectives run as kernels that keep the GPUs busy while they wait: idle time does not bound them
        return None
    if wait is None:
        return Headroom(
            1.0,
            ceiling,
            f"bare ceiling: the GPUs were idle {pct(acc.idle or 0.0)} of training time; if all of it is spent "
            f"waiting on {cls.value}, removing it gives {_at_most(ceiling)} (no signal measured the "
            f"{cls.value} wait itself)",
        )
    high = acc.speedup(cls)
    return Headroom(
        1.0,
        high,
        f"{cls.value} waits measured at {pct(wait.share)} of training time ({wait.what}): removing them gives "
        f"{_at_most(high)}",
    )


def capacity_needs(
    cls: Bottleneck, summary: JobSummary, acc: StepAccount, dram: float | None = None
) -> tuple[CapacityNeed, ...]:
    """What the limiting resource would have to deliver to keep the GPUs busy, next to what it gives.

    The rate needed is the observed one times the headroom's speed-up, from the same account.

    Args:
        cls: the verdict class.
        summary: whole-job totals.
        acc: the window's step-time account.
        dram: DRAM activity, for Memory.

    Returns:
        Zero or more capacity items.
    """
    if acc.busy is None or cls in (Bottleneck.UNKNOWN, Bottleneck.GPU):
        return ()
    busy = 1.0 / acc.speedup(cls)
    gpus = f"these {summary.gpus} GPUs" if summary.gpus != 1 else "this GPU"
    if cls is Bottleneck.IO:
        return _io_need(summary, busy, gpus)
    if cls is Bottleneck.CPU:
        return _cpu_need(summary, busy, gpus)
    if cls is Bottleneck.INTERCONNECT:
        return _interconnect_needs(summary, busy, gpus)
    if cls is Bottleneck.MEMORY and dram is not None:
        return (
            CapacityNeed(
                "gpu_memory_bandwidth",
                DRAM_PEAK,
                dram,
                "ratio",
                f"GPU memory bandwidth was in use {pct(dram)} of cycles against a practical peak near {pct(DRAM_PEAK)}.",
            ),
        )
    return ()


def _io_need(summary: JobSummary, busy: float, gpus: str) -> tuple[CapacityNeed, ...]:
    """Reads the job would need over the way that carried its data (the IO mechanism's data path)."""
    carrier = data_path(summary).carrier
    if carrier is None:
        return ()
    rate, what = carrier
    need = rate / busy
    text = f"To keep {gpus} busy this job needs ~{human_bytes(need)} of {what}; it gets {human_bytes(rate)}."
    return (CapacityNeed("storage_read", need, rate, "B/s", text),)


def _cpu_need(summary: JobSummary, busy: float, gpus: str) -> tuple[CapacityNeed, ...]:
    if summary.cpu_cores is None:
        return ()
    need = summary.cpu_cores / busy
    lim = f" (limit {summary.cpu_limit_cores:.3g})" if summary.cpu_limit_cores else ""
    return (
        CapacityNeed(
            "cpu_cores",
            need,
            summary.cpu_cores,
            "cores",
            f"To keep {gpus} busy this job needs ~{need:.3g} cores of input processing; it gets {summary.cpu_cores:.3g}{lim}.",
        ),
    )


def _interconnect_needs(summary: JobSummary, busy: float, gpus: str) -> tuple[CapacityNeed, ...]:
    """One item per link that carried traffic: PCIe host-to-device, NVLink, the network."""
    links = [
        ("pcie_host_to_device", summary.pcie_rx_bps, summary.pcie_capacity_bps),
        ("nvlink", summary.nvlink_bps, summary.nvlink_capacity_bps),
        ("network", None if summary.net_rx_bps is None else summary.net_rx_bps + (summary.net_tx_bps or 0.0), 0.0),
    ]
    out: list[CapacityNeed] = []
    for name, rate, cap in links:
        if rate is None or rate <= 0:
            continue
        need = rate / busy
        tail = f" against a link capacity of {human_bytes(cap)}" if cap else ""
        out.append(
            CapacityNeed(
                name,
                need,
                rate,
                "B/s",
                f"To keep {gpus} busy the {name.replace('_', ' ')} traffic would need ~{human_bytes(need)}; it carries {human_bytes(rate)}{tail}.",
            )
        )
    return tuple(out)
