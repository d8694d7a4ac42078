"""Evidence, recommendations, headroom and capacity needs, tied to the signals."""

from __future__ import annotations

import pytest

from bottleneck_operator.analysis.classify import analyze_window
from bottleneck_operator.analysis.headroom_account import stall_range
from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck

from .conftest import FixedModel
from .synth import CPU_STARVED, make_window

B = Bottleneck


@pytest.mark.parametrize("cls", CLASSES)
def test_three_to_five_items_and_each_recommendation_names_evidence(cls: Bottleneck) -> None:
    v = analyze_window(make_window(cls), FixedModel({cls: 0.9}))
    assert 3 <= len(v.evidence) <= 5
    assert all(e.message and e.message.endswith(".") for e in v.evidence)
    shown = {e.signal for e in v.evidence}
    assert v.recommendations
    assert all(r.signal in shown for r in v.recommendations)


def test_io_evidence_names_iowait_and_pressure() -> None:
    v = analyze_window(make_window(B.IO, noise=0.0), FixedModel({B.IO: 0.9}))
    signals = [e.signal for e in v.evidence]
    assert signals[0] == "sm_active"  # GPU idleness first
    # then the gate that implies IO: CPUs idle in iowait 35 % against the 5 % where it counts
    assert signals[1] == "node_cpu_iowait_frac" and v.evidence[1].reference == 0.05
    assert v.evidence[1].observed == pytest.approx(0.35) and v.evidence[1].message.startswith("Implies IO")
    blocked = next(e for e in v.evidence if e.signal == "sc_procs_iowait")
    assert blocked.observed == pytest.approx(0.8) and blocked.reference == 0.5
    actions = " ".join(r.action for r in v.recommendations)
    assert "parallel" in actions or "NVMe" in actions


def test_cpu_throttling_recommends_raising_the_limit_only_when_seen() -> None:
    v = analyze_window(make_window(B.CPU), FixedModel({B.CPU: 0.9}))
    assert any(r.action == "Raise the CPU limit" for r in v.recommendations)
    calm = make_window(B.CPU, drop=[Family.CADVISOR_CFS, Family.SIDECAR, Family.KSM])
    v = analyze_window(calm, FixedModel({B.CPU: 0.9}))
    assert not any(r.action == "Raise the CPU limit" for r in v.recommendations)


def test_stall_range_math() -> None:
    # GPU busy 40 %: removing the stall allows up to 1/0.4 = 2.5x; half the stall recovered gives 1.75x
    low, high = stall_range(0.4, None)
    assert high == pytest.approx(2.5) and low == pytest.approx(1.75)
    # the next stage, 60 % busy now, binds at 1/0.6
    low, high = stall_range(0.4, 0.6)
    assert high == pytest.approx(1 / 0.6)
    assert stall_range(1.0, None) == (1.0, 1.0)
    assert stall_range(0.0, None)[1] == pytest.approx(10.0)  # capped


def test_headroom_and_capacity_for_io() -> None:
    v = analyze_window(make_window(B.IO, noise=0.0), FixedModel({B.IO: 0.9}))
    assert v.headroom is not None
    # GPUs time-busy 30 % (GR_ENGINE_ACTIVE): IO holds the other 70 %; the next stage (CPU at 5 of
    # 32 cores) is far from binding
    assert v.headroom.high == pytest.approx(1 / 0.3)
    assert 1.0 <= v.headroom.low <= v.headroom.high
    need = v.capacity[0]
    assert need.resource == "storage_read"
    assert need.observed == pytest.approx(1.9e9)
    assert need.needed == pytest.approx(1.9e9 / 0.3)
    assert "GB/s" in need.message and "8 GPUs" in need.message


def test_capacity_for_cpu_and_gpu() -> None:
    v = analyze_window(make_window(B.CPU, noise=0.0), FixedModel({B.CPU: 0.9}))
    cpu = v.capacity[0]
    assert cpu.resource == "cpu_cores" and cpu.needed == pytest.approx(15.9 / 0.35)
    assert v.headroom is not None and v.headroom.high == pytest.approx(1 / 0.35)
    # GPU-bound: no capacity figure and no speed-up read into tensor activity; a profile says more
    g = analyze_window(make_window(B.GPU, noise=0.0), FixedModel({B.GPU: 0.9}))
    assert g.capacity == ()
    assert g.headroom is not None and g.headroom.high < 1.15 and "Holistic Trace Analysis" in g.headroom.basis


def test_unknown_has_no_recommendations() -> None:
    both = make_window(B.IO, overrides={**CPU_STARVED, "gr_engine_active": 0.65})
    v = analyze_window(both, FixedModel({B.IO: 0.4, B.CPU: 0.35, B.GPU: 0.25}))
    assert v.bottleneck is B.UNKNOWN
    assert v.recommendations == () and v.headroom is None and v.capacity == ()


HOST_SIGNALS = {
    "node_psi_mem_some",
    "sc_psi_mem_some",
    "node_majfault_ps",
    "node_swap_used_frac",
    "mem_working_set_vs_limit",
}
HBM_SIGNALS = {"dram_active", "dram_active_minus_tensor_active", "mem_copy_util"}


def test_memory_evidence_speaks_for_its_mechanism() -> None:
    """Host memory pressure says nothing of an HBM-bound GPU (busy, waiting on memory inside its kernels),
    nor DRAM activity of a pod stalled on swap: each Memory verdict shows its own mechanism's signals."""
    hbm = analyze_window(make_window(B.MEMORY, noise=0.0), FixedModel({B.MEMORY: 0.9}))
    assert hbm.mechanism is not None and hbm.mechanism.value == "hbm-bandwidth"
    signals = {e.signal for e in hbm.evidence}
    assert signals & HBM_SIGNALS and not signals & HOST_SIGNALS
    assert "sm_active" not in signals  # no "waited on something else" for a busy GPU
    swapping = make_window(
        B.MEMORY,
        noise=0.0,
        overrides={
            "node_psi_mem_some": 0.4, "sc_psi_mem_some": 0.4, "node_majfault_ps": 2e4, "sc_majfault_ps": 2e4,
            "node_swap_used_frac": 0.6, "dram_active": 0.05, "mem_copy_util": 0.05, "tensor_active": 0.05,
            "gr_engine_active": 0.3, "sm_active": 0.25, "gpu_util": 0.3,
        },
    )  # fmt: skip
    host = analyze_window(swapping, FixedModel({B.MEMORY: 0.9}))
    assert host.mechanism is not None and host.mechanism.value == "host-memory-pressure"
    signals = {e.signal for e in host.evidence}
    assert signals & HOST_SIGNALS and not signals & HBM_SIGNALS
    assert [r.action for r in host.recommendations] == ["Raise the memory limit"]


def test_hbm_advice_without_profiling_fields() -> None:
    """Without DRAM_ACTIVE (DEV fields only), MEM_COPY_UTIL carries the HBM evidence and its advice."""
    w = make_window(B.MEMORY, noise=0.0, drop=[Family.DCGM_PROF])
    v = analyze_window(w, FixedModel({B.MEMORY: 0.9}))
    assert "mem_copy_util" in {e.signal for e in v.evidence}
    assert "Fuse bandwidth-bound kernels" in [r.action for r in v.recommendations]
