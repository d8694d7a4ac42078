"""Evidence for a verdict: the signals that support its class, each against a reference.

The first item after GPU idleness is the measured wait of the class where something measured it
(:mod:`.account`: the pod's PSI share, CFS throttling, link bytes against capacity). Then come the
class's other candidate signals (the typical signatures of docs/analysis.md, tabled in
:mod:`.candidates`), each with a reference (a capacity, a cited level or the whole) and a strength that
says how far the observation is from where it counts towards the reference. The framebuffer's fill is
never evidence, and node-wide CPU busy and pressure are context (:func:`context_notes`), not evidence
for CPU. :mod:`.advice` chooses recommendations by the signals that appear in the evidence.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator.analysis.checks.reads import Reads
from bottleneck_operator.analysis.explain.account import StepAccount
from bottleneck_operator.analysis.explain.candidates import CANDIDATES, COLLECTIVE_NET_LOG, IDLE, Candidate, speaks_for
from bottleneck_operator.analysis.explain.datapath import NETWORK_READS, DataPath, data_path
from bottleneck_operator.analysis.features.extract import value
from bottleneck_operator.analysis.features.levels import DRAM_PEAK
from bottleneck_operator.analysis.features.series_names import FeatureKey, Series
from bottleneck_operator.analysis.features.summary import JobSummary, human_bytes, pct
from bottleneck_operator.contract.verdict import Bottleneck, Evidence, Mechanism
from bottleneck_operator.contract.window import FloatArray, JobWindow

_STALL = (Bottleneck.IO, Bottleneck.CPU, Bottleneck.INTERCONNECT)


# TELEMETRY.md ("Reading the profiling metrics"): healthy jobs run at 90-99 % FB_USED, their caching
# allocators keeping freed blocks reserved; from there on the fill is worth a note, never evidence.
FB_HEALTHY = 0.9


def _fmt(c: Candidate, v: float) -> str:
    return f"{v:.2g}" if c.unit.startswith("log10") else pct(v) if c.unit == "ratio" else f"{v:.3g}"


# Shown only with volume behind them: balanced traffic means all-reduce only when the bytes are there.
_NEEDS_VOLUME = {Series.NET_SYMMETRY.mean}


def build_evidence(
    cls: Bottleneck,
    x: FloatArray,
    summary: JobSummary,
    account: StepAccount,
    reads: Reads,
    *,
    mechanism: Mechanism | None = None,
    limit: int = 5,
) -> tuple[Evidence, ...]:
    """The class's measured wait, then the strongest present signals for ``cls``: 3-5 items.

    Args:
        cls: the verdict class.
        x: the job's feature row.
        summary: whole-job totals (for rates in sentences).
        account: the window's measured waits.
        reads: the window's measured quantities.
        mechanism: the verdict's mechanism: signals that speak for another mechanism of the class are
            left out (host memory pressure says nothing of an HBM-bound GPU, nor DRAM activity of swap).
        limit: most items returned.

    Returns:
        Evidence items: GPU idleness first for stall classes, then the measured wait.
    """
    path = data_path(summary)
    # the share of bytes over the network is the data path's, which the IO mechanism reads too
    shared: dict[FeatureKey, float | None] = {Series.NET_RX_SHARE.mean: path.share} if cls is Bottleneck.IO else {}
    if summary.gpu_active is not None:
        # GPU activity is the one the report's header and headroom read (the first activity field
        # present), not the feature row's blend of fields, so one report never gives two shares
        shared[Series.ACT.mean] = summary.gpu_active
    scored = _scored(cls, x, mechanism, shared)
    items: list[Evidence] = []
    # An HBM-bound GPU is busy: its kernels wait on memory inside, not for anything outside
    if cls in _STALL or (cls is Bottleneck.MEMORY and mechanism is not Mechanism.HBM_BANDWIDTH):
        idle = _idle_evidence(summary)
        if idle:
            items.append(idle)
    gate = _wait_evidence(cls, account, reads)
    if gate is not None and mechanism is not None and speaks_for(cls, gate.signal) not in (None, mechanism):
        # a measured wait of the class's other mechanism (host memory pressure under HBM-bound kernels)
        gate = None
    if gate is not None:
        items.append(gate)
        scored = [(s, e) for s, e in scored if e.signal != gate.signal]
    rate = _io_rate_evidence(path) if cls is Bottleneck.IO else _cpu_rate_evidence(cls, summary)
    # The candidates past the level from which they count first, by strength; the others only to reach
    # three items, so the report always shows what was looked at.
    ranked = [e for s, e in scored if s > 0] + [e for s, e in scored if s <= 0]
    n_strong = sum(1 for s, _ in scored if s > 0)
    for k, e in enumerate(ranked):
        if len(items) + (1 if rate else 0) >= limit or (k >= n_strong and len(items) + (1 if rate else 0) >= 3):
            break
        items.append(e)
    if rate:
        items.insert(min(len(items), 2), rate)
    return tuple(items[:limit])


def _scored(
    cls: Bottleneck, x: FloatArray, mechanism: Mechanism | None, shared: dict[FeatureKey, float | None]
) -> list[tuple[float, Evidence]]:
    """The class's present candidates with their strengths, strongest first (``shared``: readings taken
    from the definitions the mechanism reads, in place of the feature row's)."""
    volume = (value(x, Series.LOG_NET_PER_GPU.mean) or 0.0) >= COLLECTIVE_NET_LOG
    scored: list[tuple[float, Evidence]] = []
    for c in CANDIDATES.get(cls, ()):
        v = shared[c.feature] if c.feature in shared else value(x, c.feature)
        if v is None or (mechanism is not None and c.mechanism not in (None, mechanism)):
            continue
        if c.reference is None and v <= c.low:
            # an event that did not happen (no swap-in, no OOM kill) is said so, as what was looked at
            scored.append((0.0, Evidence(c.signal, v, None, c.unit, c.quiet)))
            continue
        if c.feature in _NEEDS_VOLUME and (not volume or v <= c.low):
            # Shown as what was looked at, saying why it does not count: one-way traffic is not the
            # balance its sentence would claim.
            why = "at too little volume to be" if not volume else "one-way, not the balance of"
            msg = f"Network receive and transmit ratio {pct(v)}, {why} gradient exchange."
            scored.append((0.0, Evidence(c.signal, v, c.reference, c.unit, msg)))
            continue
        scored.append((c.strength(v), _evidence(c, v)))
    scored.sort(key=lambda t: -t[0])
    return scored


def _wait_evidence(cls: Bottleneck, account: StepAccount, reads: Reads) -> Evidence | None:
    """The class's measured wait as an evidence item (the measured share, against the whole step)."""
    wait = account.waits.get(cls)
    if wait is None or wait.share <= 0:
        if cls is Bottleneck.MEMORY and reads.dram is not None:
            return Evidence(
                "dram_active",
                reads.dram,
                DRAM_PEAK,
                "ratio",
                f"DRAM was active {pct(reads.dram)} of cycles, against a practical peak near {pct(DRAM_PEAK)} (DCGM).",
            )
        return None
    return Evidence(
        wait.signal,
        wait.share,
        1.0,
        "ratio",
        f"Measured: {wait.what} puts {cls.value} waits at {pct(wait.share)} of training time.",
    )


def context_notes(x: FloatArray, fb_p90: float | None = None) -> tuple[str, ...]:
    """Node-wide signals as context: they describe the node, which neighbours and remote-storage readers share.

    The framebuffer's fill (``fb_p90``, read from the window: it is no feature) is context too: it says
    the batch cannot grow, never that the Job stalls.
    """
    parts = []
    busy, psi = value(x, Series.NODE_CPU_BUSY_FRAC.mean), value(x, Series.NODE_PSI_CPU_SOME.mean)
    if busy is not None:
        parts.append(f"node CPUs {pct(busy)} busy")
    if psi is not None:
        parts.append(f"node CPU pressure {pct(psi)}")
    fb = fb_p90
    tail: tuple[str, ...] = ()
    if fb is not None and fb >= FB_HEALTHY:
        tail = (
            f"GPU memory {pct(fb)} allocated (p90): caching allocators reserve it, so it is not a stall; it only "
            "means the batch cannot grow.",
        )
    head = (f"Node context, not evidence: {', '.join(parts)}.",) if parts else ()
    return head + tail


def _evidence(c: Candidate, v: float) -> Evidence:
    """An evidence item; log-scale features are reported back in their physical unit."""
    if c.unit.startswith("log10 "):
        unit = c.unit.removeprefix("log10 ")
        observed = 10**v
        reference = None if c.reference is None else 10**c.reference
        shown, ref = (
            (human_bytes(observed), human_bytes(reference or 0.0)) if unit == "B/s" else (f"{observed:,.0f}", "")
        )
        return Evidence(c.signal, observed, reference, unit, c.message.format(v=shown, r=ref))
    ref = "" if c.reference is None else _fmt(c, c.reference)
    return Evidence(c.signal, v, c.reference, c.unit, c.message.format(v=_fmt(c, v), r=ref))


def _idle_evidence(summary: JobSummary) -> Evidence | None:
    if summary.gpu_active is None:
        return None
    src = summary.activity_signal or "gpu_active"
    a = summary.gpu_active
    return Evidence(src, a, IDLE.reference, "ratio", IDLE.message.format(v=pct(a)))


def _io_rate_evidence(path: DataPath) -> Evidence | None:
    """The rate of the way that carried the data (:attr:`.DataPath.carrier`, as the mechanism names it)."""
    carrier = path.carrier
    if carrier is None:
        return None
    rate, way = carrier
    if way == NETWORK_READS:
        signal, who = ("sc_net_rx_bps", "pods") if path.net_own else ("node_net_rx_bps", "nodes")
        return Evidence(
            signal,
            rate,
            None,
            "B/s",
            f"The job's {who} received {human_bytes(rate)} over the network while local disks read "
            f"{human_bytes(path.read_bps or 0.0)}.",
        )
    return Evidence("read_bps", rate, None, "B/s", f"The job read {human_bytes(rate)} from storage.")


def _cpu_rate_evidence(cls: Bottleneck, s: JobSummary) -> Evidence | None:
    if cls is Bottleneck.CPU and s.cpu_cores is not None:
        ref = s.cpu_limit_cores
        tail = f" of a {ref:.3g}-core limit" if ref else ""
        used = f"{s.cpu_cores:.3g}"
        cores = f"{used} core{'' if used == '1' else 's'}"
        gpus = f"{s.gpus} GPU{'' if s.gpus == 1 else 's'}"
        return Evidence("cpu_cores", s.cpu_cores, ref, "cores", f"The job used {cores}{tail} for {gpus}.")
    return None


def framebuffer_p90(window: JobWindow) -> float | None:
    """The 90th percentile of the fullest GPU's framebuffer fill over the window, None without data."""
    rows = [p.signals["fb_used_frac"] for p in window.pods if "fb_used_frac" in p.signals]
    values = np.concatenate(rows) if rows else np.empty(0)
    values = values[np.isfinite(values)]
    return float(np.quantile(values, 0.9)) if values.size else None
