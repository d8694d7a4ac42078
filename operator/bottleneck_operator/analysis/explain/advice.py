"""Recommendations a verdict's evidence justifies, each with its physical precondition in code.

Recommendations are chosen by the signals that appear in the evidence (:mod:`.evidence`), so each one
names what justifies it; advice tied to no signal is general and comes last. Each piece of advice
carries a precondition (a predicate next to it): more DataLoader workers only when the job's cgroup
has CPU headroom, its node has idle cores and the collector counts a process at a full core; pinned host memory never for peer-to-peer or GPUDirect
traffic, which does not pass through pageable host memory; more or faster GPUs never for a job bound
by kernel launches; lower precision only where the FP32/FP16 pipes show math the tensor pipes could
take; a larger memory limit only with the pod's own memory pressure, swap-ins or OOM kills.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from bottleneck_operator.analysis.checks.reads import Reads
from bottleneck_operator.analysis.explain.candidates import FABRIC_SYMMETRY, MAJORITY
from bottleneck_operator.analysis.explain.mechanism import launches_bind
from bottleneck_operator.analysis.features.extract import value
from bottleneck_operator.analysis.features.levels import WAITED_ON
from bottleneck_operator.analysis.features.series_names import Extra, FeatureKey, Series
from bottleneck_operator.analysis.features.summary import JobSummary
from bottleneck_operator.contract.verdict import Bottleneck, Evidence, Recommendation
from bottleneck_operator.contract.window import FloatArray

# The two pieces of GPU advice that only one GPU mechanism justifies (:mod:`.agreement` checks them).
LAUNCH_ADVICE = "Launch fewer, larger kernels"
COMPUTE_ADVICE = "Use more or faster GPUs"
# A CPU verdict's other reading of one busy core per GPU process: the signals of a loader in the training
# process (num_workers=0) and of a loop bound by kernel launches are the same (docs/analysis.md, "What
# remains"), so the advice names both and the profiler that tells them apart.
LAUNCH_ALTERNATIVE = "If the loader already runs in workers, capture the step in CUDA Graphs"

# What shows the loader's processes short of cores: the three pieces of loader advice tie to the same evidence.
_LOADER_SIGNALS = ("cpu_cores", "cpu_workers_saturated", "sc_psi_cpu_some", "sc_procs_busy")

# One more worker process needs one core: a cgroup or a node has room for it with a core to spare.
WORKER_CORES = 1.0


@dataclass(frozen=True)
class Facts:
    """What preconditions read: the job's totals, its feature row and the window's measured quantities
    (the ones the vetoes read)."""

    summary: JobSummary
    x: FloatArray
    reads: Reads = field(default_factory=Reads)

    def f(self, name: FeatureKey) -> float | None:
        return value(self.x, name)


def _pods(k: Facts) -> float:
    return max(k.f(Extra.N_PODS.key) or 1.0, 1.0)


def cgroup_has_headroom(k: Facts) -> bool:
    """The job's cgroup can run one more worker: throttled in under 5 % of CFS periods (XProf's bar, as
    the CPU veto reads it), and no limit or a core to spare under it in each pod."""
    throttled = max(k.f(Series.CPU_THROTTLED_FRAC.mean) or 0.0, k.f(Series.SC_THROTTLED_FRAC.mean) or 0.0)
    used, limit = k.summary.cpu_cores, k.summary.cpu_limit_cores
    room = limit is None or used is None or (limit - used) / _pods(k) >= WORKER_CORES
    return room and throttled < WAITED_ON


def node_has_idle_cores(k: Facts) -> bool:
    """A core of the node stands idle for one more worker (unknown counts as no): its idle share of
    its cores, which a pod's use over its node's share of them counts."""
    busy, share, used = k.f(Series.NODE_CPU_BUSY_FRAC.mean), k.f(Series.CPU_NODE_FRAC.mean), k.summary.cpu_cores
    if busy is None or share is None or used is None or share <= 0.0:
        return False
    node_cores = used / _pods(k) / share
    return (1.0 - busy) * node_cores >= WORKER_CORES


def more_workers_help(k: Facts) -> bool:
    """More loader processes can run and the loaders say they are short: the collector counts trainer
    processes each at a full core, the cgroup is throttled in under 5 % of CFS periods, and the pod uses
    less than most of the cores it may use (``cpu_own_sat``: its limit and its node's idle cores), the
    comparison by which the mechanism tells too few workers from saturated cores."""
    busy, own = k.reads.procs_busy, k.f(Series.CPU_OWN_SAT.mean)
    throttled = max(k.f(Series.CPU_THROTTLED_FRAC.mean) or 0.0, k.f(Series.SC_THROTTLED_FRAC.mean) or 0.0)
    return busy is not None and busy >= 1.0 and throttled < WAITED_ON and own is not None and own < MAJORITY


def one_core_per_process(k: Facts) -> bool:
    """Fewer busy cores than two per GPU process, with room for more: ``num_workers=0`` loads in the
    main process (one core per GPU); a worker at a full core beside each would make two."""
    per_gpu = k.f(Series.CPU_PER_GPU.mean)
    return per_gpu is not None and per_gpu < 2 * WORKER_CORES and more_workers_help(k)


def cgroup_is_the_limit(k: Facts) -> bool:
    """The CFS quota binds while the node could give more: raising the limit helps."""
    return not cgroup_has_headroom(k) and node_has_idle_cores(k)


def host_to_device_copies(k: Facts) -> bool:
    """PCIe traffic is input copies from host memory: host-to-device, less than half of it coming back.

    Balanced traffic is peer-to-peer or GPUDirect RDMA, which pinned host buffers do not speed up; the
    features read PCIe balance as collectives from the same line (``FABRIC_SYMMETRY``).
    """
    rx, tx = k.f(Series.PCIE_RX_FRAC.mean), k.f(Series.PCIE_TX_FRAC.mean)
    return rx is not None and rx > 0.0 and (tx or 0.0) < FABRIC_SYMMETRY * rx


def host_memory_pressure(k: Facts) -> bool:
    """The host's memory is short: pressure stalls or major faults.

    A job bound by GPU memory bandwidth gains nothing from a larger host memory limit. Nor does a
    working set at the limit say so by itself: cAdvisor counts active page cache in it, which a pod
    reading a cached dataset fills to the limit without a stall.
    """
    r = k.reads
    return (r.mem_wait or 0.0) >= WAITED_ON or (r.swapins or 0.0) > 0.0 or (r.oom_kills or 0.0) > 0.0


def launch_bound(k: Facts) -> bool:
    """Small kernels launched one after another bind the step: the mechanism's own test (``launch-bound``)."""
    return launches_bind(k.x)


def slowed_gpu(k: Facts) -> bool:
    """The GPUs reported a power-cap, thermal or hardware slowdown (DCGM's clock-event reasons)."""
    return (k.reads.slowdown or 0.0) > 0.0


def compute_bound(k: Facts) -> bool:
    """The kernels themselves take the time: more or faster GPUs shorten it (neither launch overhead nor
    a slowed GPU, which the job waits for whatever it runs on)."""
    return not launch_bound(k) and not slowed_gpu(k)


def tensor_pipes_underused(k: Facts) -> bool:
    """The FP32/FP16 pipes carry math the tensor pipes could take: more non-tensor than tensor activity.
    Without the pipe fields nothing shows non-tensor math."""
    r = k.reads
    pipes = [v for v in (r.fp32, r.fp16) if v is not None]
    return bool(pipes) and max(pipes) > (r.tensor or 0.0)


def _always(_k: Facts) -> bool:
    return True


@dataclass(frozen=True)
class Advice:
    action: str
    detail: str
    signals: frozenset[str]  # shown when one of these signals is in the evidence; empty: always
    when: Callable[[Facts], bool] = _always


def _a(action: str, detail: str, *signals: str, when: Callable[[Facts], bool] = _always) -> Advice:
    return Advice(action, detail, frozenset(signals), when)


ADVICE: dict[Bottleneck, tuple[Advice, ...]] = {
    Bottleneck.IO: (
        _a(
            "Cache the dataset on local NVMe or in the page cache",
            "Remote or throttled storage cannot feed the GPUs; a local copy removes the network and the quota from the path.",
            "node_net_rx_share",
            "node_net_rx_bps",
            "sc_net_rx_bps",
            "node_cpu_iowait_frac",
            "node_psi_io_some",
            "sc_psi_io_some",
        ),
        _a(
            "Read with more parallelism and prefetch",
            "Raise DataLoader num_workers/prefetch_factor or tf.data parallel reads so several requests are in flight while the GPU computes.",
            "node_cpu_iowait_frac",
            "sc_procs_iowait",
            "node_psi_io_some",
            "sc_psi_io_some",
        ),
        _a(
            "Store the data as large sharded sequential files",
            "Formats such as WebDataset tars, TFRecord or Parquet shards turn many small random reads into few large sequential ones.",
            "node_disk_busy_frac",
            "read_bps",
            "node_psi_io_some",
        ),
    ),
    Bottleneck.CPU: (
        _a(
            "Raise the CPU limit",
            "The container is throttled by its CFS quota while the node has idle cores.",
            "cpu_throttled_frac",
            "sc_throttled_frac",
            "cpu_cores_vs_limit",
            "sc_cpu_limit_frac",
            when=cgroup_is_the_limit,
        ),
        _a(
            "Load data in worker processes (DataLoader num_workers > 0)",
            "About one core per GPU process is busy while the node's other cores idle: with num_workers=0 the "
            "main process decodes every batch itself.",
            *_LOADER_SIGNALS,
            when=one_core_per_process,
        ),
        _a(
            LAUNCH_ALTERNATIVE,
            "One busy core per GPU process beside an idle GPU is also how a training loop looks that launches "
            "many small kernels one by one, and counters scraped every few seconds do not always tell the two "
            "apart: a PyTorch profiler trace of a few steps does. CUDA Graphs or "
            'torch.compile(mode="reduce-overhead") replay a step\'s launches at once.',
            *_LOADER_SIGNALS,
            when=one_core_per_process,
        ),
        _a(
            "Use more DataLoader workers",
            "Decoding and augmentation run on too few processes; add workers up to the cores the pod may use.",
            *_LOADER_SIGNALS,
            when=more_workers_help,
        ),
        _a(
            "Move decoding and augmentation to the GPU",
            "NVIDIA DALI or torchvision.io GPU decoding takes JPEG decoding and augmentation off the host CPUs.",
            "cpu_cores",
            "cpu_cores_vs_limit",
            "cpu_cores_vs_node",
            "sc_cpu_limit_frac",
        ),
        _a(
            "Cache decoded or pre-augmented samples",
            "Decode once, store tensors (or lower-resolution copies), and keep only cheap random augmentations online.",
        ),
    ),
    Bottleneck.INTERCONNECT: (
        _a(
            "Use a larger per-GPU batch or gradient accumulation",
            "Fewer synchronisations per sample amortise each all-reduce over more compute.",
            "gpu_util_minus_sm_active",
            "node_net_rx_tx_symmetry",
            "node_net_bytes_per_gpu",
            "nvlink_bps",
            "exposed_communication",
            "pcie_peer_symmetry",
        ),
        _a(
            "Overlap communication with computation",
            "DDP bucket sizing, FSDP prefetching or asynchronous collectives let gradients move while the backward pass continues.",
            "gpu_util_minus_sm_active",
            "nvlink_bps",
            "node_net_bytes_per_gpu",
            "exposed_communication",
            "pcie_peer_symmetry",
        ),
        _a(
            "Place the job's GPUs on one node or one NVLink domain",
            "Topology-aware scheduling keeps collectives on NVLink instead of the node's network.",
            "node_net_rx_tx_symmetry",
            "node_net_bytes_per_gpu",
            "gpu_util_minus_sm_active",
            "pcie_peer_symmetry",
        ),
        _a(
            "Send compact batches to the GPU",
            "Copy uint8 images or compressed tensors and convert them on the GPU: float32 conversion on the host "
            "quadruples the bytes each batch moves over PCIe.",
            "pcie_rx_bps",
            "pcie_busy_during_wait",
            when=host_to_device_copies,
        ),
        _a(
            "Use pinned memory and non-blocking host-to-device copies",
            "pin_memory=True with .to(device, non_blocking=True), or moving preprocessing onto the GPU, relieves a saturated PCIe link.",
            "pcie_rx_bps",
            "pcie_busy_during_wait",
            when=host_to_device_copies,
        ),
    ),
    Bottleneck.GPU: (
        _a(
            "Find the slowed GPU and take its node out of service",
            "A pod's GPUs run below their maximum clock with power to spare, and every other GPU waits for them "
            "in each collective. `nvidia-smi -q -d PERFORMANCE` on its node names the reason (thermal or hardware "
            "slowdown); cordon the node until the GPU is cooled, reseated or replaced.",
            "gpu_busy",
            "gpu_util",
            "gpu_active",
            when=slowed_gpu,
        ),
        _a(
            "Profile a few training steps",
            "torch.profiler over a handful of steps, read with Holistic Trace Analysis, shows where GPU time goes "
            "(matrix-multiply, memory-bound and communication kernels, launch gaps); telemetry cannot split it.",
            "gpu_busy",
            "gpu_util",
            "gpu_active",
        ),
        _a(
            LAUNCH_ADVICE,
            'CUDA graphs (torch.compile mode="reduce-overhead") replay a step\'s kernels with one launch, and a '
            "larger batch gives each kernel more work: the GPU waits on the host thread launching small kernels.",
            "gpu_launch_gaps",
            when=launch_bound,
        ),
        _a(
            "Train in mixed precision (BF16/FP16) or enable TF32",
            "Tensor cores run several times faster than FP32 math; low tensor-pipe activity means they are underused.",
            "tensor_active",
            "gpu_active",
            when=tensor_pipes_underused,
        ),
        _a(
            "Compile the model",
            "torch.compile (or XLA) fuses kernels and cuts launch overhead.",
            "gpu_active",
            "gpu_launch_gaps",
        ),
        _a(
            "Make the model cheaper",
            "Quantisation, pruning or distillation reduce the compute per sample.",
            "gpu_active",
        ),
        _a(
            COMPUTE_ADVICE,
            "The job is compute-bound: it scales with GPU throughput, and its input pipeline has room to spare.",
            "gpu_active",
            when=compute_bound,
        ),
    ),
    Bottleneck.MEMORY: (
        _a(
            "Raise the memory limit",
            "Reclaim, swap or major faults stall the pod; more memory lets the working set stay resident.",
            "sc_psi_mem_some",
            "sc_swapin_ps",
            "sc_oom_kills",
            "mem_working_set_vs_limit",
            when=host_memory_pressure,
        ),
        _a(
            "Train in mixed precision",
            "Half-width activations and weights halve the bytes each kernel moves.",
            "dram_active",
            "dram_active_minus_tensor_active",
        ),
        _a(
            "Fuse bandwidth-bound kernels",
            "torch.compile, fused optimisers and fused attention (FlashAttention) read each tensor once instead of many times.",
            "dram_active",
            "dram_active_minus_tensor_active",
        ),
    ),
}


def build_recommendations(
    cls: Bottleneck, evidence: tuple[Evidence, ...], summary: JobSummary, x: FloatArray, reads: Reads | None = None
) -> tuple[Recommendation, ...]:
    """Recommendations for ``cls`` whose precondition holds, each tied to an evidence signal.

    Args:
        cls: the verdict class.
        evidence: the verdict's evidence.
        summary: whole-job totals.
        x: the job's feature row (the preconditions read it).
        reads: the window's measured quantities (the vetoes' reading).

    Returns:
        Up to four recommendations; general ones (no matching signal) come last.
    """
    facts = Facts(summary, x, reads or Reads())
    shown = [e.signal for e in evidence]
    tied: list[tuple[int, Recommendation]] = []
    general: list[Recommendation] = []
    for advice in ADVICE.get(cls, ()):
        if not advice.when(facts):
            continue
        match = next((k for k, s in enumerate(shown) if s in advice.signals), None)
        if match is not None:
            tied.append((match, Recommendation(advice.action, shown[match], advice.detail)))
        elif not advice.signals:
            general.append(Recommendation(advice.action, shown[0] if shown else "", advice.detail))
    # Advice for the strongest evidence first (the evidence is ordered by strength).
    ordered = [r for _, r in sorted(tied, key=lambda t: t[0])]
    return tuple((ordered + general)[:4])
