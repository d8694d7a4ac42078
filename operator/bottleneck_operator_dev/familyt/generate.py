"""Family T: the generator the evaluation bench calls."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.contract.window import DataQuality, JobWindow, families_and_coverage
from bottleneck_operator_dev.familyt.draw import JobSpec, draw_job
from bottleneck_operator_dev.familyt.exporters import pod_window
from bottleneck_operator_dev.familyt.scrape import Cluster, draw_cluster

NAMESPACES = ("vision", "nlp", "recsys", "genai", "graphs", "research")


@dataclass(frozen=True)
class FamilyTJob:
    """One labelled job window of family T.

    Attributes:
        namespace, name: the Job's.
        label: the class of the stage whose removal shortens the modelled step most.
        mechanism: how that stage limits the job (a ``Mechanism`` value of the contract).
        tags: the job's make-up ("arch:cnn", "gpu:...", "hard", ...), for slicing results.
        window: the telemetry as the data layer hands it to the analysis.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def class_plan(seed: int, n: int) -> list[Bottleneck]:
    """The classes of jobs 0..n-1: equal numbers as near as ``n`` allows, shuffled by the seed."""
    plan = [CLASSES[i % len(CLASSES)] for i in range(n)]
    order = np.random.default_rng((seed, 0x7A11)).permutation(n)
    return [plan[int(j)] for j in order]


def _tags(spec: JobSpec, cl: Cluster) -> tuple[str, ...]:
    tags = [
        f"arch:{spec.work.arch}",
        f"gpu:{spec.gpu.model}",
        f"precision:{spec.work.precision}",
        f"stage:{spec.stage}",
        f"nodes:{spec.nodes}",
        f"gpus_per_node:{spec.gpus_per_node}",
        f"fabric:{spec.fabric.name if spec.fabric else 'none'}",
        f"storage:{spec.storage.kind}",
        f"fields:{cl.fields}",
        f"scrape:{cl.scrape:g}",
        "hard" if spec.runner_up >= 0.7 else "easy",
    ]
    if cl.neighbours:
        tags.append("shared-node")
    if spec.power_limit_w < spec.gpu.tdp_w:
        tags.append("power-capped")
    if cl.restarts:
        tags.append("counter-reset")
    if spec.overlap.workers == 0:
        tags.append("no-workers")
    return tuple(tags)


def generate_job(seed: int, i: int, label: Bottleneck, *, start: float, step: float) -> FamilyTJob:
    """Job ``i`` of class ``label``: a function of (seed, i, label) alone."""
    rng = np.random.default_rng((seed, i))
    spec = draw_job(rng, label)
    cl = draw_cluster(rng)
    points = int(rng.integers(40, 121))
    timestamps = start + step * np.arange(points, dtype=np.float64)
    ns = NAMESPACES[int(rng.integers(len(NAMESPACES)))]
    name = f"t-{spec.work.arch}-{i:04d}"
    pods = tuple(
        pod_window(
            spec,
            cl,
            rng,
            pod=f"{name}-worker-{k}",
            node=f"gpu-node-{int(rng.integers(1000)):03d}",
            node_index=k,
            timestamps=timestamps,
            step=step,
        )
        for k in range(spec.nodes)
    )
    families, coverage = families_and_coverage(pods)
    notes = () if cl.fields != "dev" else ("no PROF fields",)
    window = JobWindow(
        namespace=ns,
        job=name,
        start=float(timestamps[0]),
        end=float(timestamps[-1]),
        step=step,
        timestamps=timestamps,
        pods=pods,
        quality=DataQuality(families=families, coverage=coverage, scrape_interval=cl.scrape, notes=notes),
    )
    return FamilyTJob(ns, name, spec.label, spec.mechanism.value, _tags(spec, cl), window)


def generate_family_t(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyTJob]:
    """``n`` labelled job windows of family T, every window starting at ``start``.

    Raises:
        ValueError: ``n`` negative or ``step`` not positive.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, not {n}")
    if not step > 0:
        raise ValueError(f"step must be > 0 seconds, not {step}")
    plan = class_plan(seed, n)
    return [generate_job(seed, i, plan[i], start=start, step=step) for i in range(n)]
