"""Family F's public entry: labelled job windows, drawn blind, for evaluation only."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.familyf.assemble import read_exporters
from bottleneck_operator_dev.familyf.design import Design, draw_design
from bottleneck_operator_dev.familyf.setup import Watch, draw_watch

_NAMESPACES = ("llm-platform", "ranking", "vision-research", "speech", "genai", "ml-batch", "team-nlp")
_PREFIX = {
    "llm-pretrain-fsdp": "pretrain",
    "llm-finetune-zero": "sft",
    "llm-pipeline-tp": "megatron",
    "recsys-embeddings": "dlrm",
    "vision-jpeg": "imagenet",
    "video-decode": "videomae",
    "speech-asr": "asr",
    "diffusion": "sdxl",
}


@dataclass(frozen=True)
class FamilyFJob:
    """One labelled job of family F.

    Attributes:
        namespace, name: the Job.
        label: the class whose stages, removed, would shorten the step most (family F's step model).
        mechanism: how that class binds (a :class:`~bottleneck_operator.contract.verdict.Mechanism` value).
        tags: what makes the job what it is: workload, board, fabric, storage, field set, accidents.
        window: the telemetry window, as the data layer would hand it to the analysis.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def _targets(seed: int, n: int) -> list[Bottleneck]:
    """The five classes in equal numbers (one more for the first ``n % 5``), in a shuffled order."""
    order = np.random.default_rng((seed, n, 0xF)).permutation(n)
    return [CLASSES[int(k) % len(CLASSES)] for k in order]


def _pods(d: Design, signals: dict[str, np.ndarray], job: str, rng: np.random.Generator) -> tuple[PodWindow, ...]:
    role = "worker" if d.pods > 1 else "trainer"
    racks = rng.integers(1, 40, d.pods)
    return tuple(
        PodWindow(
            pod=f"{job}-{role}-{p}",
            node=f"gpu-{int(racks[p]):02d}-{int(rng.integers(100, 999))}",
            gpu_model=d.board.model_name,
            gpu_count=d.gpus,
            signals=SignalBlock.of({k: v[p] for k, v in signals.items()}),
            co_located_pods=d.neighbours[p],
        )
        for p in range(d.pods)
    )


def _tags(d: Design, watch: Watch, extra: list[str]) -> tuple[str, ...]:
    tags = [
        d.workload,
        d.board.model_name,
        d.fabric.name,
        d.storage.name,
        f"dcgm-{watch.field_set}",
        f"scrape-{int(watch.interval['dcgm'])}s",
        f"swap-{d.swap}",
        f"link-{d.comm_link}",
        *extra,
    ]
    if d.accumulation > 1:
        tags.append(f"grad-accum-{d.accumulation}")
    if d.hard:
        tags.append("borderline")
    if d.power_cap < 1.0:
        tags.append("power-capped")
    if any(d.neighbours):
        tags.append("shared-node")
    if watch.down is not None:
        tags.append(f"{watch.down[0]}-restarted")
    if watch.stuck_engine:
        tags.append("gr-engine-stuck")
    if Family.SIDECAR not in watch.families:
        tags.append("no-sidecar")
    return tuple(tags)


def family_f_job(seed: int, i: int, target: Bottleneck, *, start: float, step: float = 30.0) -> FamilyFJob:
    """Job ``i`` of family F, drawn from its own generator seeded ``(seed, i)``."""
    rng = np.random.default_rng((seed, i))
    design = draw_design(rng, target)
    samples = int(rng.integers(20, 121))
    at = start + step * np.arange(samples, dtype=np.float64)
    watch = draw_watch(rng, design, start, float(at[-1]))
    # the pod's own network counters draw from a generator of their own: the other signals keep their draws
    signals, extra = read_exporters(rng, design, watch, at, step, np.random.default_rng((seed, i, 0x4E7)))
    namespace = _NAMESPACES[int(rng.integers(len(_NAMESPACES)))]
    name = f"{_PREFIX[design.workload]}-{int(rng.integers(16**6)):06x}"
    pods = _pods(design, signals, name, rng)
    families, coverage = families_and_coverage(pods)
    notes = () if Family.DCGM_PROF in families else ("no PROF fields",)
    window = JobWindow(
        namespace=namespace,
        job=name,
        start=start,
        end=float(at[-1]),
        step=step,
        timestamps=at,
        pods=pods,
        quality=DataQuality(families=families, coverage=coverage, scrape_interval=watch.interval["dcgm"], notes=notes),
    )
    return FamilyFJob(namespace, name, design.label, design.mechanism.value, _tags(design, watch, extra), window)


def generate_family_f(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyFJob]:
    """``n`` labelled jobs of family F, the five classes in equal numbers, in shuffled order.

    Args:
        seed: the family's seed; job ``i`` depends on ``(seed, i)`` and its class alone.
        n: number of jobs.
        start: every window's first timestamp (unix seconds); never read from the clock.
        step: seconds between the windows' timestamps.

    Raises:
        ValueError: ``n`` is negative or ``step`` is not positive.
    """
    if n < 0 or step <= 0:
        raise ValueError(f"need n >= 0 and step > 0, not n={n}, step={step}")
    return [family_f_job(seed, i, target, start=start, step=step) for i, target in enumerate(_targets(seed, n))]
