"""Family AD: training Jobs as closed queueing networks, labelled by the operational laws.

``generate_family_ad(seed, n, start=...)`` draws ``n`` Jobs. Job ``i`` draws everything from
``numpy.random.default_rng((seed, i))``; its class intent comes from its block of five, shuffled by
``default_rng((seed, 1_000_003, i // 5))``, so a Job never depends on ``n``. A Job's configuration is
redrawn (up to a bound) until the label the physics gives matches its intent; the label itself is
only ever read from the demands (label.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.signals import CONTEXT_SIGNALS, SIGNAL_NAMES, SIGNALS
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck, Mechanism
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage

from .cluster import Setup, draw_setup
from .dynamics import Timeline, draw_timeline
from .exporters import present_families, sample_exporter
from .gpu_readings import gpu_readings
from .host_readings import node_readings, pod_readings
from .label import Label, read_label
from .solve import flow
from .stations import Demands, compute_demands
from .workload import Workload, draw_workload

BLOCK_SALT = 1_000_003
MAX_ATTEMPTS = 120  # redraws before a Job keeps whatever label its physics gives
MECHANISM_ATTEMPTS = 60  # of those, how many insist on the wanted mechanism too
LEAN = 0.85  # share of draws that lean towards the wanted mechanism; the rest are drawn plainly

# How often each mechanism is wanted inside its class: NVLink-bound training is rare on real
# hardware (tensor parallelism is kept inside NVLink domains because it fits there), so it is
# wanted least.
_WANT: dict[Bottleneck, tuple[tuple[Mechanism, ...], tuple[float, ...]]] = {
    Bottleneck.GPU: ((Mechanism.COMPUTE, Mechanism.LAUNCH_BOUND), (0.5, 0.5)),
    Bottleneck.MEMORY: ((Mechanism.HOST_MEMORY_PRESSURE, Mechanism.HBM_BANDWIDTH), (0.5, 0.5)),
    Bottleneck.INTERCONNECT: ((Mechanism.PCIE, Mechanism.NETWORK, Mechanism.NVLINK), (0.4, 0.4, 0.2)),
    Bottleneck.IO: ((Mechanism.LOCAL_DISK, Mechanism.NETWORK_STORAGE), (0.5, 0.5)),
    Bottleneck.CPU: ((Mechanism.THROTTLED, Mechanism.SATURATED, Mechanism.TOO_FEW_WORKERS), (1 / 3, 1 / 3, 1 / 3)),
}
_NAMESPACES = (
    "ml-research",
    "vision",
    "nlp-train",
    "recsys-prod",
    "speech",
    "health-ai",
    "ml-platform",
    "team-foundation",
)
_EXPORTERS = ("dcgm", "cadvisor", "ksm", "node", "sidecar")


@dataclass(frozen=True)
class FamilyADJob:
    """One labelled Job of family AD.

    Attributes:
        namespace, name: the Job's identity.
        label: the class of its bottleneck station (never Unknown).
        mechanism: a ``Mechanism`` value of that class.
        tags: what was drawn ("gpu:a100", "storage:nfs", ..., and "hard" for a near tie).
        window: the telemetry the operator would read.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


@dataclass(frozen=True)
class _Draw:
    wl: Workload
    su: Setup
    tl: Timeline
    d: Demands
    lab: Label


def block_intent(seed: int, i: int) -> Bottleneck:
    """The class Job ``i`` is steered towards: one of each class per block of five, shuffled."""
    order = np.random.default_rng((seed, BLOCK_SALT, i // 5)).permutation(len(CLASSES))
    return CLASSES[int(order[i % 5])]


def _draw(rng: np.random.Generator, want: Bottleneck, start: float, step: float) -> _Draw:
    """Redraw a configuration until its physics gives the wanted class (and, at first, mechanism)."""
    mechs, weights = _WANT[want]
    mech = mechs[int(rng.choice(len(mechs), p=np.asarray(weights) / sum(weights)))]
    last: _Draw | None = None
    for attempt in range(MAX_ATTEMPTS):
        lean = rng.random() < LEAN
        wl = draw_workload(rng, mech, lean)
        su = draw_setup(rng, mech, lean, wl, step)
        tl = draw_timeline(rng, start, step, su.samples, su.scrape_s, su.neighbours)
        d = compute_demands(wl, su, tl)
        last = _Draw(wl, su, tl, d, read_label(d, su, tl))
        if last.lab.label is want and (last.lab.mechanism is mech or attempt >= MECHANISM_ATTEMPTS):
            return last
    assert last is not None
    return last


def _names(rng: np.random.Generator, dr: _Draw, i: int) -> tuple[str, str, list[str], list[str]]:
    """Namespace, Job name, pod names and node names, in the layouts real controllers give them."""
    ns = _NAMESPACES[int(rng.integers(0, len(_NAMESPACES)))]
    token = "".join(rng.choice(list("bcdfghjklmnpqrstvwxz2456789"), size=5))
    name = f"{dr.wl.size.replace('.', '-')}-{token}-{i:04d}"
    pods = dr.su.pods
    style = int(rng.integers(0, 3))
    if style == 0:  # Kubeflow PyTorchJob: a master and workers
        pod_names = [f"{name}-master-0"] + [f"{name}-worker-{k}" for k in range(pods - 1)]
    elif style == 1:  # indexed batch/v1 Job
        pod_names = [f"{name}-{k}-{''.join(rng.choice(list('abcdefghjkmnpqrstuvwxyz'), size=5))}" for k in range(pods)]
    else:  # JobSet
        pod_names = [
            f"{name}-trainer-0-{k}-{''.join(rng.choice(list('abcdefghjkmnpqrstuvwxyz'), size=5))}" for k in range(pods)
        ]
    rack = int(rng.integers(1, 40))
    nodes = [f"gpu-{dr.su.gpu.key}-r{rack:02d}-n{int(rng.integers(1, 64)):02d}" for _ in range(pods)]
    return ns, name, pod_names, nodes


def _tags(dr: _Draw) -> tuple[str, ...]:
    wl, su = dr.wl, dr.su
    tags = [
        f"kind:{wl.kind}", f"model:{wl.size}", f"batch:{wl.batch}", f"precision:{wl.precision}",
        f"gpu:{su.gpu.key}", f"gpus-per-pod:{su.gpus}", f"pods:{su.pods}", f"tp:{wl.tp}",
        f"fabric:{su.fabric}", f"nics:{su.nics}", f"storage:{su.storage.key}",
        f"storage-gbps:{su.storage_gbps:.2f}", f"cache-hit:{su.cache_hit:.2f}", f"workers:{su.workers}",
        f"prefetch:{su.prefetch}", "cpu-limit:none" if su.cpu_limit is None else f"cpu-limit:{su.cpu_limit:g}",
        "mem-limit:none" if su.mem_limit_gb is None else f"mem-limit-gb:{su.mem_limit_gb:.0f}",
        f"swap:{su.swap}", f"neighbours:{int(su.neighbours.sum())}", "pinned" if su.pinned else "pageable",
        f"power-cap-w:{su.power_cap_w:.0f}" if su.power_cap_w < su.gpu.tdp_w else "power-cap:none",
        f"scrape:{su.scrape_s:g}s", f"dcgm-collect:{su.dcgm_collect_s:g}s", f"fields:{su.field_set}",
        f"mmap:{str(wl.mmap).lower()}", f"decode-ms:{wl.decode_s * 1e3:.2f}",
    ]  # fmt: skip
    tags += [f"exporter:{f}" for f in sorted(su.families)]
    tags += ["phase:eval"] if (dr.tl.eval & dr.tl.in_window).any() else []
    tags += ["phase:checkpoint"] if (dr.tl.ckpt & dr.tl.in_window).any() else []
    tags += [f"counter-reset:{su.reset[0]}"] if su.reset is not None else []
    tags += ["hard"] if dr.lab.hard else []
    return tuple(tags)


def _truth(dr: _Draw, rng: np.random.Generator) -> dict[str, npt.NDArray[np.float64]]:
    """Every signal's true value (gauges) or rate (counters) on the base grid, shape (pods, T)."""
    fl = flow(dr.d, dr.su, dr.tl)
    truth: dict[str, npt.NDArray[np.float64]] = {}
    for part in gpu_readings(dr.wl, dr.su, dr.d, fl, rng):
        truth.update(part)
    rates, levels, cpu = pod_readings(dr.wl, dr.su, dr.d, fl, rng)
    node_rates, node_levels = node_readings(dr.wl, dr.su, dr.tl, dr.d, fl, cpu, rates, levels, rng)
    for part in (rates, levels, node_rates, node_levels):
        truth.update(part)
    return truth


def _pod_signals(
    dr: _Draw, truth: dict[str, npt.NDArray[np.float64]], pod: int, timestamps: npt.NDArray[np.float64],
    step: float, rng: np.random.Generator,
) -> dict[str, npt.NDArray[np.float64]]:  # fmt: skip
    """One pod's signals, in the contract's order, each exporter scraped on its own grid."""
    fams = present_families(dr.su)
    row = {k: v[pod] for k, v in truth.items()}
    out: dict[str, npt.NDArray[np.float64]] = {}
    for exporter in _EXPORTERS:
        names = [
            n
            for n in (*SIGNAL_NAMES, *CONTEXT_SIGNALS)
            if SIGNALS[n].family in fams and SIGNALS[n].family.exporter_name == exporter
            and (n in row or n in ("cpu_throttled_frac", "sc_throttled_frac") or n.startswith("node_cpu_"))
            and not (n == "sc_throttled_frac" and dr.su.cpu_limit is None)
        ]  # fmt: skip
        if names:
            out.update(sample_exporter(rng, exporter, names, row, dr.tl, dr.su, timestamps, step))
    order = [n for n in (*SIGNAL_NAMES, *CONTEXT_SIGNALS) if n in out]
    return {n: out[n] for n in order}


def _job(seed: int, i: int, start: float, step: float) -> FamilyADJob:
    rng = np.random.default_rng((seed, i))
    dr = _draw(rng, block_intent(seed, i), start, step)
    ns, name, pod_names, nodes = _names(rng, dr, i)
    timestamps = start + step * np.arange(dr.su.samples, dtype=np.float64)
    truth = _truth(dr, rng)
    pods = tuple(
        PodWindow(
            pod=pod_names[p],
            node=nodes[p],
            gpu_model=dr.su.gpu.model_name,
            gpu_count=dr.su.gpus,
            signals=SignalBlock.of(_pod_signals(dr, truth, p, timestamps, step, rng), timestamps.size),
            co_located_pods=int(dr.su.neighbours[p]),
        )
        for p in range(dr.su.pods)
    )
    families, coverage = families_and_coverage(pods)
    notes = ("no PROF fields",) if dr.su.field_set == "dev" else ()
    quality = DataQuality(families=families, coverage=coverage, scrape_interval=dr.su.scrape_s, notes=notes)
    window = JobWindow(ns, name, start, float(timestamps[-1]), step, timestamps, pods, quality)
    return FamilyADJob(ns, name, dr.lab.label, dr.lab.mechanism.value, _tags(dr), window)


def generate_family_ad(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyADJob]:
    """``n`` labelled Jobs of family AD, every window starting at ``start``.

    Args:
        seed: the family's seed.
        n: how many Jobs (0 gives none).
        start: unix seconds of every window's first timestamp.
        step: seconds between window timestamps.

    Raises:
        ValueError: ``n`` is negative or ``step`` is not positive.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, not {n}")
    if not step > 0:
        raise ValueError(f"step must be > 0, not {step}")
    return [_job(seed, i, float(start), float(step)) for i in range(n)]
