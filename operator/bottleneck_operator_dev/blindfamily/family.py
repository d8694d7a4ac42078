"""The blind family: labelled job windows drawn from a first-principles model of the training step.

Written without reading how the project analyses telemetry or how its other scenario families are
built, and tuned against nothing; see docs/blindfamily.md.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.signals import SIGNAL_NAMES
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.blindfamily.clusters import node_name
from bottleneck_operator_dev.blindfamily.draft import Draft, stages_of
from bottleneck_operator_dev.blindfamily.draw import draw_job
from bottleneck_operator_dev.blindfamily.exporters import Scrape, draw_scrape, sample
from bottleneck_operator_dev.blindfamily.render_gpu import gpu_signals
from bottleneck_operator_dev.blindfamily.render_host import host_signals
from bottleneck_operator_dev.blindfamily.render_node import node_signals
from bottleneck_operator_dev.blindfamily.timeline import FloatArray, timeline

# Node names stay unique across one family: each job gets its own block of serials.
_NODES_PER_JOB = 16
# Added to a job's seed tuple for the generator of its pods' own network bytes.
_OWN_NET = 0x4E7


@dataclass(frozen=True)
class BlindJob:
    """One labelled job window.

    Attributes:
        namespace, name: the job's.
        label: the class that bounds the job (the stage whose removal would speed it up most).
        mechanism: how (see docs/blindfamily.md for the list).
        tags: the job's cluster, board, workload, exporter set-up and quirks.
        window: the telemetry, as the data layer would hand it to the analysis.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def generate_blind_family(seed: int, n: int, *, start: float, step: float = 30.0) -> list[BlindJob]:
    """``n`` labelled jobs, the five classes in equal numbers (in a shuffled order), deterministic per seed.

    Each job is drawn from its own generator, seeded with (seed, index). Every window starts at
    ``start`` (unix seconds, never the clock) and lasts 10-60 minutes on a grid of ``step`` seconds.
    """
    order = np.random.default_rng(seed).permutation(n)
    classes = [CLASSES[int(i) % len(CLASSES)] for i in order]
    taken: set[tuple[str, str]] = set()
    jobs = []
    for i, cls in enumerate(classes):
        rng = np.random.default_rng([seed, i])
        d, _ = draw_job(rng, cls)
        # the pod's own network bytes draw from a generator of their own: no other draw moves
        own_rng = np.random.default_rng([seed, i, _OWN_NET])
        jobs.append(_render(d, rng, i, start, step, taken, own_rng))
    return jobs


def _names(d: Draft, rng: np.random.Generator, taken: set[tuple[str, str]]) -> tuple[str, str]:
    alphabet = list(string.ascii_lowercase + string.digits)
    while True:
        ns = str(rng.choice(d.arch.namespaces))
        name = f"{rng.choice(d.arch.jobs)}-{''.join(rng.choice(alphabet, 5))}"
        if (ns, name) not in taken:
            taken.add((ns, name))
            return ns, name


def _render(
    d: Draft,
    rng: np.random.Generator,
    index: int,
    start: float,
    step: float,
    taken: set[tuple[str, str]],
    own_rng: np.random.Generator,
) -> BlindJob:
    """Draw the job's window: timeline, exporters' view, pods and nodes."""
    ns, name = _names(d, rng, taken)
    n = max(2, int(float(rng.uniform(600.0, 3600.0)) // step))
    s = stages_of(d)
    tl = timeline(d, s, n, step, rng)
    raw: dict[str, FloatArray] = dict(gpu_signals(d, s, tl, rng))
    host, load = host_signals(d, tl, rng, step)
    raw.update(host)
    node_sig, neighbours, own = node_signals(d, tl, load, rng)
    raw.update(node_sig)
    sc = draw_scrape(d, rng, step)
    net = {"sc_net_rx_bps": own["rx"], "sc_net_tx_bps": own["tx"]}
    sig = sample(raw, sc, step, rng, net, own_rng)
    pods = _pods(d, rng, name, index, sig, neighbours)
    families, coverage = families_and_coverage(pods)
    window = JobWindow(
        namespace=ns,
        job=name,
        start=start,
        end=start + (n - 1) * step,
        step=step,
        timestamps=start + step * np.arange(n, dtype=np.float64),
        pods=pods,
        quality=DataQuality(families=families, coverage=coverage, scrape_interval=sc.scrape_s),
    )
    return BlindJob(ns, name, d.cls, d.mechanism, _tags(d, sc, neighbours), window)


def _pods(
    d: Draft, rng: np.random.Generator, job: str, index: int, sig: dict[str, FloatArray], neighbours: list[int]
) -> tuple[PodWindow, ...]:
    """One PodWindow per pod, its signals in catalogue order as one block."""
    names = [k for k in SIGNAL_NAMES if k in sig]
    block = np.stack([sig[k] for k in names])  # (signals, pods, samples)
    worker = rng.random() < 0.5
    ppn = min(d.pods_per_node, d.n_pods)
    nodes = [node_name(d.cluster, index * _NODES_PER_JOB + j, rng) for j in range(d.nodes)]
    return tuple(
        PodWindow(
            pod=f"{job}-worker-{p}" if worker else f"{job}-{p}",
            node=nodes[p // ppn],
            gpu_model=d.board.model,
            gpu_count=d.k,
            signals=SignalBlock(names, block[:, p, :]),
            co_located_pods=neighbours[p],
        )
        for p in range(d.n_pods)
    )


def _tags(d: Draft, sc: Scrape, neighbours: list[int]) -> tuple[str, ...]:
    extra = [d.cluster.name, d.board.model, d.arch.name, f"pods-{d.n_pods}", f"gpus-per-pod-{d.k}"]
    if d.nodes > 1:
        extra += ["multi-node", f"nic-{d.nic_gbps:g}gbe"]
    if any(neighbours):
        extra.append("shared-node")
    return tuple(dict.fromkeys([*d.tags, *extra, *sc.tags]))
