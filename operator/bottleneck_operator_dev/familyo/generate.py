"""Family O's jobs: a cluster's telemetry set-up, a workload, its step model, then the exporters."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.signals import SIGNALS, Family, SignalSpec
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.familyo.exporters import Scrape, gauge, rate
from bottleneck_operator_dev.familyo.gpu import gpu_truth
from bottleneck_operator_dev.familyo.host import Node, draw_node, host_truth
from bottleneck_operator_dev.familyo.site import Site, draw_site
from bottleneck_operator_dev.familyo.workload import Plan, draw_plan

FloatArray = npt.NDArray[np.float64]
NAMESPACES = ("llm-core", "ranking", "vision", "speech", "genai", "research", "ml-platform")
SIGNAL_LIST: tuple[SignalSpec, ...] = tuple(SIGNALS.values())


@dataclass(frozen=True)
class FamilyOJob:
    """One labelled job of family O.

    Attributes:
        namespace: the job's namespace.
        name: the job's name.
        label: the class whose stages, removed, shorten the step most (the step model's reading).
        mechanism: how that class limits it, in the contract's mechanism names.
        tags: archetype, board, storage, fabric, strength and the site's telemetry quirks.
        window: the telemetry window as the data layer would hand it over.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def classes(seed: int, n: int) -> list[tuple[Bottleneck, str]]:
    """Equal numbers of each class (both Memory mechanisms alternating), in a seeded shuffle."""
    order = np.random.default_rng([seed, 0x0F]).permutation(n)
    out: list[tuple[Bottleneck, str]] = []
    memory = 0
    for k in order:
        cls = CLASSES[int(k) % len(CLASSES)]
        hint = ""
        if cls is Bottleneck.MEMORY:
            hint = ("host-memory-pressure", "hbm-bandwidth")[memory % 2]
            memory += 1
        out.append((cls, hint))
    return out


def _activity(rng: np.random.Generator, n: int, step: float, warm: bool) -> FloatArray:
    """Share of each sample the job spends stepping: jitter, drift, checkpoint pauses, warm-up."""
    act = rng.lognormal(0.0, rng.uniform(0.02, 0.08), n) * (1.0 + 0.05 * np.sin(np.arange(n) / rng.uniform(4, 20)))
    every = max(2, int(rng.uniform(300.0, 1800.0) / step))
    pause = rng.uniform(20.0, 240.0)  # seconds spent writing a checkpoint, GPUs idle
    for k in range(int(rng.integers(0, every)), n, every):
        act[k] *= max(0.0, 1.0 - pause / step)
    if not warm:
        act[: min(n, 2)] *= rng.uniform(0.2, 0.6)
    return np.clip(act, 0.0, 1.0)


def _scrape(rng: np.random.Generator, site: Site, exporter: str, restarted: bool, dur: float, warm: bool) -> Scrape:
    interval = site.scrape_s[exporter]
    down = None
    if restarted and site.restart is not None:
        to = site.restart[1] * dur
        down = (to - interval * rng.uniform(1.0, 3.0), to)
    collect = site.dcgm_collect_s if exporter == "dcgm" else 0.0
    return Scrape(interval, float(rng.uniform(0.0, interval)), collect, down, warm)


def _present(spec: SignalSpec, site: Site, plan: Plan, sidecar: bool, truth: dict[str, FloatArray]) -> bool:
    """Whether this pod's stack exports the signal at all."""
    fam = spec.family
    if spec.name not in truth:
        return False
    if fam is Family.SIDECAR:
        return sidecar and not (site.cgroup_v1 and spec.name.startswith("sc_psi_"))
    if fam is Family.CADVISOR_CFS or spec.name == "cpu_limit_cores":
        return plan.cpu_limit is not None and site.has(fam, rdma=False)
    if spec.name.startswith("nvlink_"):
        return plan.board.nvlink_gbs > 0 and site.has(fam, rdma=False)
    return site.has(fam, rdma=plan.fabric is not None and plan.fabric.rdma)


def _render_pod(
    rng: np.random.Generator,
    plan: Plan,
    site: Site,
    truth: dict[str, FloatArray],
    step: float,
    flags: tuple[bool, bool, bool],
) -> dict[str, FloatArray]:
    """The pod's signals as read: per exporter, its gauges held and its counters through rate()."""
    sidecar, restarted, warm = flags
    n = next(iter(truth.values())).size
    out: dict[str, FloatArray] = {}
    by_exporter: dict[str, list[SignalSpec]] = {}
    for spec in SIGNAL_LIST:
        if _present(spec, site, plan, sidecar, truth):
            by_exporter.setdefault(spec.family.exporter_name, []).append(spec)
    for exporter, specs in by_exporter.items():
        sc = _scrape(
            rng, site, exporter, restarted and site.restart is not None and site.restart[0] == exporter, n * step, warm
        )
        counters = [s for s in specs if s.kind.value == "counter"]
        gauges = [s for s in specs if s.kind.value != "counter"]
        if gauges:
            held = gauge(np.stack([truth[s.name] for s in gauges]), step, sc)
            out.update({s.name: held[i] for i, s in enumerate(gauges)})
        if counters:
            block = np.stack([truth[s.name] for s in counters])
            start = rng.uniform(1e2, 1e5, len(counters)) * np.maximum(np.nanmean(block, axis=1), 1.0)
            rates = rate(block, step, sc, start)
            out.update({s.name: rates[i] for i, s in enumerate(counters)})
    return out


def generate_job(seed: int, i: int, cls: Bottleneck, hint: str, start: float, step: float) -> FamilyOJob:
    """Job ``i`` of the family, from its own generator seeded (seed, i)."""
    rng = np.random.default_rng([seed, i])
    plan = draw_plan(rng, cls, hint)
    site = draw_site(rng)
    n = int(rng.integers(20, 121))
    ns = NAMESPACES[int(rng.integers(len(NAMESPACES)))]
    name = f"{plan.arch.name.split('-')[0]}-{i:04d}-{int(rng.integers(16**5)):05x}"
    s = plan.stages
    inter_bps = 0.0
    if plan.fabric is not None:
        cap = plan.fabric.ports * plan.fabric.port_gbs * 1e9 * rng.uniform(0.75, 0.93)
        inter_bps = s.inter / s.step * cap
    warm = bool(rng.random() < 0.75)  # most windows open on a job already running
    base_act = _activity(rng, n, step, warm=warm)
    pods, tags = [], list(plan.tags)
    swap = bool(rng.random() < 0.55)
    for p in range(plan.pods):
        node = draw_node(rng, plan, swap)
        act = np.clip(base_act * rng.normal(1.0, 0.01), 0.0, 1.0)
        truth = gpu_truth(plan, rng, act, site.power_cap, inter_bps)
        truth.update(host_truth(plan, node, rng, act, inter_bps, step))
        truth = {k: np.broadcast_to(np.asarray(v, dtype=np.float64), (n,)).copy() for k, v in truth.items()}
        _quirks(rng, truth, n)
        sidecar = bool(rng.random() < site.sidecar_share)
        signals = _render_pod(rng, plan, site, truth, step, (sidecar, p == 0, warm))
        host = f"gpu-{plan.board.model.split()[-1].lower()}-{int(rng.integers(10_000)):04d}"
        pods.append(_pod(name, p, plan, (node, host), signals, n))
    tags += _site_tags(site) + (["swap"] if swap else [])
    fams, cov = families_and_coverage(pods)
    stamps = start + np.arange(n, dtype=np.float64) * step
    quality = DataQuality(families=fams, coverage=cov, scrape_interval=site.scrape_s["dcgm"])
    window = JobWindow(ns, name, start, float(stamps[-1]), step, stamps, tuple(pods), quality)
    return FamilyOJob(ns, name, plan.label, plan.mechanism, tuple(tags), window)


def _quirks(rng: np.random.Generator, truth: dict[str, FloatArray], n: int) -> None:
    """What real fleets add: pods without a memory limit, a stuck profiling field, an XID on record."""
    if rng.random() < 0.3:
        del truth["mem_limit_bytes"]
    if rng.random() < 0.02:
        # dcgm-exporter issue 662: GR_ENGINE_ACTIVE can read 0 after weeks of uptime.
        truth["gr_engine_active"] = np.zeros(n)
    if rng.random() < 0.03:
        # The last XID since the driver loaded: a row-remapping event (63) or an application fault (13, 43).
        code = float(rng.choice([13.0, 43.0, 63.0]))
        truth["xid_code"][int(rng.integers(n)) :] = code


def _pod(job: str, p: int, plan: Plan, node: tuple[Node, str], signals: dict[str, FloatArray], n: int) -> PodWindow:
    role = "master" if p == 0 and plan.pods > 1 else "worker"
    pod = f"{job}-{role}-{p if role == 'worker' else 0}"
    return PodWindow(
        pod=pod,
        node=node[1],
        gpu_model=plan.board.model,
        gpu_count=plan.gpus,
        signals=SignalBlock.of(signals, length=n),
        co_located_pods=node[0].neighbours,
    )


def _site_tags(site: Site) -> list[str]:
    tags = [f"dcgm:{site.dcgm_fields}", f"scrape:{int(site.scrape_s['dcgm'])}s"]
    if len(set(site.scrape_s.values())) > 1:
        tags.append("scrape:mixed")
    if not site.node_exporter:
        tags.append("no-node-exporter")
    elif not site.node_psi:
        tags.append("no-node-psi")
    if site.cgroup_v1:
        tags.append("cgroup-v1")
    if site.sidecar_share < 1.0:
        tags.append(f"sidecar:{site.sidecar_share:.1f}")
    if site.restart is not None:
        tags.append(f"restart:{site.restart[0]}")
    if site.power_cap < 1.0:
        tags.append("power-cap")
    return tags
