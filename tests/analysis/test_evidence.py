"""Evidence, recommendations, headroom and capacity needs, tied to the signals."""

from __future__ import annotations

import pytest

from bottleneck_operator.analysis.classify import analyze_window
from bottleneck_operator.analysis.headroom import stall_range
from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck

from .conftest import FixedModel
from .synth import make_window

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
    assert "node_psi_io_some" in signals or "sc_psi_io_some" in signals
    iowait = next(e for e in v.evidence if e.signal in ("node_psi_io_some", "sc_psi_io_some"))
    assert abs(iowait.observed - 0.6) < 1e-9 and iowait.reference == 0.5
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
    # SMs active 28 %; the next stage (CPU at 5 of 32 cores) is far from binding
    assert v.headroom.high == pytest.approx(1 / 0.28)
    assert 1.0 <= v.headroom.low <= v.headroom.high
    need = v.capacity[0]
    assert need.resource == "storage_read"
    assert need.observed == pytest.approx(1.9e9)
    assert need.needed == pytest.approx(1.9e9 / 0.28)
    assert "GB/s" in need.message and "8 GPUs" in need.message


def test_capacity_for_cpu_and_gpu() -> None:
    v = analyze_window(make_window(B.CPU, noise=0.0), FixedModel({B.CPU: 0.9}))
    cpu = v.capacity[0]
    assert cpu.resource == "cpu_cores" and cpu.needed == pytest.approx(15.9 / 0.33)
    g = analyze_window(make_window(B.GPU, noise=0.0), FixedModel({B.GPU: 0.9}))
    assert g.capacity[0].resource == "tensor_pipes" and g.capacity[0].observed == pytest.approx(0.45)
    assert g.headroom is not None and g.headroom.high == pytest.approx(0.7 / 0.45)


def test_unknown_has_no_recommendations() -> None:
    v = analyze_window(make_window(B.IO), FixedModel({B.IO: 0.4, B.CPU: 0.35, B.GPU: 0.25}))
    assert v.bottleneck is B.UNKNOWN
    assert v.recommendations == () and v.headroom is None and v.capacity == ()
