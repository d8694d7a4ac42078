"""What the vetoes and the headroom read from a window: measured quantities, each with its unit and source.

Every value is a mean over the window's training samples (start-up and pauses left out,
:mod:`..features.phases`), over the Job's pods; None where no exporter provided it. Links are read
as bytes against the capacity of the slowest part that could carry them, so a share under the XProf
bar holds on any hardware:

- PCIe: the GPU's host link per direction, from the datasheet generation (``features.hardware``);
- NVLink: the GPU's NVLink bandwidth per datasheet, on parts that have it;
- Ethernet: no capacity is known (NICs export no rate, and a shaped or shared path runs below any
  card's), so a multi-node Job's links are never shown idle;
- InfiniBand: 100 Gb/s, EDR, the slowest rate of TELEMETRY.md's EDR-XDR list, against the node's
  traffic summed over its ports.

The pod's own cgroup signals (the collector's, or the kubelet's PSI) are the job's; node-wide
signals are the node's, neighbours included, and are never read here.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from bottleneck_operator.analysis.features.hardware import spec_for
from bottleneck_operator.analysis.features.phases import Phases
from bottleneck_operator.contract.window import FloatArray, JobWindow

INFINIBAND_BPS = 100e9 / 8  # IB EDR, the slowest rate listed (TELEMETRY.md, "NICs / InfiniBand")


@dataclass(frozen=True)
class Reads:
    """Measured quantities of one window.

    Attributes:
        busy_low: the lower of the GPUs' time-busy readings (GR_ENGINE_ACTIVE, GPU_UTIL). Both the vetoes
            and the step account read this one: the GPUs may have been idle as much as it leaves, so a
            stage is ruled out, and an "at most" speed-up bounded, only by what every reading allows.
        dram: DRAM_ACTIVE, the share of cycles the HBM interface is busy.
        links: link name -> bytes over its capacity (the busier direction), for the links whose bytes
            were read: the bandwidth term of a transfer's time, the headroom's Interconnect wait.
        io_wait, cpu_wait, mem_wait: the pod's PSI "some" shares (time some task waited).
        throttled: share of CFS periods throttled (the pod's cgroup, else cAdvisor's).
        procs_busy: trainer processes each using a full core (the collector's count).
        swapins, oom_kills: the pod's pages back from swap and OOM kills, per second.
        fp32, fp16, tensor: pipe activities, where exported.
        slowdown: share of GPUs reporting a power, thermal or hardware clock slowdown.
    """

    busy_low: float | None = None
    dram: float | None = None
    links: dict[str, float] = field(default_factory=dict)
    io_wait: float | None = None
    cpu_wait: float | None = None
    mem_wait: float | None = None
    throttled: float | None = None
    procs_busy: float | None = None
    swapins: float | None = None
    oom_kills: float | None = None
    fp32: float | None = None
    fp16: float | None = None
    tensor: float | None = None
    slowdown: float | None = None

    @property
    def idle(self) -> float | None:
        """The most the GPUs may have idled: one minus their lower busy reading."""
        return None if self.busy_low is None else max(0.0, 1.0 - min(self.busy_low, 1.0))


def _mean(window: JobWindow, name: str, training: np.ndarray, *, per_node: bool = False) -> float | None:
    """The signal's mean over training samples and pods (over nodes, each once, with ``per_node``)."""
    rows: list[FloatArray] = []
    seen: set[str | None] = set()
    n = len(training)
    for pod in window.pods:
        values = pod.signals.get(name)
        if values is None or len(values) != n:
            continue
        if per_node:
            if pod.node in seen:
                continue
            seen.add(pod.node)
        rows.append(values[training])
    if not rows:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        v = float(np.nanmean(np.vstack(rows)))
    return None if np.isnan(v) else v


def _both(a: float | None, b: float | None, pick: Callable[[float, float], float]) -> float | None:
    """``pick`` (min or max) of the readings present, None when neither is."""
    if a is None or b is None:
        return a if b is None else b
    return pick(a, b)


def read_window(window: JobWindow, phases: Phases) -> Reads:
    """The measured quantities of one window (see the module's docstring)."""
    t = phases.training if len(phases.training) == len(window.timestamps) else np.ones(len(window.timestamps), bool)

    def m(name: str) -> float | None:
        return _mean(window, name, t)

    util = m("gpu_util")
    gr = m("gr_engine_active")
    links = _links(window, t)
    return Reads(
        busy_low=_both(util, gr, min),
        dram=m("dram_active"),
        links=links,
        io_wait=m("sc_psi_io_some"),
        cpu_wait=m("sc_psi_cpu_some"),
        mem_wait=m("sc_psi_mem_some"),
        throttled=_both(m("sc_throttled_frac"), m("cpu_throttled_frac"), max),
        procs_busy=m("sc_procs_busy"),
        swapins=m("sc_swapin_ps"),
        oom_kills=m("sc_oom_kills"),
        fp32=m("fp32_active"),
        fp16=m("fp16_active"),
        tensor=m("tensor_active"),
        slowdown=m("clock_slowdown_frac"),
    )


def _links(window: JobWindow, t: np.ndarray) -> dict[str, float]:
    """Each link the Job may use whose bytes were read, as bytes over capacity."""
    links: dict[str, float] = {}
    pods = window.pods
    spec = spec_for(pods[0].gpu_model if pods else None)
    rx, tx = _mean(window, "pcie_rx_bps", t), _mean(window, "pcie_tx_bps", t)
    if rx is not None and tx is not None:
        links["PCIe"] = max(rx, tx) / spec.pcie_bps
    multi_gpu = sum(p.gpu_count for p in pods) > 1
    if multi_gpu and spec.nvlink_bps > 0:
        total = _both(
            _mean(window, "nvlink_total_bps", t),
            _sum(_mean(window, "nvlink_rx_bps", t), _mean(window, "nvlink_tx_bps", t)),
            max,
        )
        if total is not None:
            links["NVLink"] = total / spec.nvlink_bps
    if len({p.node for p in pods}) > 1:
        # a NIC's rate is not exported, and a shaped or shared link runs far below any card's: the
        # Ethernet path between nodes has no known capacity, so only the RDMA ports are read against one
        ib = _both(_mean(window, "ib_rx_bps", t, per_node=True), _mean(window, "ib_tx_bps", t, per_node=True), max)
        if ib is not None:
            links["InfiniBand"] = ib / INFINIBAND_BPS
    return links


def _sum(a: float | None, b: float | None) -> float | None:
    return None if a is None and b is None else (a or 0.0) + (b or 0.0)
