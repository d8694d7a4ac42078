"""How much faster the job could run, and what the limiting resource would have to deliver.

The model of a training step is a pipeline whose slowest stage sets the rate. If the GPUs are busy a
fraction ``a`` of the time, removing the stall lets steps run at most ``1/a`` times faster — until the
next-busiest stage (busy ``u`` of the time now) saturates, at ``1/u``. The high end of the range is
``min(1/a, 1/u)``; the low end assumes only half of the stall time is recovered, since real stages
overlap imperfectly. The same busy fraction turns an observed rate into the rate needed to keep the
GPUs busy: ``needed = observed / a``.
"""

from __future__ import annotations

from bottleneck_operator.analysis.features import value
from bottleneck_operator.analysis.summary import JobSummary, human_bytes, pct
from bottleneck_operator.contract.verdict import Bottleneck, CapacityNeed, Headroom
from bottleneck_operator.contract.window import FloatArray

MAX_SPEEDUP = 10.0
# Tensor-pipe activity a well-tuned mixed-precision job reaches in practice (1.0 = a tensor
# instruction every other cycle, which no real model sustains).
TENSOR_PRACTICAL = 0.7
DRAM_PRACTICAL = 0.8  # DCGM profiling docs: ~0.8 is the practical maximum of DRAM activity


def stall_range(busy: float, next_stage: float | None) -> tuple[float, float]:
    """Speed-up range when a stall stage is removed.

    Args:
        busy: GPU busy fraction now (0..1).
        next_stage: busy fraction of the next stage that would bind, or None when unknown.

    Returns:
        (low, high) speed-up factors, both >= 1.
    """
    a = min(max(busy, 1.0 / MAX_SPEEDUP), 1.0)
    high = 1.0 / a
    if next_stage is not None and next_stage > 0:
        high = min(high, 1.0 / min(max(next_stage, 1.0 / MAX_SPEEDUP), 1.0))
    high = max(1.0, high)
    low = 1.0 + (high - 1.0) / 2.0
    return low, high


def _next_stage(cls: Bottleneck, x: FloatArray) -> tuple[float | None, str]:
    """The busiest other stage (busy fraction, name) that would bind once ``cls`` is removed."""
    stages = {
        "CPU": value(x, "cpu_limit_frac.mean"),
        "storage": value(x, "node_disk_busy_frac.mean"),
        "PCIe": value(x, "pcie_rx_frac.mean"),
        "NVLink": value(x, "nvlink_frac.mean"),
    }
    exclude = {Bottleneck.CPU: "CPU", Bottleneck.IO: "storage", Bottleneck.INTERCONNECT: "PCIe"}.get(cls)
    best: tuple[float | None, str] = (None, "")
    for name, v in stages.items():
        if name == exclude or (cls is Bottleneck.INTERCONNECT and name == "NVLink") or v is None:
            continue
        if best[0] is None or v > best[0]:
            best = (min(v, 1.0), name)
    return best


def estimate_headroom(cls: Bottleneck, x: FloatArray, summary: JobSummary) -> Headroom | None:
    """Speed-up range if the bottleneck were removed.

    Args:
        cls: the verdict class (None is returned for Unknown).
        x: the job's feature row.
        summary: whole-job totals.

    Returns:
        The range with its basis, or None when GPU activity is unknown.
    """
    a = summary.gpu_active
    if cls is Bottleneck.UNKNOWN or a is None:
        return None
    if cls is Bottleneck.GPU:
        t = summary.tensor_active
        if t is None:
            high = max(1.0, min(2.0, 1.0 / max(a, 0.5)))
            return Headroom(
                1.0, high, f"GPU-bound at {pct(a)} activity; without tensor-pipe data only kernel-level gains remain"
            )
        high = max(1.0, min(4.0, TENSOR_PRACTICAL / max(t, 0.05)))
        low = 1.0 + (high - 1.0) * 0.3
        return Headroom(
            low,
            high,
            f"GPU-bound; tensor pipes active {pct(t)} against about {pct(TENSOR_PRACTICAL)} in well-tuned mixed-precision "
            "jobs: better kernels or precision could buy up to the high end",
        )
    if cls is Bottleneck.MEMORY:
        dram = value(x, "dram_active.mean")
        host = max(value(x, "node_psi_mem_some.mean") or 0.0, value(x, "sc_psi_mem_some.mean") or 0.0)
        if dram is not None and dram >= 0.5 and host < 0.1:
            high = 1.0 + min(1.0, dram / DRAM_PRACTICAL)
            return Headroom(
                1.0 + (high - 1.0) * 0.3,
                high,
                f"DRAM active {pct(dram)} of cycles: halving the bytes moved (mixed precision, fusion) speeds bandwidth-bound kernels up to ~2x",
            )
    nxt, name = _next_stage(cls, x)
    low, high = stall_range(a, nxt)
    basis = f"GPUs busy {pct(a)}: removing the {cls.value} stall allows up to {1 / max(a, 0.1):.2g}x"
    if nxt is not None and high < 1.0 / max(a, 0.1) - 1e-9:
        basis += f", capped at {high:.2g}x when {name} (now {pct(nxt)} busy) binds"
    basis += "; the low end assumes half the stall time is recovered"
    return Headroom(low, high, basis)


def capacity_needs(cls: Bottleneck, x: FloatArray, summary: JobSummary) -> tuple[CapacityNeed, ...]:
    """What the limiting resource would have to deliver to keep the GPUs busy, next to what it gives.

    Args:
        cls: the verdict class.
        x: the job's feature row.
        summary: whole-job totals.

    Returns:
        Zero or more capacity items.
    """
    a = summary.gpu_active
    if a is None or cls is Bottleneck.UNKNOWN:
        return ()
    busy = min(max(a, 1.0 / MAX_SPEEDUP), 1.0)
    gpus = f"these {summary.gpus} GPUs" if summary.gpus != 1 else "this GPU"
    if cls is Bottleneck.IO:
        return _io_need(summary, busy, gpus)
    if cls is Bottleneck.CPU:
        return _cpu_need(summary, busy, gpus)
    if cls is Bottleneck.INTERCONNECT:
        return _interconnect_needs(summary, busy, gpus)
    if cls is Bottleneck.GPU and summary.tensor_active is not None:
        t = summary.tensor_active
        return (
            CapacityNeed(
                "tensor_pipes",
                TENSOR_PRACTICAL,
                t,
                "ratio",
                f"Tensor pipes were active {pct(t)} of cycles; well-tuned mixed-precision training reaches about {pct(TENSOR_PRACTICAL)}.",
            ),
        )
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
