"""The family's entry point: labelled job windows, one generator per job."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.sampling import rate_range
from bottleneck_operator.contract.signals import SIGNALS, Family
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.familyv import exporters as ex
from bottleneck_operator_dev.familyv.draw import draw_plan
from bottleneck_operator_dev.familyv.model import CLASS_OF, Resource
from bottleneck_operator_dev.familyv.mva import FloatArray
from bottleneck_operator_dev.familyv.plan import Plan
from bottleneck_operator_dev.familyv.states import Traits, draw_traits, pod_states

NAMESPACES = ("ml-research", "vision", "nlp", "recsys", "speech", "platform", "team-a", "team-b")
# How often each mechanism is drawn within its class (Memory alternates between its two by block).
WEIGHTS: dict[Bottleneck, tuple[float, ...]] = {
    Bottleneck.IO: (0.5, 0.5),
    Bottleneck.CPU: (0.4, 0.3, 0.3),
    Bottleneck.INTERCONNECT: (0.35, 0.25, 0.4),
    Bottleneck.GPU: (0.7, 0.3),
}
_BLOCK_STREAM = 1 << 40  # keeps the class shuffle's generators apart from the jobs'


@dataclass(frozen=True)
class FamilyVJob:
    """One labelled job window.

    Attributes:
        namespace, name: the Job.
        label: the class of the resource whose halved demand speeds the job most.
        mechanism: how it limits the job (a ``Mechanism`` value).
        tags: what was drawn ("workload=vit", "hard", "runner-up=COMPUTE", ...), for breakdowns.
        window: the telemetry as the data layer hands it to the analysis.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def generate_family_v(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyVJob]:
    """``n`` labelled job windows starting at ``start``, sampled every ``step`` seconds.

    Job ``i`` is drawn from ``numpy.random.default_rng((seed, i))`` alone; its class comes from a
    shuffle of the five classes in blocks of five, so classes are balanced to within one and a job
    does not depend on ``n``.

    Raises:
        ValueError: ``n`` is negative, ``step`` is not positive, or ``seed`` is negative.
    """
    if n < 0:
        raise ValueError(f"n must be zero or more, not {n}")
    if not step > 0 or not math.isfinite(step):
        raise ValueError(f"step must be a positive number of seconds, not {step}")
    if seed < 0:
        raise ValueError(f"seed must be zero or more, not {seed}")
    return [_job(seed, i, float(start), float(step)) for i in range(n)]


def _target(seed: int, i: int, rng: np.random.Generator) -> Mechanism:
    block, slot = divmod(i, len(CLASSES))
    order = np.random.default_rng((seed, _BLOCK_STREAM, block)).permutation(len(CLASSES))
    cls = CLASSES[int(order[slot])]
    mechs = MECHANISMS[cls]
    if cls is Bottleneck.MEMORY:
        return mechs[block % 2]  # host pressure and HBM bandwidth in turn, so both always occur
    return mechs[int(rng.choice(len(mechs), p=WEIGHTS[cls]))]


def _job(seed: int, i: int, start: float, step: float) -> FamilyVJob:
    rng = np.random.default_rng((seed, i))
    target = _target(seed, i, rng)
    plan = draw_plan(rng, target, step)
    resource, gains = plan.verdict()
    runner_up = Resource(int(np.argsort(gains)[-2]))
    traits = draw_traits(rng, plan)
    namespace = str(rng.choice(NAMESPACES))
    name = f"{plan.workload.name}-{int(rng.integers(16**6)):06x}"
    window, tags = _window(rng, plan, traits, namespace, name, start, step)
    tags += (
        "hard" if plan.hard else "easy",
        f"runner-up={runner_up.name.lower()}",
        f"margin={gains[resource] / gains[runner_up]:.3f}",
    )
    return FamilyVJob(namespace, name, CLASS_OF[resource], plan.mechanism(resource).value, tags, window)


def _segments(plan: Plan, t0: float, start: float, end: float) -> tuple[FloatArray, list[tuple[int, str]]]:
    """Boundaries (absolute seconds) and (phase, mode) of each piece of the timeline."""
    cuts = {t0, end}
    if plan.change != "none":
        cuts.add(start + plan.change_at)
    for s, e, _ in plan.pauses:
        cuts |= {start + s, start + e}
    bounds = np.array(sorted(c for c in cuts if t0 <= c <= end))
    states = []
    for lo, hi in itertools.pairwise(bounds):
        mid = 0.5 * (lo + hi) - start
        phase = 1 if plan.change != "none" and mid >= plan.change_at else 0
        mode = next((kind for s, e, kind in plan.pauses if s <= mid < e), "train")
        states.append((phase, mode))
    return bounds, states


@dataclass(frozen=True)
class _Scraping:
    """How this cluster's Prometheus sees the job: what it scrapes, how often, onto which grid."""

    si: float  # scrape interval, seconds
    field_set: str  # dcgm-exporter counters file: "dev-only", "default" or "full"
    collect: float  # dcgm-exporter's collection interval, seconds
    major: int  # Prometheus major version
    fams: frozenset[Family]  # families the cluster exports
    grid: FloatArray  # the window's timestamps
    step: float
    t0: float  # first scrape considered: early enough for the first rate() range
    end: float

    def scrapes(self, rng: np.random.Generator, reset_p: float) -> ex.Scrapes:
        return ex.scrapes(rng, self.t0, self.end, self.si, self.grid, self.step, self.major, reset_p)


def _scraping(rng: np.random.Generator, plan: Plan, start: float, step: float) -> _Scraping:
    si = float(rng.choice([10.0, 15.0, 15.0, 20.0, 30.0, 30.0, 30.0, 60.0]))
    field_set = str(rng.choice(["dev-only", "default", "default", "full", "full"]))
    collect = 30.0 if rng.random() < 0.6 else float(rng.choice([5.0, 10.0, 15.0]))
    sidecar, node = bool(rng.random() < 0.75), bool(rng.random() < 0.92)
    psi, ksm = bool(rng.random() < 0.85), bool(rng.random() < 0.95)
    major = int(rng.choice([2, 3]))
    cfs = math.isfinite(plan.pod_quota)  # cAdvisor's CFS counters exist only under a CPU limit
    fams = ex.families_of(field_set, sidecar=sidecar, node=node, psi=psi, ib=plan.nic.rdma, cfs=cfs, ksm=ksm)
    grid = start + step * np.arange(max(20, round(plan.window / step)), dtype=np.float64)
    t0 = start - rate_range(step, si) - 2 * si
    return _Scraping(si, field_set, collect, major, frozenset(fams), grid, step, t0, float(grid[-1]))


def _window(
    rng: np.random.Generator, plan: Plan, traits: Traits, namespace: str, name: str, start: float, step: float
) -> tuple[JobWindow, tuple[str, ...]]:
    sc = _scraping(rng, plan, start, step)
    bounds, seg_states = _segments(plan, sc.t0, start, sc.end + sc.si)
    solved = {st: pod_states(plan, traits, *st) for st in sorted(set(seg_states))}
    pods = []
    resets = False
    for k in range(plan.n_pods):
        values = {q: np.array([solved[st][k][q] for st in seg_states]) for q in solved[seg_states[0]][k]}
        signals, reset_here = _pod_signals(rng, plan, ex.Timeline(bounds, values), sc)
        resets = resets or reset_here
        pod_name = f"{name}-worker-{k}" if plan.n_pods > 1 else f"{name}-{int(rng.integers(36**5)):x}"
        pods.append(
            PodWindow(
                pod=pod_name,
                node=f"gpu-node-{int(rng.integers(1000)):03d}-{k}",
                gpu_model=plan.gpu.model_name,
                gpu_count=plan.gpus,
                signals=SignalBlock.of(signals, sc.grid.size),
                co_located_pods=int(rng.integers(1, 4)) if plan.pods[k].neighbour != "none" else 0,
            )
        )
    families, coverage = families_and_coverage(pods)
    notes = ["no PROF fields"] if Family.DCGM_PROF not in sc.fams else []
    notes += ["no collector sidecar"] if Family.SIDECAR not in sc.fams else []
    quality = DataQuality(families=families, coverage=coverage, scrape_interval=sc.si, notes=tuple(notes))
    window = JobWindow(namespace, name, start, sc.end, step, sc.grid, tuple(pods), quality)
    return window, _tags(plan, sc, resets)


def _tags(plan: Plan, sc: _Scraping, resets: bool) -> tuple[str, ...]:
    flags = {
        "checkpoints": any(k == "checkpoint" for *_, k in plan.pauses),
        "eval-pause": any(k == "eval" for *_, k in plan.pauses),
        "blkio-throttled": plan.storage.local and plan.storage_share < 1.0,
        "power-capped": any(bool((p.limit < plan.gpu.tdp).any()) for p in plan.pods),  # limit below TDP
        "counter-reset": resets,
    }
    return (
        f"workload={plan.workload.name}",
        f"gpu={plan.gpu.model_name}",
        f"pods={plan.n_pods}",
        f"gpus-per-pod={plan.gpus}",
        f"precision={plan.precision}",
        f"storage={plan.storage.kind}",
        f"nic={plan.nic.name}",
        f"fields={sc.field_set}",
        f"scrape={sc.si:g}s",
        f"collect={sc.collect:g}s",
        f"prometheus={sc.major}",
        f"change={plan.change}",
        *sorted({f"neighbour={p.neighbour}" for p in plan.pods}),
        *(flag for flag, on in flags.items() if on),
    )


def _pod_signals(
    rng: np.random.Generator, plan: Plan, tl: ex.Timeline, sc: _Scraping
) -> tuple[dict[str, FloatArray], bool]:
    """Every signal of one pod, and whether an exporter restarted in the window."""
    out = _dcgm_signals(rng, plan, tl, sc)
    reset = False
    if Family.CADVISOR in sc.fams:
        c = sc.scrapes(rng, 0.08)  # a container restart resets cAdvisor's counters
        reset = bool(c.resets)
        names = ex.CADVISOR_COUNTERS + (("cpu_throttled_frac",) if Family.CADVISOR_CFS in sc.fams else ())
        # throttled periods over periods: a share, integrated as ten CFS periods a second
        scale = np.array([10.0 if n == "cpu_throttled_frac" else 1.0 for n in names])
        out |= dict(zip(names, ex.counters(rng, tl, names, c, 0.03, scale), strict=True))
        out |= dict(zip(ex.CADVISOR_GAUGES, ex.gauges(rng, tl, ex.CADVISOR_GAUGES, c, 0.01), strict=True))
    if Family.KSM in sc.fams and math.isfinite(plan.pod_quota):
        k = sc.scrapes(rng, 0.0)
        out["cpu_limit_cores"] = np.where(np.isfinite(k.sampler.last(np.ones(k.times.size))), plan.pod_quota, np.nan)
    if Family.NODE in sc.fams:
        out |= _node_signals(rng, plan, tl, sc)
    if Family.SIDECAR in sc.fams:
        sidecar, sidecar_reset = _sidecar_signals(rng, plan, tl, sc)
        out |= sidecar
        reset = reset or sidecar_reset
    # ratios stay ratios after noise: a busy fraction above one is no reading an exporter gives
    for sig, v in out.items():
        if SIGNALS[sig].unit == "ratio":
            out[sig] = ex.clip_ratio(v)
    return out, reset


def _dcgm_signals(rng: np.random.Generator, plan: Plan, tl: ex.Timeline, sc: _Scraping) -> dict[str, FloatArray]:
    d = sc.scrapes(rng, 0.0)
    phase = float(rng.uniform(0, sc.collect))
    groups = [(Family.DCGM_DEV, ex.DCGM_DEV), (Family.DCGM_PROF, ex.DCGM_PROF), (Family.DCGM_PROF_SM, ex.DCGM_PROF_SM)]
    groups += [(Family.DCGM_PROF_NVLINK, ex.DCGM_PROF_NVLINK), (Family.DCGM_PROF_PIPES, ex.DCGM_PROF_PIPES)]
    noisy = tuple(n for fam, names in groups if fam in sc.fams for n in names)
    out = dict(zip(noisy, ex.dcgm(rng, tl, noisy, d, sc.collect, phase, 0.03), strict=True))
    limit = float(plan.pods[0].limit.mean())
    if Family.DCGM_POWER_CLOCKS in sc.fams:
        # a share of boards (clock reasons) and a configured limit carry no measurement noise
        names = ex.DCGM_POWER_CLOCKS
        out |= dict(zip(names, ex.dcgm(rng, tl, names, d, sc.collect, phase, 0.0), strict=True))
        out["power_limit_w"] = np.where(np.isfinite(out["power_limit_w"]), limit, np.nan)
    # the caching allocator keeps most of the framebuffer reserved in a healthy job
    fb = d.sampler.last(np.full(d.times.size, float(rng.uniform(0.85, 0.98))))
    out["fb_used_frac"] = fb + rng.normal(0, 0.005, fb.size)
    out["xid_code"] = np.where(np.isfinite(fb), 31.0 if rng.random() < 0.03 else 0.0, np.nan)
    out["power_w"] = np.minimum(out["power_w"], limit)  # the board enforces its limit
    out["sm_clock_mhz"] = np.minimum(out["sm_clock_mhz"], plan.gpu.max_clock)
    return out


def _node_signals(rng: np.random.Generator, plan: Plan, tl: ex.Timeline, sc: _Scraping) -> dict[str, FloatArray]:
    nd = sc.scrapes(rng, 0.0)  # the kernel's counters survive an exporter restart
    out = {"node_cpus": ex.gauges(rng, tl, ("node_cpus",), nd, 0.0)[0]}
    # node_cpu_seconds_total by mode counts CPU-seconds: the share of time times the CPUs
    modes = tuple(f"node_cpu_{m}_frac" for m in ex.CPU_MODES)
    names = modes + ex.NODE_COUNTERS + ex.NODE_NET
    names += ex.NODE_PSI if Family.NODE_PSI in sc.fams else ()
    names += ex.NODE_IB if Family.NODE_IB in sc.fams else ()
    scale = np.array([float(plan.cores) if n in modes else 1.0 for n in names])
    out |= dict(zip(names, ex.counters(rng, tl, names, nd, 0.03, scale), strict=True))
    out |= dict(zip(ex.NODE_GAUGES, ex.gauges(rng, tl, ex.NODE_GAUGES, nd, 0.01), strict=True))
    return out


def _sidecar_signals(
    rng: np.random.Generator, plan: Plan, tl: ex.Timeline, sc: _Scraping
) -> tuple[dict[str, FloatArray], bool]:
    s = sc.scrapes(rng, 0.1)  # the collector's own counters restart with it
    names = (*(n for n in ex.SIDECAR_COUNTERS if n != "sc_oom_kills"), "sc_throttled_frac")
    scale = np.array([10.0 if n == "sc_throttled_frac" else 1.0 for n in names])
    out = dict(zip(names, ex.counters(rng, tl, names, s, 0.04, scale), strict=True))
    kills = np.zeros(s.times.size)
    if plan.swap_s > 0 and rng.random() < 0.3:
        kills = (s.times > float(rng.uniform(s.times[0], s.times[-1]))).astype(np.float64)  # one OOM kill
    out["sc_oom_kills"] = s.sampler.rate(kills + 2.0)
    procs = rng.poisson(np.maximum(tl.at(ex.SIDECAR_GAUGES, s.times), 0.0)).astype(np.float64)
    out |= dict(zip(ex.SIDECAR_GAUGES, s.sampler.last(procs), strict=True))
    return out, bool(s.resets)
