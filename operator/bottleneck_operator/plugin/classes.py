"""What each verdict class means, the mechanisms behind it, and what to try: the one place this text lives.

``kubectl bottleneck explain CLASS`` prints it; docs/plugin.md carries the same text (a test fails
when they drift). What to try is the analysis's own advice (:data:`~bottleneck_operator.analysis.explain.advice.ADVICE`),
the list a report's recommendations are drawn from, so the two never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bottleneck_operator.analysis.explain.advice import ADVICE
from bottleneck_operator.contract.verdict import Bottleneck


@dataclass(frozen=True)
class ClassText:
    """One class: what it means and the mechanisms that produce it (name, how it shows)."""

    name: Bottleneck
    meaning: str
    mechanisms: tuple[tuple[str, str], ...]


CLASSES: tuple[ClassText, ...] = (
    ClassText(
        Bottleneck.IO,
        "Storage reads bound the input pipeline: the GPUs wait for samples the storage cannot deliver faster.",
        (
            (
                "slow or remote storage",
                "network or object storage, or a throttled volume, reads at its limit; the "
                "local disk can look idle while the node's network receive carries the dataset",
            ),
            (
                "many small random reads",
                "a dataset of small files keeps the disk busy with seeks; iowait and I/O "
                "pressure rise while the bytes read stay low",
            ),
            (
                "object store over HTTP",
                "the dataset streams as network receive with no iowait: readers wait on sockets, "
                "and the reader's own CPU goes to TLS and HTTP",
            ),
            (
                "memory-mapped dataset",
                "reads show as major page faults with iowait rather than as read calls",
            ),
        ),
    ),
    ClassText(
        Bottleneck.CPU,
        "Host-side preprocessing (decoding, augmentation, collation) or CPU throttling bounds the step: the GPUs "
        "wait for batches the CPUs prepare.",
        (
            (
                "saturated loader",
                "the Job's own cgroup uses all the cores it has; CPU pressure is high and storage is not saturated",
            ),
            ("CFS throttling", "the container's CPU limit throttles it while the node may have idle cores"),
            (
                "too few workers",
                "zero to two DataLoader workers (num_workers=0 loads inside the training loop) each run at "
                "a full core while the node sits idle",
            ),
        ),
    ),
    ClassText(
        Bottleneck.INTERCONNECT,
        "Moving data bounds the step: host-to-GPU copies over PCIe, or gradients between GPUs and nodes over NVLink, "
        "the network or InfiniBand.",
        (
            ("host-to-device copies", "PCIe receive near the link's capacity while SM activity is low and bursty"),
            (
                "collective communication",
                "multi-GPU or multi-node Jobs wait on all-reduce: NVLink or NIC bytes near "
                "capacity, symmetric send and receive, GPUs busy but SMs idle",
            ),
        ),
    ),
    ClassText(
        Bottleneck.GPU,
        "The GPUs' compute bounds the step: the healthy state, where the input pipeline has room to spare and the "
        "Job runs as fast as its GPUs allow.",
        (("compute-bound kernels", "SM and tensor-pipe activity high; nothing else near its limit"),),
    ),
    ClassText(
        Bottleneck.MEMORY,
        "Memory bounds the step: host RAM pressure (reclaim, swap, major faults, OOM kills), or GPU kernels bound by "
        "HBM bandwidth.",
        (
            (
                "host memory pressure",
                "memory pressure stalls, major faults or swap while the working set presses the pod's memory limit",
            ),
            (
                "HBM bandwidth",
                "DRAM activity near its practical peak (about 0.8) while the tensor pipes are little used; "
                "SM activity can still look high, as warps waiting on memory count as active",
            ),
            (
                "GPU memory capacity",
                "a nearly full framebuffer is context, not a stall: it says the batch cannot grow, "
                "and is never evidence for this class on its own",
            ),
        ),
    ),
    ClassText(
        Bottleneck.UNKNOWN,
        "No verdict: the telemetry is too thin to decide (no pods, a short window, low coverage), or the model is "
        "not confident enough and abstains. The report's reason says which.",
        (
            (
                "missing data",
                "a required exporter is not scraped, or the Job ran too briefly; "
                "`kubectl bottleneck doctor` says what is missing and how to fix it",
            ),
            (
                "model doubt",
                "the signals sit between classes or outside what the model was trained on; the "
                "probabilities show the contenders",
            ),
        ),
    ),
)

_BY_NAME = {c.name.value.lower(): c for c in CLASSES}


def lookup(name: str) -> ClassText | None:
    """The class of that name, case-insensitive ("io", "Interconnect"); None when there is none."""
    return _BY_NAME.get(name.strip().lower())


def names() -> list[str]:
    """The classes' names, in the order the documentation lists them."""
    return [c.name.value for c in CLASSES]


def what_to_try(cls: ClassText) -> list[tuple[str, str]]:
    """(action, detail) pairs for a class: the analysis's advice, in its order."""
    if cls.name is Bottleneck.UNKNOWN:
        return [
            (
                "Run `kubectl bottleneck doctor`",
                "It checks every exporter the analysis reads and prints the change that closes each gap.",
            ),
            (
                "Let the Job run longer",
                "A verdict needs a few minutes of samples; the report updates while the Job runs.",
            ),
        ]
    return [(a.action, a.detail) for a in ADVICE.get(cls.name, ())]


def as_dict(cls: ClassText) -> dict[str, Any]:
    """The class as JSON-ready data (``explain -o json``)."""
    return {
        "class": cls.name.value,
        "meaning": cls.meaning,
        "mechanisms": [{"name": n, "signature": s} for n, s in cls.mechanisms],
        "whatToTry": [{"action": a, "detail": d} for a, d in what_to_try(cls)],
    }


def markdown(cls: ClassText) -> str:
    """The class as docs/plugin.md shows it."""
    lines = [f"### {cls.name.value}", "", cls.meaning, "", "Mechanisms:", ""]
    lines += [f"- **{n}**: {s}." for n, s in cls.mechanisms]
    lines += ["", "What to try:", ""]
    lines += [f"- **{a}.** {d}" for a, d in what_to_try(cls)]
    return "\n".join(lines)
