"""How much faster the job could run, and what the limiting resource would have to deliver.

Both read the step-time account (:mod:`.headroom_account`). Removing a stall of share ``s`` of wall
time makes a step at most ``1 / (1 - s)`` times faster, and less once the next-busiest stage (busy
``u`` of the time now) saturates, at ``1 / u``. The low end assumes half of the stall time is
recovered, since real stages overlap imperfectly. The same speed-up turns an observed rate into the
rate needed to keep the GPUs busy: ``needed = observed x speed-up``.

A GPU-bound job has no stall worth removing; its further gains are inside the kernels, where
telemetry cannot see: the headroom says what a profile would show instead of inferring a speed-up
from low tensor-pipe activity (tuned LLM training reaches ~40 % MFU).
"""

from __future__ import annotations

from bottleneck_operator.analysis.classify_gates import Checked
from bottleneck_operator.analysis.features import value
from bottleneck_operator.analysis.headroom_account import StepAccount, next_stage, stall_range
from bottleneck_operator.analysis.summary import JobSummary, human_bytes, pct
from bottleneck_operator.contract.verdict import Bottleneck, CapacityNeed, Headroom
from bottleneck_operator.contract.window import FloatArray

DRAM_PRACTICAL = 0.8  # DCGM profiling docs: ~0.8 is the practical maximum of DRAM activity
PROFILE_HINT = (
    "further gains are inside the kernels: a PyTorch profiler trace (read with Holistic Trace Analysis) "
    "shows the split between matrix-multiply, memory-bound and communication kernels and the launch gaps "
    "between them, which telemetry cannot"
)


def estimate_headroom(cls: Bottleneck, x: FloatArray, checked: Checked) -> Headroom | None:
    """Speed-up range if the bottleneck were removed, from the step-time account.

    Args:
        cls: the verdict class (None is returned for Unknown).
        x: the job's feature row.
        checked: the checked classification with its account.

    Returns:
        The range with its basis, or None when GPU activity is unknown.
    """
    acc = checked.account
    if cls is Bottleneck.UNKNOWN or acc is None:
        return None
    if cls is Bottleneck.GPU:
        return _gpu_headroom(acc)
    if cls is Bottleneck.MEMORY and checked.hbm_bound():
        dram = value(x, "dram_active.mean")
        if dram is None:  # bandwidth-bound by the model's reading, with no DRAM activity to size it
            return None
        high = 1.0 + min(1.0, dram / DRAM_PRACTICAL)
        return Headroom(
            1.0 + (high - 1.0) * 0.3,
            high,
            f"DRAM active {pct(dram)} of cycles: halving the bytes moved (mixed precision, fusion) speeds "
            "bandwidth-bound kernels up to ~2x",
        )
    return _stall_headroom(cls, x, acc)


def _gpu_headroom(acc: StepAccount) -> Headroom:
    top, share = acc.top_stall()
    high = max(1.0, 1.0 / max(1.0 - share, 0.1))
    return Headroom(
        1.0,
        high,
        f"GPU-bound: computing {pct(acc.compute)} of training time, and no stall costs more than "
        f"{pct(share)} ({top.value}); {PROFILE_HINT}",
    )


def _stall_headroom(cls: Bottleneck, x: FloatArray, acc: StepAccount) -> Headroom:
    share = acc.shares.get(cls, 0.0)
    gain = acc.speedup(cls)
    nxt, name = next_stage(cls, x)
    low, high = stall_range(1.0 / gain, nxt)
    basis = f"{cls.value} keeps the GPUs waiting {pct(share)} of training time: removing it allows up to {gain:.2g}x"
    if acc.unmeasured and cls is Bottleneck.INTERCONNECT:
        low = min(low, acc.measured_speedup(cls))
        basis = (
            f"GPUs idle {pct(acc.idle)} of training time, and without SM activity up to {pct(acc.unmeasured)} of "
            f"their busy time could be exposed communication: removing it allows {low:.2g}x to {gain:.2g}x"
        )
    if nxt is not None and high < gain - 1e-9:
        basis += f", capped at {high:.2g}x when {name} (now {pct(nxt)} busy) binds"
    basis += "; the low end assumes half the stall time is recovered"
    return Headroom(low, high, basis)


def capacity_needs(cls: Bottleneck, x: FloatArray, summary: JobSummary, checked: Checked) -> tuple[CapacityNeed, ...]:
    """What the limiting resource would have to deliver to keep the GPUs busy, next to what it gives.

    The rate needed is the observed one times the headroom's speed-up, from the same account.

    Args:
        cls: the verdict class.
        x: the job's feature row.
        summary: whole-job totals.
        checked: the checked classification with its account.

    Returns:
        Zero or more capacity items.
    """
    acc = checked.account
    if acc is None or cls in (Bottleneck.UNKNOWN, Bottleneck.GPU):
        return ()
    busy = 1.0 / acc.speedup(cls)
    gpus = f"these {summary.gpus} GPUs" if summary.gpus != 1 else "this GPU"
    if cls is Bottleneck.IO:
        return _io_need(summary, busy, gpus)
    if cls is Bottleneck.CPU:
        return _cpu_need(summary, busy, gpus)
    if cls is Bottleneck.INTERCONNECT:
        return _interconnect_needs(summary, busy, gpus)
    dram = value(x, "dram_active.mean") if cls is Bottleneck.MEMORY else None
    if dram is not None:
        return (
            CapacityNeed(
                "gpu_memory_bandwidth",
                DRAM_PRACTICAL,
                dram,
                "ratio",
                f"GPU memory bandwidth was in use {pct(dram)} of cycles against a practical peak near {pct(DRAM_PRACTICAL)}.",
            ),
        )
    return ()


def _io_need(summary: JobSummary, busy: float, gpus: str) -> tuple[CapacityNeed, ...]:
    """Reads the job would need, from the network when those dominate, else from storage."""
    net, read = summary.net_rx_bps, summary.read_bps
    if net is not None and net > 2 * (read or 0.0):
        rate, what = net, "of network reads"
    elif read is not None:
        rate, what = read, "of storage reads"
    else:
        return ()
    need = rate / busy
    text = f"To keep {gpus} busy this job needs ~{human_bytes(need)} {what}; it gets {human_bytes(rate)}."
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
