"""Gates and advice of mechanisms that leave no node-level trace: GPUDirect RDMA, kernel-launch overhead, loaders at a ceiling."""

from __future__ import annotations

from bottleneck_operator.analysis.advice import launch_bound, tensor_pipes_underused
from bottleneck_operator.analysis.classify import analyze_window
from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator.contract.window import JobWindow

from .conftest import FixedModel
from .synth import GB, LOADERS_AT_CEILING, facts, make_window

B = Bottleneck
PCIE = 31.5e9  # the A100's PCIe link in the hardware table

QUIET_LINKS = {
    "nvlink_total_bps": 0.0,
    "nvlink_tx_bps": 0.0,
    "nvlink_rx_bps": 0.0,
    "node_net_rx_bps": 0.02 * GB,
    "node_net_tx_bps": 0.01 * GB,
    "pcie_rx_bps": 0.3 * GB,
    "pcie_tx_bps": 0.05 * GB,
}


def _rdma(per_way: float) -> JobWindow:
    """A multi-node all-reduce over InfiniBand with GPUDirect: nothing on node_network_*, PCIe as much each way."""
    return make_window(
        B.INTERCONNECT,
        noise=0.0,
        overrides={
            **QUIET_LINKS,
            "gpu_util": 0.3,
            "gr_engine_active": 0.25,
            "sm_active": 0.2,
            "pcie_rx_bps": per_way,
            "pcie_tx_bps": 0.97 * per_way,
        },
    )


def test_gpudirect_rdma_is_interconnect_evidence_from_balanced_pcie() -> None:
    v = analyze_window(_rdma(0.03 * PCIE), FixedModel({B.INTERCONNECT: 0.9, B.GPU: 0.1}))
    assert v.bottleneck is B.INTERCONNECT
    assert any(e.signal == "pcie_peer_symmetry" and e.observed >= (e.reference or 1.0) for e in v.evidence)
    # 100 MB/s each way is below the volume a collective moves: balance alone is no evidence
    v = analyze_window(_rdma(0.1 * GB), FixedModel({B.INTERCONNECT: 0.9, B.GPU: 0.1}))
    assert v.bottleneck is B.UNKNOWN


def _launch_bound(**over: float) -> JobWindow:
    """Small kernels one after another: GPU_UTIL high, SMs and tensor pipes nearly idle."""
    signals = {
        **QUIET_LINKS,
        "gpu_util": 0.52,
        "gr_engine_active": 0.5,
        "sm_active": 0.08,
        "tensor_active": 0.0,
        "dram_active": 0.01,
    }
    return make_window(B.GPU, noise=0.0, overrides={**signals, **over})


def test_kernel_launch_gaps_are_gpu_evidence_only_with_quiet_links() -> None:
    v = analyze_window(_launch_bound(), FixedModel({B.GPU: 0.9, B.INTERCONNECT: 0.1}))
    assert v.bottleneck is B.GPU
    assert any(e.signal == "gpu_launch_gaps" for e in v.evidence)
    actions = [r.action for r in v.recommendations]
    assert "Launch fewer, larger kernels" in actions and "Use more or faster GPUs" not in actions
    # the same gap with NVLink busy is communication kernels: not the launch gate's to claim
    busy_links = _launch_bound(nvlink_total_bps=200 * GB, nvlink_tx_bps=100 * GB, nvlink_rx_bps=100 * GB)
    v = analyze_window(busy_links, FixedModel({B.GPU: 0.9, B.INTERCONNECT: 0.1}))
    assert not any(e.signal == "gpu_launch_gaps" for e in v.evidence)


def test_kernels_that_fill_the_sms_are_compute_whatever_their_pipes() -> None:
    # fp32 products with TF32 off: the SMs busy throughout, tensor pipes idle, HBM nearly so
    fp32 = _launch_bound(gpu_util=0.99, gr_engine_active=0.99, sm_active=0.96, dram_active=0.05)
    v = analyze_window(fp32, FixedModel({B.GPU: 0.9, B.INTERCONNECT: 0.1}))
    assert v.bottleneck is B.GPU and v.mechanism is Mechanism.COMPUTE
    assert not any(e.signal == "gpu_launch_gaps" for e in v.evidence)
    # the same pipes with the SMs mostly idle between the kernels are launch gaps
    v = analyze_window(_launch_bound(), FixedModel({B.GPU: 0.9, B.INTERCONNECT: 0.1}))
    assert v.mechanism is Mechanism.LAUNCH_BOUND


def test_launch_gaps_beside_a_streamed_dataset_are_still_gpu_evidence() -> None:
    # 2 GB/s received, 20 MB/s sent: a dataset coming in, not a collective; no NCCL kernel runs for it
    streaming = _launch_bound(node_net_rx_bps=2 * GB, node_net_tx_bps=0.02 * GB)
    v = analyze_window(streaming, FixedModel({B.GPU: 0.9, B.IO: 0.1}))
    assert v.bottleneck is B.GPU
    assert any(e.signal == "gpu_launch_gaps" for e in v.evidence)


def test_a_neighbour_s_io_pressure_does_not_hide_loaders_at_their_ceiling() -> None:
    # the node's IO pressure and iowait at levels where IO's node gates hold, the pod's own IO calm
    noisy_node = {"node_psi_io_some": 0.3, "node_cpu_iowait_frac": 0.08, "sc_psi_io_some": 0.01}
    loaders = {**LOADERS_AT_CEILING, "sc_procs_busy": float("nan")}  # the flat CPU alone, no busy count
    neighbour = make_window(B.CPU, overrides={**loaders, **noisy_node})
    v = analyze_window(neighbour, FixedModel({B.CPU: 0.9, B.IO: 0.1}))
    assert v.bottleneck is B.CPU
    assert any(e.signal == "cpu_workers_saturated" for e in v.evidence)
    # the pod's own readers stalled on IO: the plateau is a storage rate, not a CPU ceiling
    own = make_window(B.CPU, overrides={**loaders, "node_psi_io_some": 0.15, "sc_psi_io_some": 0.3})
    v = analyze_window(own, FixedModel({B.CPU: 0.9, B.IO: 0.1}))
    assert v.bottleneck is not B.CPU


def test_compute_bound_advice_needs_compute_bound_kernels_and_idle_tensor_pipes() -> None:
    busy = make_window(B.GPU, noise=0.0, overrides={"tensor_active": 0.2})
    read = facts(busy)
    assert not launch_bound(read) and tensor_pipes_underused(read)
    actions = [r.action for r in analyze_window(busy, FixedModel({B.GPU: 0.95})).recommendations]
    assert "Launch fewer, larger kernels" not in actions
    assert "Train in mixed precision (BF16/FP16) or enable TF32" in actions
    # tensor pipes already busy most of the time: lower precision has little left to give
    saturated = make_window(B.GPU, noise=0.0, overrides={"tensor_active": 0.7})
    assert not tensor_pipes_underused(facts(saturated))
    actions = [r.action for r in analyze_window(saturated, FixedModel({B.GPU: 0.95})).recommendations]
    assert "Train in mixed precision (BF16/FP16) or enable TF32" not in actions
