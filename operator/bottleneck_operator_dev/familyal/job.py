"""One Job end to end, and the family: draws -> costs -> counterfactual label -> activity -> exporters -> window."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import DEFAULT_SCRAPE_INTERVAL
from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck, Mechanism
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.familyal.activity import Activity, Timeline, activity, make_timeline
from bottleneck_operator_dev.familyal.assemble import (
    Reader,
    cadvisor_signals,
    dcgm_signals,
    node_signals,
    sidecar_signals,
)
from bottleneck_operator_dev.familyal.costs import Costs, draw_costs
from bottleneck_operator_dev.familyal.draws import Setup, draw_setup
from bottleneck_operator_dev.familyal.exporters import Series, dcgm_series
from bottleneck_operator_dev.familyal.hostexp import cadvisor_series, ksm_series, node_series, pod_host, sidecar_series
from bottleneck_operator_dev.familyal.label import Labelled, label_costs
from bottleneck_operator_dev.familyal.observe import Observation, draw_observation
from bottleneck_operator_dev.familyal.steps import run

F = npt.NDArray[np.float64]
HISTORY_S = 300.0  # node-exporter history before the Job (its series exist all along)
MAX_CELLS = 48_000  # iterations x ranks simulated per Job, to keep 600 Jobs well under a minute
NAMESPACES = ("ml-research", "vision", "speech", "nlp-platform", "recsys", "foundation", "team-a", "batch")


@dataclass(frozen=True)
class FamilyALJob:
    """One labelled Job of family AL.

    Attributes:
        namespace, name: the Job's.
        label: the counterfactual bottleneck (one of ``CLASSES``).
        mechanism: how it limits the Job (one of ``MECHANISMS[label]``).
        tags: what was drawn, plus ``too-short`` and ``hard`` where they apply.
        window: the telemetry window the operator would read.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: Mechanism
    tags: tuple[str, ...]
    window: JobWindow


@dataclass(frozen=True)
class Trace:
    """The internals of one Job, for tests and inspection."""

    intent: Bottleneck
    setup: Setup
    observation: Observation
    costs: Costs
    labelled: Labelled
    timeline: Timeline
    series: tuple[dict[str, Series], ...]


def intent_of(seed: int, i: int) -> Bottleneck:
    """Job i's class intent: a permutation of the five classes per block of five Jobs."""
    perm = np.random.default_rng((seed, i // 5, 5)).permutation(len(CLASSES))
    return CLASSES[int(perm[i % 5])]


def _pod_series(
    s: Setup, obs: Observation, act: Activity, tl: Timeline, pod: int, rng: np.random.Generator
) -> dict[str, Series]:
    ph = pod_host(s, act, tl, pod, rng)
    out = {"dcgm": dcgm_series(s, obs, act, tl, pod, rng)}
    if "node" in obs.present:
        out["node"] = node_series(s, obs, ph, tl, rng)
    if "cadvisor" in obs.present:
        out["cadvisor"] = cadvisor_series(s, obs, ph, tl, rng)
    if "ksm" in obs.present:
        out["ksm"] = ksm_series(s, obs, tl, rng)
    if "sidecar" in obs.present:
        out["sidecar"] = sidecar_series(s, obs, ph, tl, rng)
    return out


def _signals(s: Setup, obs: Observation, series: dict[str, Series], at: F, step: float) -> dict[str, F]:
    def reader(exp: str) -> Reader:
        return Reader(series[exp], at, step, obs.scrape.get(exp, DEFAULT_SCRAPE_INTERVAL))

    out = dcgm_signals(reader("dcgm"))
    limits: dict[str, F] = {}
    if "ksm" in series:
        ksm = reader("ksm")
        if ksm.has('kube_pod_container_resource_limits{resource="cpu"}'):
            out["cpu_limit_cores"] = ksm.last('kube_pod_container_resource_limits{resource="cpu"}')
        if ksm.has('kube_pod_container_resource_limits{resource="memory"}'):
            limits["ksm"] = ksm.last('kube_pod_container_resource_limits{resource="memory"}')
    if "sidecar" in series:
        sc = reader("sidecar")
        out |= sidecar_signals(sc, "sidecar_net" in obs.present)
        if sc.has("bottleneck_sidecar_memory_max_bytes"):
            limits["sidecar"] = sc.last("bottleneck_sidecar_memory_max_bytes")
    if "cadvisor" in series:
        out |= cadvisor_signals(reader("cadvisor"), limits)
    if "node" in series:
        out |= node_signals(reader("node"), s.cluster.node_cores, "node_psi" in obs.present, "node_ib" in obs.present)
    return out


def _tags(intent: Bottleneck, s: Setup, obs: Observation, lab: Labelled, c: Costs) -> tuple[str, ...]:
    cl, pipe, d = s.cluster, s.pipeline, s.disturbances
    tags = [
        f"intent:{intent.value}",
        f"board:{cl.board.key}",
        f"workload:{pipe.workload.key}",
        f"storage:{cl.storage.key}",
        f"fabric:{cl.fabric.key if cl.fabric else 'none'}",
        f"pods:{cl.pods}",
        f"gpus-per-pod:{cl.gpus}",
        f"dcgm:{obs.field_set}",
        f"scrape:{obs.scrape['dcgm']:g}s",
        f"collect:{obs.dcgm_collect:g}s",
        "amp" if pipe.amp else "fp32",
    ]
    optional = {
        "gpu-decode": pipe.gpu_decode,
        "cpu-limit": pipe.cpu_limit is not None,
        "power-cap": d.power_cap < 1.0,
        f"straggler:{d.straggler_kind}": d.straggler is not None,
        "noisy-neighbour": d.noisy_pod is not None,
        "congestion": bool(c.congested.any()),
        "checkpoints": bool(c.ckpt.any()),
        "host-memory-pressure": d.mem_pressure > 0.5,
        "oom-kills": bool((c.oom > 0).any()),
        "no-sidecar": "sidecar" not in obs.present,
        "too-short": obs.too_short,
        "hard": lab.hard,
    }
    tags += [t for t, on in optional.items() if on]
    tags += [f"reset:{e}" for e in sorted(obs.resets)]
    return tuple(tags)


def _window(
    ids: tuple[str, str, tuple[str, ...]],
    s: Setup,
    obs: Observation,
    series: tuple[dict[str, Series], ...],
    start: float,
    step: float,
) -> JobWindow:
    ns, name, nodes = ids
    at: F = start + np.arange(int(np.floor(obs.duration / step)) + 1, dtype=np.float64) * step
    pods = []
    for p, ser in enumerate(series):
        sig = _signals(s, obs, ser, at, step)
        # the node is known from kube_pod_info only
        node = nodes[p] if "ksm" in obs.present else None
        pods.append(
            PodWindow(
                pod=f"{name}-worker-{p}",
                node=node,
                gpu_model=s.cluster.board.model_name,
                gpu_count=s.cluster.gpus,
                signals=SignalBlock.of(sig, at.size),
                co_located_pods=int(s.disturbances.noisy_pod == p) + (1 if s.cluster.gpus < 8 else 0),
            )
        )
    families, coverage = families_and_coverage(pods)
    notes = [f"dcgm-exporter collects every {obs.dcgm_collect:g}s", f"dcgm node label {obs.hostname_label}"]
    if Family.DCGM_PROF not in families:
        notes.append("no PROF fields")
    exporters = {"dcgm", *(e for e in ("node", "cadvisor") if e in obs.present)}
    quality = DataQuality(
        families=families,
        coverage=coverage,
        scrape_interval=obs.scrape["dcgm"],
        notes=tuple(notes),
        layout={e: obs.layout[e] for e in sorted(exporters)},
    )
    return JobWindow(ns, name, start, float(at[-1]), step, at, tuple(pods), quality)


def simulate_job(seed: int, i: int, start: float = 1_700_000_000.0, step: float = 30.0) -> tuple[FamilyALJob, Trace]:
    """Job i of the family for a seed, with its internals."""
    rng = np.random.default_rng((seed, i))
    intent = intent_of(seed, i)
    s = draw_setup(rng, intent)
    obs = draw_observation(rng, s, start)
    ranks = s.cluster.pods * s.cluster.gpus
    # A short pilot estimates the step, so that the simulated iterations cover the run.
    pilot = run(draw_costs(rng, s, 64, 1.0)).mean
    run_s = max(obs.duration + obs.lead - obs.warmup, 60.0)
    k = int(np.clip(run_s / pilot * 1.05, 50, min(4000, MAX_CELLS // ranks)))
    costs = draw_costs(rng, s, k, pilot)
    lab = label_costs(costs, network_storage=s.cluster.storage.network, has_limit=s.pipeline.cpu_limit is not None)
    job_start = start - obs.lead
    tl = make_timeline(lab.base, job_start - HISTORY_S, start + obs.duration, job_start, obs.warmup)
    act = activity(s, costs, lab.base, tl)
    series = tuple(_pod_series(s, obs, act, tl, p, rng) for p in range(s.cluster.pods))
    ns = NAMESPACES[int(rng.integers(len(NAMESPACES)))]
    name = f"train-{int(rng.integers(16**6)):06x}"
    nodes = tuple(f"gpu-node-{int(n):03d}" for n in rng.choice(1000, s.cluster.pods, replace=False))
    window = _window((ns, name, nodes), s, obs, series, start, step)
    job = FamilyALJob(ns, name, lab.label, lab.mechanism, _tags(intent, s, obs, lab, costs), window)
    return job, Trace(intent, s, obs, costs, lab, tl, series)


def generate_family_al(seed: int, n: int, start: float = 1_700_000_000.0, step: float = 30.0) -> list[FamilyALJob]:
    """n Jobs of family AL for a seed; Job i depends on (seed, i) alone.

    Raises:
        ValueError: ``n`` is negative or ``step`` is not positive.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, not {n}")
    if not step > 0:
        raise ValueError(f"step must be > 0, not {step}")
    return [simulate_job(seed, i, start, step)[0] for i in range(n)]
