"""Simulated jobs: names, pods and nodes around a scenario, and the seeded generator of many."""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np

from bottleneck_operator.contract.verdict import CLASSES, Bottleneck, Mechanism
from bottleneck_operator.contract.window import JobWindow
from bottleneck_operator.errors import UsageError
from bottleneck_operator_dev.simulation import catalog as cat
from bottleneck_operator_dev.simulation.draw import draw_scenario
from bottleneck_operator_dev.simulation.environment import FIELDSETS
from bottleneck_operator_dev.simulation.physics import simulate
from bottleneck_operator_dev.simulation.record import SimNode, SimPod
from bottleneck_operator_dev.simulation.render_window import render_window
from bottleneck_operator_dev.simulation.scenario import Scenario, true_mechanism
from bottleneck_operator_dev.simulation.state import JobState

_WORDS = ("train", "finetune", "pretrain", "sweep", "exp", "run", "ablation", "baseline")
_PREFIX = {"vision-cnn": "resnet", "vision-vit": "vit", "llm": "llm", "av": "asr", "recsys": "dlrm"}


@dataclass
class SimulatedJob:
    """One simulated training Job with its ground truth.

    Attributes:
        namespace / name / uid: the Job's identity.
        label: the class that bounds the job (ground truth); ambiguous: a near-tie (margin < 0.15).
        margin: (slowest - runner-up) / slowest of the per-class step times.
        start / end: first and last second of its pods' telemetry; completed: the Job finished at ``end``.
        pods: its pods; nodes: their nodes; neighbours: non-profiled pods per node (name, namespace).
        params: the scenario (``params.tags``, ``params.dcgm_fieldset``, ``params.scrape_interval``, ...).
    """

    namespace: str
    name: str
    uid: str
    label: Bottleneck
    ambiguous: bool
    margin: float
    start: float
    end: float
    completed: bool
    pods: tuple[SimPod, ...]
    params: Scenario
    nodes: tuple[SimNode, ...] = ()
    neighbours: tuple[tuple[tuple[str, str, str], ...], ...] = ()  # per node: (namespace, pod, job)

    @property
    def tags(self) -> tuple[str, ...]:
        return self.params.tags

    @property
    def mechanism(self) -> Mechanism | None:
        """How the bounding stage limits the job (ground truth; None where no named mechanism applies)."""
        return true_mechanism(self.params)

    @cached_property
    def state(self) -> JobState:
        """The per-scrape physical state (computed once, on first use)."""
        node_index = {nd.name: i for i, nd in enumerate(self.nodes)}
        return simulate(self.params, self.start, self.end, tuple(node_index[p.node] for p in self.pods))

    def to_window(self, step: float = 30.0, start: float | None = None, end: float | None = None) -> JobWindow:
        """The job's signals as the data layer would return them (see ``render_window``).

        Args:
            step: seconds between window timestamps.
            start / end: window bounds (default: the job's own).

        Returns:
            The window.
        """
        return render_window(self, step=step, start=start, end=end)

    def ground_truth(self) -> dict[str, Any]:
        """JSON-friendly ground truth of the job."""
        return {
            "namespace": self.namespace,
            "job": self.name,
            "uid": self.uid,
            "label": self.label.value,
            "mechanism": self.mechanism.value if self.mechanism else None,
            "ambiguous": self.ambiguous,
            "margin": round(self.margin, 4),
            "start": self.start,
            "end": self.end,
            "completed": self.completed,
            "pods": [
                {"pod": p.pod, "node": p.node, "gpu_count": p.gpu_count, "gpu_model": p.gpu_model} for p in self.pods
            ],
            "tags": list(self.tags),
            "params": self.params.as_dict(),
        }


def _ip(rng: np.random.Generator, prefix: str) -> str:
    a, b = (int(v) for v in rng.integers(1, 255, size=2))
    return f"{prefix}.{a}.{b}"


def _free_ip(ip: str, used: set[str]) -> str:
    """``ip``, or the next address of its /16 (hosts .1-.254) that no earlier job of the set took."""
    prefix, a, b = ip.rsplit(".", 2)
    k = (int(a) - 1) * 254 + (int(b) - 1)
    for _ in range(254 * 254):
        ip = f"{prefix}.{k // 254 + 1}.{k % 254 + 1}"
        if ip not in used:
            break
        k = (k + 1) % (254 * 254)
    used.add(ip)
    return ip


def _unique_ips(job: SimulatedJob, used: set[str]) -> SimulatedJob:
    """The job with node and pod IPs no earlier job of the set uses.

    Random draws from a /16 collide once a set has about a thousand nodes (the birthday bound);
    two nodes sharing an ``instance`` would make node-exporter's join on node_uname_info ambiguous.
    Only the colliding addresses move (no random draw), so a set without collisions is unchanged.
    """
    nodes = tuple(replace(nd, ip=_free_ip(nd.ip, used)) for nd in job.nodes)
    pods = tuple(replace(p, ip=_free_ip(p.ip, used)) for p in job.pods)
    if nodes == job.nodes and pods == job.pods:
        return job
    return replace(job, nodes=nodes, pods=pods)


def _suffix(rng: np.random.Generator, k: int = 5) -> str:
    letters = "bcdfghjklmnpqrstvwxz2456789"  # Kubernetes' random-name alphabet
    return "".join(letters[int(i)] for i in rng.integers(len(letters), size=k))


def _build_job(rng: np.random.Generator, sc: Scenario, namespace: str, start: float, duration: float) -> SimulatedJob:
    name = f"{_PREFIX.get(sc.workload, 'job')}-{_WORDS[int(rng.integers(len(_WORDS)))]}-{_suffix(rng, 6)}"
    kind = cat.GPU_KINDS[sc.gpu]
    n_nodes = math.ceil(sc.n_pods / sc.pods_per_node)
    nodes = tuple(
        SimNode(
            name=f"gpu-{sc.gpu.lower()}-{_suffix(rng, 8)}",
            ip=_ip(rng, "10.0"),
            cpus=sc.node_cpus,
            mem_bytes=sc.node_mem_bytes,
            gpus=sc.gpus_per_node,
        )
        for _ in range(n_nodes)
    )
    pods = []
    for i in range(sc.n_pods):
        node = nodes[i // sc.pods_per_node]
        slot = i % sc.pods_per_node
        pods.append(
            SimPod(
                pod=f"{name}-{i}-{_suffix(rng)}" if sc.n_pods > 1 else f"{name}-{_suffix(rng)}",
                node=node.name,
                gpu_count=sc.gpus_per_pod,
                gpu_model=kind.model_name,
                uid=str(uuid.UUID(bytes=rng.bytes(16), version=4)),
                ip=_ip(rng, "10.244"),
                first_gpu=slot * sc.gpus_per_pod,
            )
        )
    neighbours = tuple(
        tuple(
            (ns, f"{job}-{_suffix(rng)}", job)
            for ns, job in [
                ("team-" + _suffix(rng, 3), f"batch-{_suffix(rng, 6)}") for _ in range(sc.env.neighbour_pods)
            ]
        )
        for _ in nodes
    )
    offset = float(rng.uniform(0.0, min(60.0, 0.05 * duration)))
    return SimulatedJob(
        namespace=namespace,
        name=name,
        uid=str(uuid.UUID(bytes=rng.bytes(16), version=4)),
        label=Bottleneck(sc.label),
        ambiguous=sc.margin < 0.15,
        margin=sc.margin,
        start=round(start + offset, 3),
        end=float(start + duration),
        completed=bool(rng.random() < 0.7),
        pods=tuple(pods),
        params=sc,
        nodes=nodes,
        neighbours=neighbours,
    )


def _check_arguments(
    n: int,
    duration: float,
    classes: Sequence[Bottleneck] | None,
    scrape_interval: float | None,
    dcgm_fieldset: str | None,
) -> list[Bottleneck]:
    """``generate_jobs``'s arguments checked; returns the pool of target classes."""
    if n < 0:
        raise UsageError("the number of jobs must be >= 0")
    si_max = scrape_interval or 60.0
    if duration < 2 * si_max:
        raise UsageError(f"duration must be at least two scrape intervals ({2 * si_max:g} s)")
    if scrape_interval is not None and scrape_interval <= 0:
        raise UsageError("scrape interval must be > 0")
    if dcgm_fieldset is not None and dcgm_fieldset not in FIELDSETS:
        raise UsageError(f"dcgm field set must be one of {', '.join(FIELDSETS)}, not {dcgm_fieldset!r}")
    pool = [Bottleneck(c) for c in (classes or CLASSES)]
    if not pool or Bottleneck.UNKNOWN in pool:
        raise UsageError(f"classes must be among {', '.join(c.value for c in CLASSES)}")
    return pool


def _draw_job(
    root: np.random.Generator,
    target: Bottleneck,
    *,
    include_ambiguous: bool,
    holdout: bool,
    scrape_interval: float | None,
    dcgm_fieldset: str | None,
    where: tuple[str, float, float],
) -> SimulatedJob:
    """One job of ``target`` class (``where``: namespace, start, duration), from its own seed drawn from ``root``."""
    ambiguous = include_ambiguous and bool(root.random() < 0.2)
    job_seed = int(root.integers(2**62))
    rng = np.random.default_rng(job_seed)
    sc = draw_scenario(
        rng,
        target,
        ambiguous=ambiguous,
        holdout=holdout,
        seed=job_seed,
        scrape_interval=scrape_interval,
        dcgm_fieldset=dcgm_fieldset,
    )
    return _build_job(rng, sc, *where)


def generate_jobs(
    seed: int,
    n: int,
    *,
    start: float,
    duration: float = 900.0,
    classes: Sequence[Bottleneck] | None = None,
    holdout: bool = False,
    include_ambiguous: bool = False,
    scrape_interval: float | None = None,
    dcgm_fieldset: str | None = None,
    namespace: str = "ml",
) -> list[SimulatedJob]:
    """Generate ``n`` simulated jobs, deterministic for ``seed``.

    Args:
        seed: the seed; the same arguments give the same jobs.
        n: number of jobs.
        start: unix time the jobs start (each with a small random delay).
        duration: seconds from ``start`` to the jobs' end.
        classes: target classes, cycled in shuffled rounds (roughly balanced); None: every class.
        holdout: draw only hardware combinations (and seeds) reserved for evaluation.
        include_ambiguous: about one job in five is a near-tie (margin < 0.15) labelled by its slowest stage.
        scrape_interval: force the scrape interval (15/30/60 s are drawn otherwise).
        dcgm_fieldset: force "dev", "shipped" or "full".
        namespace: the jobs' namespace.

    Returns:
        The jobs, with unique names and pod names.

    Raises:
        UsageError: on invalid arguments.
    """
    pool = _check_arguments(n, duration, classes, scrape_interval, dcgm_fieldset)
    root = np.random.default_rng([seed, int(holdout), 0xB07])
    jobs: list[SimulatedJob] = []
    order: list[Bottleneck] = []
    names: set[str] = set()
    ips: set[str] = set()
    while len(jobs) < n:
        if not order:
            order = [pool[int(i)] for i in root.permutation(len(pool))]
        job = _draw_job(
            root,
            order.pop(0),
            include_ambiguous=include_ambiguous,
            holdout=holdout,
            scrape_interval=scrape_interval,
            dcgm_fieldset=dcgm_fieldset,
            where=(namespace, start, duration),
        )
        if job.name in names:
            continue
        names.add(job.name)
        jobs.append(_unique_ips(job, ips))
    return jobs
