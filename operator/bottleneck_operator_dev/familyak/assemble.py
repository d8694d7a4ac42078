"""From the simulated run to the contract's JobWindow, the way the data layer reads Prometheus.

Each exporter is scraped at its own times; a counter becomes ``rate(counter[R])`` and a gauge
``last_over_time(gauge[W])`` at every step of the window, through the contract's own
:class:`~bottleneck_operator.contract.sampling.Sampler` (so the numbers are made as the data layer
makes them). Families the drawn stack lacks are left out of the windows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range
from bottleneck_operator.contract.signals import SIGNALS, Family
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.familyak.activity import step_amounts
from bottleneck_operator_dev.familyak.dcgm import render_dcgm
from bottleneck_operator_dev.familyak.exporters import render_cadvisor, render_limits, render_node, render_sidecar
from bottleneck_operator_dev.familyak.loop import LoopRun
from bottleneck_operator_dev.familyak.series import FloatArray, Series, scrape_times
from bottleneck_operator_dev.familyak.spec import JobSpec, Telemetry
from bottleneck_operator_dev.familyak.stack import draw_pauses
from bottleneck_operator_dev.familyak.trace import Trace, build_trace


@dataclass(frozen=True)
class Names:
    """How the Job and its pods are called."""

    namespace: str
    job: str
    pods: tuple[str, ...]
    nodes: tuple[str, ...]


@dataclass(frozen=True)
class Rendered:
    """One exporter's raw series and scrape times (kept for checks of the exporters' semantics)."""

    exporter: str
    times: FloatArray
    interval: float
    series: dict[str, Series]


def sample(r: Rendered, at: FloatArray, step: float, major: int) -> dict[str, FloatArray]:
    """Every series of one exporter read at the window's timestamps: (pods, len(at)) each."""
    s = Sampler(
        r.times,
        at,
        range_seconds=rate_range(step, r.interval),
        window=gauge_window(step, r.interval),
        prometheus_major=major,
    )
    out = {}
    for name, ser in r.series.items():
        if ser.kind == "gauge":
            out[name] = s.last(ser.values)
        elif ser.kind == "counter":
            out[name] = s.rate(ser.values)
        else:
            assert ser.denominator is not None
            num, den = s.rate(ser.values), s.rate(ser.denominator)
            with np.errstate(divide="ignore", invalid="ignore"):
                out[name] = np.where(den > 0, num / den, np.nan)
    return out


def render_exporters(
    spec: JobSpec, tel: Telemetry, trace: Trace, rng: np.random.Generator, end: float
) -> list[Rendered]:
    """The exporters the drawn stack runs, each with its raw series at its scrape times."""
    begin = float(trace.edges[0])
    t_dcgm = scrape_times(rng, begin, end, tel.dcgm_interval, tel.missed)
    t_host = scrape_times(rng, begin, end, tel.host_interval, tel.missed)
    out = [Rendered("dcgm", t_dcgm, tel.dcgm_interval, render_dcgm(spec, tel, trace, t_dcgm, rng))]
    if tel.cadvisor:
        out.append(Rendered("cadvisor", t_host, tel.host_interval, render_cadvisor(spec, trace, t_host)))
    if tel.ksm or tel.sidecar or tel.cadvisor:
        out.append(Rendered("ksm", t_host, tel.host_interval, render_limits(spec, trace.pods, t_host, tel.ksm)))
    out.append(Rendered("node", t_host, tel.host_interval, render_node(spec, tel, trace, t_host, rng)))
    if tel.sidecar:
        out.append(Rendered("sidecar", t_host, tel.host_interval, render_sidecar(spec, tel, trace, t_host)))
    return out


def job_trace(
    spec: JobSpec, tel: Telemetry, run: LoopRun, rng: np.random.Generator, span: tuple[float, float], spin: bool
) -> Trace:
    """The Job's activity over ``span``: the run's steps with the drawn pauses."""
    pauses = draw_pauses(rng, tel, run, span)
    return build_trace(run, step_amounts(spec, run, spin), rng, span, pauses, spec)


def render_window(
    spec: JobSpec, tel: Telemetry, run: LoopRun, rng: np.random.Generator, names: Names, grid: tuple[float, float]
) -> tuple[JobWindow, Trace, list[Rendered]]:
    """The Job's window from ``grid = (start, step)``, and what it was made from."""
    start, step = grid
    count = int(tel.duration // step) + 1
    at = np.asarray(start + step * np.arange(count), dtype=np.float64)
    end = float(at[-1])
    trace = job_trace(spec, tel, run, rng, (start - tel.lead, end + 1.0), spin=bool(rng.random() < 0.7))
    rendered = render_exporters(spec, tel, trace, rng, end)
    signals: dict[str, FloatArray] = {}
    for r in rendered:
        signals.update(sample(r, at, step, tel.prometheus_major))
    pods = tuple(
        PodWindow(
            pod=names.pods[p],
            node=names.nodes[p],
            gpu_model=spec.board.model_name,
            gpu_count=spec.gpus,
            signals=SignalBlock.of({k: v[p] for k, v in signals.items() if k in SIGNALS}, length=count),
            co_located_pods=spec.host.neighbours,
        )
        for p in range(spec.pods)
    )
    families, coverage = families_and_coverage(pods)
    notes = []
    if Family.DCGM_PROF not in families:
        notes.append("no PROF fields")
    quality = DataQuality(families, coverage, tel.dcgm_interval, tuple(notes), dict(tel.layouts))
    window = JobWindow(names.namespace, names.job, start, end, step, at, pods, quality)
    return window, trace, rendered
