"""The scenario families the classifier may be trained on, beside the simulator (family A).

Each family was written by another hand, with its own stage-time models, exporters and hardware mix; B
beside the simulator, C to AH blind, each read once as an evaluation (docs/analysis.md) and a training
world since that reading spent it (G and J to AH development worlds: listed, not in ``train``'s default
recipe). A family stored for a blind reading is never listed: ``train`` and the benches would fit to it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bottleneck_operator_dev import generators as gen

TRAIN_START = 1767225600.0  # fixed, so a seed reproduces the same windows


@dataclass(frozen=True)
class World:
    """One scenario family: its generator and how the model card names it."""

    letter: str
    generator: Callable[[], Any]  # returns the family's generate(seed, n, *, start)
    name: str  # as the model card says it: "the second scenario family"
    about: str  # one sentence for the model card


WORLDS: dict[str, World] = {
    w.letter: w
    for w in (
        World(
            "B",
            gen.family_b,
            "the second scenario family",
            "Family B, written independently of the simulator, with its own stage-time models, exporter noise and hardware mix.",
        ),
        World(
            "C",
            gen.family_c,
            "the third family",
            "Family C, a pipeline model written from first principles for evaluation alone and read twice before it became a training world (docs/analysis.md).",
        ),
        World(
            "D",
            gen.family_d,
            "the fourth family",
            "Family D, written blind in the same way and read once before it became a training world.",
        ),
        World(
            "E",
            gen.family_e,
            "the fifth family",
            "Family E, written blind after D had been read, read once before it became a training world.",
        ),
        World(
            "F",
            gen.family_f,
            "the sixth family",
            "Family F, written blind after E had been read, with emulated exporters (scrapes, counters, restarts), read once before it became a training world.",
        ),
        World(
            "G",
            gen.family_g,
            "the seventh family",
            "Family G, written blind after F had been read, workloads teams run on varied cluster set-ups read through emulated scrapes, read once (a development world since).",
        ),
        World(
            "H",
            gen.family_h,
            "the eighth family",
            "Family H, written blind after G had been read, one iteration per GPU split into input and trainer stages, read once before it became a training world.",
        ),
        World(
            "I",
            gen.family_i,
            "the ninth family",
            "Family I, written blind after H had been read, a step model of prefetched input, overlapped copies and hidden collectives read through emulated exporters, read once before it became a training world.",
        ),
        World(
            "J",
            gen.family_j,
            "the tenth family",
            "Family J, written blind after I had been read, a stage model of the training step behind a prefetch queue read through emulated exporters (MIG, RoCE, object stores), read once (a development world since).",
        ),
        World(
            "K",
            gen.family_k,
            "the eleventh family",
            "Family K, written blind after J had been read, a step of four lanes run at once (loader, host, copy, GPU) read through cumulative counters, read once (a development world since).",
        ),
        World(
            "L",
            gen.family_l,
            "the twelfth family",
            "Family L, written blind after K had been read, a step of eight stages over twelve workloads (LoRA, mixture-of-experts, RL, GNN sampling among them) read through exporters with their own scrape intervals, read once (a development world since).",
        ),
        World(
            "M",
            gen.family_m,
            "the thirteenth family",
            "Family M, written blind after L had been read, a loader of W workers beside a trainer of copies, roofline kernels and partly hidden collectives on shared nodes with background traffic, read once (a development world since).",
        ),
        World(
            "N",
            gen.family_n,
            "the fourteenth family",
            "Family N, written blind while M was unread, a step whose loader runs beside a GPU path of copies, kernels, pipeline bubbles and launches, labelled over whole windows with warm-up, MIG and elastic pods, read once (a development world since).",
        ),
        World(
            "O",
            gen.family_o,
            "the fifteenth family",
            "Family O, written blind while N was unread, the telemetry a cluster really exports drawn before eight workloads (FSDP, LoRA, tensor/pipeline-parallel LLMs, recommendation, vision, video, speech, diffusion), labelled by the stage whose removal shortens the step most, read once (a development world since).",
        ),
        World(
            "P",
            gen.family_p,
            "the sixteenth family",
            "Family P, written blind while O was unread, a shared multi-tenant cluster (gang-scheduled Jobs on eleven node pools, MIG and time-slicing, each Job's launch settings) running nine workloads, labelled by the stage whose removal shortens the step most, read once (a development world since).",
        ),
        World(
            "Q",
            gen.family_q,
            "the seventeenth family",
            "Family Q, written blind while P was unread, worked back from what a dashboard shows: each Job's window in phases (warm-up, steady training, evaluation passes, checkpoint writes, restarts, a mid-run change) with telemetry that disagrees as real telemetry does, labelled by the stage whose removal shortens the window's steps most, read once (a development world since).",
        ),
        World(
            "R",
            gen.family_r,
            "the eighteenth family",
            "Family R, written blind while Q was unread, from how real fleets go wrong (narrow PCIe links, an NVLink lane down, slower NICs, spot nodes replaced, shared NFS and object stores, cold then warm caches), a seven-stage step model labelling each window by the stage whose removal shortens its steps most, read once (a development world since).",
        ),
        World(
            "S",
            gen.family_s,
            "the nineteenth family",
            "Family S, written blind while R was unread, an event timeline of each pod's training steps on a 50 ms grid (DataLoader workers and a bounded prefetch queue, copies, compute- and bandwidth-bound kernels, collectives overlapped or exposed, checkpoints and evaluation) over the nine MLPerf Training workloads, labelled by re-running the timeline with one stage removed, read once (a development world since).",
        ),
        World(
            "T",
            gen.family_t,
            "the twentieth family",
            "Family T, written blind while S was unread, each step composed from analytic stage models (kernels on the GPU's roofline, an alpha-beta ring all-reduce partly hidden behind backward, a queue of loader workers, host memory against the cgroup limit), labelled by the stage whose removal shortens the step most, read once (a development world since).",
        ),
        World(
            "U",
            gen.family_u,
            "the twenty-first family",
            "Family U, written blind while T was unread, each Job among other tenants whose storage, CPU, host memory, PCIe, NVLink, network and GPU resources are shared by max-min fair allocation in phases as neighbours come and go, labelled by the resource whose share, doubled for this Job alone, shortens its step most, read once (a development world since).",
        ),
        World(
            "V",
            gen.family_v,
            "the twenty-second family",
            "Family V, written blind while U was unread, each Job's training loop a closed queueing network of the batches in flight (storage, decode workers, swap, the host-to-device copy, roofline kernels, launches and the unhidden all-reduce) solved by exact Mean Value Analysis, labelled by the resource whose demand, halved for this Job alone, speeds it most, read once (a development world since).",
        ),
        World(
            "W",
            gen.family_w,
            "the twenty-third family",
            "Family W, written blind while V was unread, each Job a time-stepped stochastic fluid simulation of its input pipeline and training loop with finite buffers and back-pressure (shared bursty storage, a page cache under the cgroup's memory limit, loader workers under a CFS quota, a finite prefetch queue, the PCIe copy, roofline kernels and an all-reduce that synchronises the ranks), sampled as the exporters sample, labelled by the resource whose capacity, doubled for this Job alone, raises its steps per second most, read once (a development world since).",
        ),
        World(
            "X",
            gen.family_x,
            "the twenty-fourth family",
            "Family X, written blind while W was unread, each training step a task dependency graph (shard reads, decode on loader workers, a finite prefetch queue, the host-to-device copy, roofline kernels per layer group with launch costs, DDP gradient buckets all-reduced with an alpha-beta cost, the optimizer step) list-scheduled on the Job's resources across ranks that wait for each other, labelled by the class holding the largest share of the critical path, read once (a development world since).",
        ),
        World(
            "Y",
            gen.family_y,
            "the twenty-fifth family",
            "Family Y, written blind while X was unread and the first with the pod's own network bytes in the contract, each interval of a Job's window a linear program over its shared resources (cores, loader workers, the trainer thread, storage bytes and requests, the NIC, RDMA, PCIe, NVLink, swap, the GPU's time), its telemetry the primal solution as the exporters read it, labelled by the class of the largest shadow price scaled to an elasticity, read once (a development world since).",
        ),
        World(
            "Z",
            gen.family_z,
            "the twenty-sixth family",
            "Family Z, written blind while Y was unread, each pod a tick-by-tick closed loop of the controllers that shape a real node (the CFS quota, the GPU's power and clock governor, TCP congestion control beside a neighbour's flows or RDMA, memory reclaim and swap, a DataLoader's bounded prefetch queue, NCCL's bucketed all-reduce, kernels by roofline and their launches), labelled by where the training loop's main thread spent the largest share of its time, read once (a development world since).",
        ),
        World(
            "AA",
            gen.family_aa,
            "the twenty-seventh family",
            "Family AA, written blind while Z was unread, each Job a structural causal model (the cluster and hardware, then the workload, then each stage's time per step from stated physical relations and published figures) moved between regimes by a hidden Markov chain, its exporters' noise drawn jointly through a Gaussian copula, labelled by the stage whose removal shortens the mean step most, read once (a development world since).",
        ),
        World(
            "AB",
            gen.family_ab,
            "the twenty-eighth family",
            "Family AB, written blind while AA was unread, each Job's configuration (model, scale, GPU, fabric, storage, loader, limits, the cluster's practices) drawn as published studies of GPU training fleets report them and its bottleneck following from a stage model of the step, labelled by the stage whose doubling in speed shortens the mean step most, read once (a development world since).",
        ),
        World(
            "AC",
            gen.family_ac,
            "the twenty-ninth family",
            "Family AC, written blind while AB was unread, each Job's step a discrete-event timeline on named resources (loader workers, the main thread, the copy engine, the compute and collective streams, the link, storage, the kernel's memory manager) with its telemetry integrated from the busy intervals, labelled by the class of the resources holding the largest share of the critical path, read once (a development world since).",
        ),
        World(
            "AD",
            gen.family_ad,
            "the thirtieth family",
            "Family AD, written blind while AC was unread, each Job's step a customer of a closed queueing network (storage, loader cores, host memory, the PCIe link, the SMs, HBM, the fabric) solved by mean-value analysis, its telemetry following from the operational laws, labelled by the station with the largest service demand per server, read once (a development world since).",
        ),
        World(
            "AE",
            gen.family_ae,
            "the thirty-first family",
            "Family AE, written blind while AD was unread, each Job a well-tuned data-parallel training Job with exactly one misconfiguration from the published performance guides injected (PyTorch's, NVIDIA's, NCCL's, the kernel's cgroup docs), a per-stage step account deciding which stage limits the step, labelled by that stage's class, read once (a development world since).",
        ),
        World(
            "AF",
            gen.family_af,
            "the thirty-second family",
            "Family AF, written blind while AE was unread, each step of a bulk-synchronous training Job a max-plus combination of its stages (storage, loader CPU, host memory, copies, launches, compute, HBM, NVLink/PCIe, the fabric) with the overlaps frameworks have, labelled counterfactually by the stage whose capacity, made ample, shortens the step most, read once (a development world since).",
        ),
        World(
            "AG",
            gen.family_ag,
            "the thirty-third family",
            "Family AG, written blind while AF was unread, each Job's training step a discrete-event timeline of its loader, copy, compute and communication streams, its telemetry integrated between scrapes, labelled counterfactually by the class whose stages, made ample, shorten the step most, read once (a development world since).",
        ),
        World(
            "AH",
            gen.family_ah,
            "the thirty-fourth family",
            "Family AH, written blind while AG was unread, each Job's model a list of operators from a published architecture timed on its GPU by the roofline, with the host's launch cost, the data pipeline and the collectives, labelled by the class with the largest share of the step's critical path, read once (a development world since).",
        ),
        World(
            "AI",
            gen.family_ai,
            "the thirty-fifth family",
            "Family AI, written blind from the shared documents and the contract alone, each Job's step overlapping stages on datasheet hardware (the loader's reads and decoding ahead of the device, the kernel dispatch, dense and memory-bound kernels and copies, collectives hidden under the backward pass up to a drawn overlap, faults above the memory limit) drifting in time with neighbours, checkpoints and evaluation passes, labelled by the class whose stages, made ample, raise the steps per second most, read once (a development world since).",
        ),
        World(
            "AJ",
            gen.family_aj,
            "the thirty-sixth family",
            "Family AJ, written blind after AH's reading, each Job placed on a shared fleet of nodes beside other tenants (GPU Jobs and CPU-only pods using CPU, disks, Ethernet, RDMA and memory), its step costed stage by stage from published hardware and workload figures, labelled by the class whose stages, made ample, save the most step time over the window, read once (a development world since).",
        ),
        World(
            "AK",
            gen.family_ak,
            "the thirty-seventh family",
            "Family AK, written blind while AI and AJ were unread, each Job a discrete-time simulation of a data-parallel training loop (loader workers and storage, a bounded prefetch queue, copies, kernel launches, roofline compute, collectives partly hidden under the backward pass, host memory pressure) read through the exporters, labelled by rerunning the loop with one stage made ample at a time, read once (a development world since).",
        ),
        World(
            "AL",
            gen.family_al,
            "the thirty-eighth family",
            "Family AL, written blind while AK was unread, each Job a synchronous data-parallel program simulated iteration by iteration and rank by rank (heavy-tailed samples, storage latency tails, page-cache misses, pauses, throttled or power-capped boards, busy neighbours, congested fabrics), every iteration as long as its slowest rank, labelled by rerunning the same draws with one stage made ample, its labels not balanced over the classes, read once (a development world since).",
        ),
        World(
            "AM",
            gen.family_am,
            "the thirty-ninth family",
            "Family AM, written blind while AL was unread, each Job drawn from a place (CPU sockets, PCIe switches, a NIC under the GPUs' switch or staged through host memory, the CPU manager's pinning, quotas, memory limits, neighbours) with each stage's speed following from it, labelled by recomputing the step with each class's stages made ample, read once (a development world since).",
        ),
        World(
            "AN",
            gen.family_an,
            "the fortieth family",
            "Family AN, written blind while AL and AM were unread, each Job one workload of a catalogue (vision with JPEG decode, language models with data, tensor or pipeline parallelism or sharded optimiser states, fine-tuning on many small files, recommendation models with embedding tables, speech, diffusion, reinforcement loops on the host) whose costs follow from its drawn model and board, over a run that changes in time (a cold first epoch, checkpoints, evaluation passes, a neighbour or a straggler arriving), labelled by the class whose stages, made ample, speed the window's work up most, read once (a development world since).",
        ),
    )
}


def world_windows(letter: str, seed: int, n: int, *, start: float = TRAIN_START) -> tuple[list[Any], list[Any]]:
    """``n`` labelled Jobs of family ``letter`` for ``seed``, windows on a 30 s grid from ``start``: (labels, windows).

    Raises:
        KeyError: no such family.
    """
    jobs = WORLDS[letter].generator()(seed, n, start=start)
    return [j.label for j in jobs], [j.window for j in jobs]


def parse_families(text: str) -> dict[str, int]:
    """``"B=2000,C=2000"`` as ``{"B": 2000, "C": 2000}``; ``""`` or ``"none"`` as no family.

    Raises:
        ValueError: an unknown letter, a count that is not a whole number of 0 or more, or a letter twice.
    """
    out: dict[str, int] = {}
    if text.strip().lower() in ("", "none"):
        return out
    for part in text.split(","):
        letter, sep, count = part.strip().partition("=")
        letter = letter.strip().upper()
        if letter not in WORLDS:
            known = ", ".join(WORLDS)
            raise ValueError(
                f"unknown family {letter!r} in {text!r}: the families are {known} (A is the simulator, --jobs)"
            )
        if not sep or not count.strip().isdigit():
            raise ValueError(
                f"{part.strip()!r}: write LETTER=JOBS with JOBS a whole number of 0 or more, e.g. {letter}=2000"
            )
        if letter in out:
            raise ValueError(f"family {letter} is given twice in {text!r}")
        out[letter] = int(count)
    return out


def format_families(counts: dict[str, int]) -> str:
    """The ``--families`` value that reproduces ``counts``."""
    return ",".join(f"{k}={v}" for k, v in counts.items()) or "none"
