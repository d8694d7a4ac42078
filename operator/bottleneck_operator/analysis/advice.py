"""Recommendations a verdict's evidence justifies: per class, advice tied to the signals that call for it.

Recommendations are chosen by the signals that appear in the evidence (:mod:`.evidence`), so each one
names what justifies it; advice tied to no signal is general and comes last.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bottleneck_operator.analysis.summary import JobSummary
from bottleneck_operator.contract.verdict import Bottleneck, Evidence, Recommendation


@dataclass(frozen=True)
class Advice:
    action: str
    detail: str
    signals: frozenset[str]  # shown when one of these signals is in the evidence; empty: always
    when: Callable[[JobSummary], bool] = lambda s: True


def _a(action: str, detail: str, *signals: str, when: Callable[[JobSummary], bool] | None = None) -> Advice:
    return Advice(action, detail, frozenset(signals), when or (lambda s: True))


ADVICE: dict[Bottleneck, tuple[Advice, ...]] = {
    Bottleneck.IO: (
        _a(
            "Cache the dataset on local NVMe or in the page cache",
            "Remote or throttled storage cannot feed the GPUs; a local copy removes the network and the quota from the path.",
            "node_net_rx_share",
            "node_net_rx_bps",
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
            "read_rate_vs_peak",
        ),
        _a(
            "Store the data as large sharded sequential files",
            "Formats such as WebDataset tars, TFRecord or Parquet shards turn many small random reads into few large sequential ones.",
            "node_disk_busy_frac",
            "read_bps",
            "read_rate_vs_peak",
            "node_psi_io_some",
        ),
    ),
    Bottleneck.CPU: (
        _a(
            "Raise the CPU limit",
            "The container is throttled by its CFS quota while the node may have idle cores.",
            "cpu_throttled_frac",
            "sc_throttled_frac",
            "cpu_cores_vs_limit",
        ),
        _a(
            "Use more DataLoader workers",
            "Decoding and augmentation run on too few processes; add workers up to the cores the pod may use.",
            "cpu_cores",
            "sc_psi_cpu_some",
            "node_psi_cpu_some",
            "cpu_cores_vs_limit",
        ),
        _a(
            "Move decoding and augmentation to the GPU",
            "NVIDIA DALI or torchvision.io GPU decoding takes JPEG decoding and augmentation off the host CPUs.",
            "cpu_cores",
            "node_cpu_busy_frac",
            "cpu_cores_vs_limit",
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
        ),
        _a(
            "Overlap communication with computation",
            "DDP bucket sizing, FSDP prefetching or asynchronous collectives let gradients move while the backward pass continues.",
            "gpu_util_minus_sm_active",
            "nvlink_bps",
            "node_net_bytes_per_gpu",
        ),
        _a(
            "Place the job's GPUs on one node or one NVLink domain",
            "Topology-aware scheduling keeps collectives on NVLink instead of the node's network.",
            "node_net_rx_tx_symmetry",
            "node_net_bytes_per_gpu",
            "gpu_util_minus_sm_active",
        ),
        _a(
            "Use pinned memory and non-blocking host-to-device copies",
            "pin_memory=True with .to(device, non_blocking=True), or moving preprocessing onto the GPU, relieves a saturated PCIe link.",
            "pcie_rx_bps",
            "pcie_tx_bps",
        ),
    ),
    Bottleneck.GPU: (
        _a(
            "Train in mixed precision (BF16/FP16) or enable TF32",
            "Tensor cores run several times faster than FP32 math; low tensor-pipe activity means they are underused.",
            "tensor_active",
            "gpu_active",
        ),
        _a(
            "Compile the model",
            "torch.compile (or XLA) fuses kernels and cuts launch overhead.",
            "gpu_active",
            "sm_occupancy",
        ),
        _a(
            "Make the model cheaper",
            "Quantisation, pruning or distillation reduce the compute per sample.",
            "gpu_active",
        ),
        _a(
            "Use more or faster GPUs",
            "The job is compute-bound: it scales with GPU throughput, and its input pipeline has room to spare.",
            "gpu_active",
        ),
    ),
    Bottleneck.MEMORY: (
        _a(
            "Raise the memory limit",
            "Reclaim, swap or major faults stall the pod; more memory lets the working set stay resident.",
            "node_psi_mem_some",
            "sc_psi_mem_some",
            "node_majfault_ps",
            "node_swap_used_frac",
            "mem_working_set_vs_limit",
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
    cls: Bottleneck, evidence: tuple[Evidence, ...], summary: JobSummary
) -> tuple[Recommendation, ...]:
    """Recommendations for ``cls``, each tied to an evidence signal that justifies it.

    Args:
        cls: the verdict class.
        evidence: the verdict's evidence.
        summary: whole-job totals.

    Returns:
        Up to four recommendations; general ones (no matching signal) come last.
    """
    shown = [e.signal for e in evidence]
    tied: list[Recommendation] = []
    general: list[Recommendation] = []
    for advice in ADVICE.get(cls, ()):
        if not advice.when(summary):
            continue
        match = next((s for s in shown if s in advice.signals), None)
        if match:
            tied.append(Recommendation(advice.action, match, advice.detail))
        elif not advice.signals:
            general.append(Recommendation(advice.action, shown[0] if shown else "", advice.detail))
    if not tied and not general and ADVICE.get(cls):
        first = ADVICE[cls][0]
        general.append(Recommendation(first.action, shown[0] if shown else "", first.detail))
    return tuple((tied + general)[:4])
