"""Advice preconditions: each reads a comparison of measured quantities or a cited bar, on small windows."""

from __future__ import annotations

from bottleneck_operator.analysis.checks.reads import read_window
from bottleneck_operator.analysis.explain.advice import (
    LAUNCH_ALTERNATIVE,
    Facts,
    build_recommendations,
    cgroup_is_the_limit,
    host_to_device_copies,
    more_workers_help,
    node_has_idle_cores,
    one_core_per_process,
    tensor_pipes_underused,
)
from bottleneck_operator.analysis.features.extract import extract_features
from bottleneck_operator.analysis.features.phases import segment_phases
from bottleneck_operator.analysis.features.summary import summarize
from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.verdict import Bottleneck, Evidence
from bottleneck_operator.contract.window import JobWindow

from .synth import GB, LOADERS_AT_CEILING, make_window

B = Bottleneck


def facts(w: JobWindow) -> Facts:
    """What the preconditions read of one window, the vetoes' readings included."""
    return Facts(summarize(w), extract_features([w])[0], read_window(w, segment_phases(w)))


def loaders(**overrides: float) -> Facts:
    return facts(make_window(B.CPU, noise=0.0, overrides={**LOADERS_AT_CEILING, **overrides}))


def test_more_workers_when_the_pod_uses_few_of_the_cores_it_may_use() -> None:
    """Eight loaders at a full core each, with a 64-core limit on a quiet 96-core node: more can run."""
    assert more_workers_help(loaders())
    assert one_core_per_process(loaders())  # one busy core per GPU process: num_workers=0


def test_no_more_workers_when_neighbours_leave_few_cores() -> None:
    """The same loaders on a node 97 % busy: 3 idle cores beside its 8 make 8 of 11 usable cores in use,
    most of them, the comparison by which the mechanism reads saturated cores."""
    assert not more_workers_help(loaders(node_cpu_busy_frac=0.97))


def test_no_more_workers_under_a_quota_that_binds() -> None:
    """Throttled in 6 % of CFS periods, past XProf's 5 % bar as the CPU veto reads it: the quota binds."""
    assert not more_workers_help(loaders(sc_throttled_frac=0.06, cpu_throttled_frac=0.06))
    assert more_workers_help(loaders(sc_throttled_frac=0.04, cpu_throttled_frac=0.04))


def test_no_more_workers_without_a_process_at_a_full_core() -> None:
    assert not more_workers_help(loaders(sc_procs_busy=0.0))
    # without the collector's count nothing says the loaders are short
    w = make_window(B.CPU, noise=0.0, drop=[Family.SIDECAR], overrides=LOADERS_AT_CEILING)
    assert not more_workers_help(facts(w))


def test_two_busy_cores_per_gpu_process_are_not_num_workers_zero() -> None:
    """num_workers=0 keeps one core per GPU busy; a worker at a full core beside each makes two."""
    assert one_core_per_process(loaders(cpu_cores=15.0, sc_cpu_cores=15.0))
    assert not one_core_per_process(loaders(cpu_cores=16.5, sc_cpu_cores=16.5))


def cpu_advice(k: Facts) -> list[str]:
    busy = Evidence("sc_procs_busy", 8.0, None, "procs", "Eight trainer processes use a full core each.")
    return [r.action for r in build_recommendations(B.CPU, (busy,), k.summary, k.x, k.reads)]


def test_one_core_per_gpu_process_names_launches_beside_num_workers_zero() -> None:
    """A loader in the training process and a loop bound by kernel launches keep the same core busy beside
    an idle GPU: the advice names both, in that order, and neither where two cores per process are busy."""
    one = cpu_advice(loaders())
    assert one.index("Load data in worker processes (DataLoader num_workers > 0)") + 1 == one.index(LAUNCH_ALTERNATIVE)
    two = cpu_advice(loaders(cpu_cores=16.5, sc_cpu_cores=16.5))
    assert "Use more DataLoader workers" in two and LAUNCH_ALTERNATIVE not in two


def test_node_idle_cores_are_counted_in_cores() -> None:
    """On a 96-core node, 0.5 % idle is half a core (no room for a worker), 2 % nearly two."""
    assert not node_has_idle_cores(loaders(node_cpu_busy_frac=0.995))
    assert node_has_idle_cores(loaders(node_cpu_busy_frac=0.98))


def test_raise_the_cpu_limit_only_while_the_node_has_a_core_to_give() -> None:
    throttled = make_window(B.CPU, noise=0.0)  # 15.9 of 16 cores, throttled in 70 % of periods
    assert cgroup_is_the_limit(facts(throttled))
    full_node = make_window(B.CPU, noise=0.0, overrides={"node_cpu_busy_frac": 0.999})
    assert not cgroup_is_the_limit(facts(full_node))


def test_pinned_copies_advice_needs_traffic_mostly_one_way() -> None:
    """Host-to-device copies come back at under half their bytes (the features' line for collectives)."""
    copies = make_window(B.INTERCONNECT, noise=0.0, overrides={"pcie_rx_bps": 6 * GB, "pcie_tx_bps": 2 * GB})
    assert host_to_device_copies(facts(copies))
    peers = make_window(B.INTERCONNECT, noise=0.0, overrides={"pcie_rx_bps": 6 * GB, "pcie_tx_bps": 4 * GB})
    assert not host_to_device_copies(facts(peers))


def test_mixed_precision_when_non_tensor_math_outweighs_the_tensor_pipes() -> None:
    """FP32/FP16 pipes busier than the tensor pipes, whatever the tensor pipes' own level."""
    fp32 = make_window(B.GPU, noise=0.0, overrides={"fp32_active": 0.3, "tensor_active": 0.2})
    assert tensor_pipes_underused(facts(fp32))
    tensor = make_window(B.GPU, noise=0.0, overrides={"fp32_active": 0.1, "tensor_active": 0.2})
    assert not tensor_pipes_underused(facts(tensor))
    both_busy = make_window(B.GPU, noise=0.0, overrides={"fp32_active": 0.7, "tensor_active": 0.6})
    assert tensor_pipes_underused(facts(both_busy))
    # without the pipe fields nothing shows non-tensor math
    assert not tensor_pipes_underused(facts(make_window(B.GPU, noise=0.0, drop=[Family.DCGM_PROF_PIPES])))
