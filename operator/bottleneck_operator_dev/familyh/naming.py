"""Names and tags: what a job is called on its cluster, and what the family records about it.

Names carry nothing of the label (a reader of a window must not learn the class from its name);
tags describe the set-up and the accidents, for slicing results later.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator.contract.signals import EXPORTERS
from bottleneck_operator_dev.familyh.cluster import Accidents, Cluster
from bottleneck_operator_dev.familyh.draft import Draft

Rng = np.random.Generator

NAMESPACES = ("ml-research", "llm-train", "recsys-prod", "vision", "speech-asr", "genai", "team-a", "batch-ml")
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # Kubernetes' generated-name alphabet


def _suffix(rng: Rng, k: int) -> str:
    return "".join(_ALPHABET[int(j)] for j in rng.integers(len(_ALPHABET), size=k))


def _node_name(rng: Rng, style: int, p: int) -> str:
    if style == 0:
        return f"gpu-node-{int(rng.integers(1, 400)):03d}"
    if style == 1:
        return f"ip-10-{int(rng.integers(0, 255))}-{int(rng.integers(0, 255))}-{int(rng.integers(1, 255))}.ec2.internal"
    return f"gke-train-pool-{_suffix(rng, 8)}-{_suffix(rng, 4)}"


def job_names(rng: Rng, d: Draft, i: int) -> tuple[str, str, list[tuple[str, str]]]:
    """The job's namespace, name, and (pod, node) names, one pod per node."""
    namespace = str(rng.choice(NAMESPACES))
    name = f"train-{_suffix(rng, 5)}-{i:04d}"
    style = int(rng.integers(3))
    pods = [(f"{name}-{p}-{_suffix(rng, 5)}", _node_name(rng, style, p)) for p in range(d.pods)]
    return namespace, name, pods


def tags_of(d: Draft, cl: Cluster, acc: Accidents, hardness: tuple[str, ...]) -> tuple[str, ...]:
    """What the job is and what happened to it."""
    tags = [
        d.workload.name,
        d.board.model_name,
        d.storage.kind,
        f"dcgm-{cl.field_set}",
        f"scrape-{cl.scrape_s:g}s",
        f"pods-{d.pods}",
        f"gpus-{d.gpus}",
        f"swap-{cl.swap}",
        *hardness,
    ]
    tags += [d.fabric.kind] if d.fabric is not None else []
    tags += [f"grad-accum-{d.accum}"] if d.accum > 1 else []
    tags += ["pipeline-parallel"] if d.stages.bubble > 0 else []
    tags += ["fp32-math"] if d.fp32_math else []
    tags += ["mmap-dataset"] if d.mmap_reads else []
    tags += ["gpu-time-sliced"] if d.timeslice > 0 else []
    tags += ["cpu-limit"] if d.cpu_limit is not None else []
    tags += ["memory-limit"] if d.mem_limit is not None else []
    tags += [f"power-cap-{cl.power_cap_frac:.2f}"] if cl.power_cap_frac < 1.0 else []
    tags += ["clocks-locked"] if cl.clocks_locked else []
    tags += ["checkpoint-pauses"] if acc.checkpoint_every_s > 0 else []
    tags += ["warmup"] if acc.warmup_s > 0 else []
    tags += ["eval-passes"] if acc.eval_every_s > 0 else []
    gap = acc.exporter_gap
    tags += [f"exporter-restart-{gap[0]}"] if gap is not None and EXPORTERS[gap[0]] in cl.families else []
    tags += ["container-restart"] if acc.container_restart is not None else []
    tags += ["ib-counter-reset"] if acc.ib_reset_at is not None else []
    tags += ["ib-legacy-counters"] if acc.ib_saturating else []
    tags += [f"neighbours-{acc.neighbours}"] if acc.neighbours else []
    tags += [f"prometheus-{cl.prometheus_major}"]
    tags += [f"no-{name}" for name, fam in EXPORTERS.items() if fam not in cl.families]
    return tuple(tags)
