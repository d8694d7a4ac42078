"""Family Z: the interface, the windows it makes, and the physics of its closed loop."""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import pytest
from tests.blind_jobs import same_job

from bottleneck_operator.contract.signals import SIGNALS
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familyz import FamilyZJob, generate_family_z
from bottleneck_operator_dev.familyz.controllers import aimd_share, cfs, power_governor, prefetch
from bottleneck_operator_dev.familyz.exporters import Scrapes, pod_signals
from bottleneck_operator_dev.familyz.family import _simulate, intents
from bottleneck_operator_dev.familyz.hardware import GPUS
from bottleneck_operator_dev.familyz.loop import telemetry
from bottleneck_operator_dev.familyz.workload import LEAD_S, Plan, draw

START = 1_700_000_000.0
MAX_CLOCK = {g.model: g.max_clock_mhz for g in GPUS}


@pytest.fixture(scope="module")
def jobs() -> list[FamilyZJob]:
    return generate_family_z(seed=7, n=40, start=START)


def test_same_seed_same_family_and_a_job_does_not_depend_on_n(jobs: list[FamilyZJob]) -> None:
    again = generate_family_z(seed=7, n=12, start=START)
    assert all(same_job(a, b) for a, b in zip(again, jobs[:12], strict=False))
    other = generate_family_z(seed=8, n=3, start=START)
    assert not same_job(other[0], jobs[0])


@pytest.mark.parametrize(
    ("n", "step", "words"), [(-1, 30.0, "n must be"), (3, 0.0, "step must be"), (3, -5.0, "step must be")]
)
def test_bad_arguments_say_what_was_wrong(n: int, step: float, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        generate_family_z(seed=1, n=n, start=START, step=step)
    assert generate_family_z(seed=1, n=0, start=START) == []


def test_classes_balanced_and_shuffled(jobs: list[FamilyZJob]) -> None:
    counts = Counter(j.label for j in jobs)
    assert set(counts) == set(CLASSES)
    assert max(counts.values()) - min(counts.values()) <= 1
    for n in (7, 23):
        c = Counter(intents(3, n))
        assert max(c.values()) - min(c.values()) <= 1 and sum(c.values()) == n
    order = intents(3, 50)
    assert order != list(CLASSES) * 10  # shuffled, not cycled
    assert intents(3, 50) == order and intents(3, 20) == order[:20]


def test_labels_carry_a_mechanism_of_their_class_and_both_memory_mechanisms_occur(jobs: list[FamilyZJob]) -> None:
    for j in jobs:
        assert Mechanism(j.mechanism) in MECHANISMS[j.label]
        assert dataclasses.is_dataclass(j)
        with pytest.raises(dataclasses.FrozenInstanceError):
            j.name = "x"  # type: ignore[misc]
    memory = {j.mechanism for j in jobs if j.label is Bottleneck.MEMORY}
    assert memory == {Mechanism.HOST_MEMORY_PRESSURE.value, Mechanism.HBM_BANDWIDTH.value}


def test_window_grid_shapes_and_quality(jobs: list[FamilyZJob]) -> None:
    for j in jobs:
        w = j.window
        assert w.start == START and w.timestamps[0] == START and w.step == 30.0
        assert np.allclose(np.diff(w.timestamps), 30.0) and w.end == w.timestamps[-1]
        assert w.timestamps.size >= 21 and w.job == j.name and w.namespace == j.namespace
        families, coverage = families_and_coverage(w.pods)
        assert w.quality.families == families and w.quality.coverage == pytest.approx(coverage)
        assert w.quality.coverage > 0.8 and w.quality.scrape_interval in (10.0, 15.0, 30.0, 60.0)
        for pw in w.pods:
            assert pw.gpu_count >= 1 and pw.node
            for values in pw.signals.values():
                assert values.shape == w.timestamps.shape and values.dtype == np.float64


def test_contract_names_units_power_and_clock(jobs: list[FamilyZJob]) -> None:
    for j in jobs:
        for pw in j.window.pods:
            s = pw.signals
            for name, values in s.items():
                assert name in SIGNALS
                finite = values[np.isfinite(values)]
                assert (finite >= 0).all(), name
                if SIGNALS[name].unit == "ratio":
                    assert (finite <= 1.0).all(), name
            assert np.nanmax(s["sm_clock_mhz"]) <= MAX_CLOCK[pw.gpu_model or ""]
            if "power_limit_w" in s:
                assert (s["power_w"] <= s["power_limit_w"] + 1e-9)[np.isfinite(s["power_w"])].all()
            # the pod's own interfaces carry part of what the node's carry (scrape phases differ: medians)
            if "sc_net_rx_bps" in s:
                assert np.nanmedian(s["sc_net_rx_bps"]) <= np.nanmedian(s["node_net_rx_bps"]) * 1.05


def test_counters_are_monotone_between_resets() -> None:
    plan = draw(np.random.default_rng(11), Bottleneck.IO, 0, START, 30.0)
    plan.view.reset = 1.0
    at = START + 30.0 * np.arange(plan.samples)
    scr = Scrapes(np.random.default_rng(2), plan, "node", START - 330, at, plan.ticks)
    rate = np.abs(np.random.default_rng(3).normal(5.0, 2.0, plan.ticks))
    (values,) = scr.counters({"x": rate})
    drops = np.flatnonzero(np.diff(values) < 0)
    assert drops.size == 1  # exactly the restart
    before, after = values[: drops[0] + 1], values[drops[0] + 1 :]
    assert (np.diff(before) >= 0).all() and (np.diff(after) >= 0).all() and after[0] < before[-1]
    # and rate() of it recovers the integrated rate away from the restart
    got = scr.rates({"x": rate})["x"]
    assert np.nanmedian(got) == pytest.approx(5.0, rel=0.15)


def test_controllers_closed_forms() -> None:
    phi, throttled, wait = cfs(np.array([8.0, 2.0]), np.array([4.0, 1e9]), np.array([64.0, 64.0]))
    assert phi == pytest.approx([0.5, 1.0]) and throttled[0] > 0.9 and throttled[1] == 0.0 and wait[0] >= 0.5
    share = aimd_share(np.array([100.0]), np.array([2.0]), np.array([6.0]))
    assert share[0] == pytest.approx(100 * 2 / 8 * (1 - 1 / 32))
    steps, produced = prefetch(np.array([0.0, 4.0]), np.array([1.0, 1.0]), np.array([3.0, 3.0]), np.array([8.0, 8.0]))
    assert steps == pytest.approx([1.0, 3.0]) and produced == pytest.approx([1.0, 1.0])
    lanes = {
        "fmax": np.array([1410.0]),
        "plim": np.array([250.0]),
        "pidle": np.array([55.0]),
        "pdyn": np.array([400.0]),
        "alpha": np.array([0.05]),
        "tamb": np.array([30.0]),
        "rth": np.array([0.1]),
        "tslow": np.array([87.0]),
        "slew": np.array([90.0]),
    }
    clock, temp = np.array([1410.0]), np.array([50.0])
    for _ in range(60):
        clock, temp, power, capped = power_governor(clock, temp, np.array([1.0]), lanes)
        assert power[0] <= 250.0
    assert clock[0] < 1410.0 * 0.75 and capped[0] == 1.0 and clock[0] % 15.0 == 0.0


def _quiet_compute_plan() -> Plan:
    """A single-pod, compute-bound Job with its neighbours and pauses taken away."""
    for s in range(200):
        plan = draw(np.random.default_rng((99, s)), Bottleneck.GPU, 0, START, 30.0)
        if plan.intent_mechanism is Mechanism.COMPUTE and plan.pods == 1 and "hard" not in plan.tags:
            for key in ("pause", "nbr_cpu", "nbr_flows", "nbr_disk", "nbr_psi"):
                plan.noise[key][:] = 0.0
            plan.lanes["plim"][:] = plan.lanes["tdp"]
            plan.lanes["quota"][:] = 1e9
            return plan
    raise AssertionError("no compute-bound plan drawn")


def test_a_quota_that_throttles_the_workers_labels_cpu() -> None:
    plan = _quiet_compute_plan()
    ((state, _, base),) = _simulate([plan])
    assert base.label is Bottleneck.GPU
    rate = float(np.mean(state["steps"][400:]))
    workers, gpus = float(plan.lanes["workers"][0]), float(plan.lanes["gpus"][0])
    # decoding now keeps 70 % of each worker busy at the GPU's pace; the quota allows a quarter of them
    plan.lanes["decode_s"][:] = 0.7 * workers / (float(plan.lanes["batch"][0]) * rate)
    plan.lanes["quota"][:] = 0.25 * workers * gpus
    ((state, _, prof),) = _simulate([plan])
    assert prof.label is Bottleneck.CPU and prof.mechanism is Mechanism.THROTTLED
    assert float(np.mean(state["throttled"][400:])) > 0.9
    assert float(np.mean(state["steps"][400:])) < 0.6 * rate


def test_a_power_limit_that_holds_the_clock_down_labels_gpu() -> None:
    plan = _quiet_compute_plan()
    ((free_state, _, _),) = _simulate([plan])
    plan.lanes["plim"][:] = 0.5 * plan.lanes["tdp"]
    ((state, _, prof),) = _simulate([plan])
    fmax = float(plan.lanes["fmax"][0])
    assert prof.label is Bottleneck.GPU and prof.mechanism is Mechanism.COMPUTE
    assert float(np.mean(state["clock"][400:])) < 0.9 * fmax
    assert (state["power"] <= plan.lanes["plim"][0] + 1e-3).all()
    assert float(np.mean(state["steps"][400:])) < float(np.mean(free_state["steps"][400:]))


def _mean(job: FamilyZJob, name: str) -> float:
    values = [np.nanmean(p.signals[name]) for p in job.window.pods if name in p.signals]
    return float(np.mean(values)) if values else float("nan")


def test_per_class_physics(jobs: list[FamilyZJob]) -> None:
    by = {c: [j for j in jobs if j.label is c] for c in CLASSES}
    util = {c: np.nanmean([_mean(j, "gpu_util") for j in by[c]]) for c in CLASSES}
    # Jobs that wait for data leave their GPUs idle far more than GPU- or Interconnect-bound ones
    assert max(util[Bottleneck.IO], util[Bottleneck.CPU]) < min(util[Bottleneck.GPU], util[Bottleneck.INTERCONNECT])
    for j in by[Bottleneck.MEMORY]:
        if j.mechanism == Mechanism.HOST_MEMORY_PRESSURE.value:
            swapin, kills = _mean(j, "sc_swapin_ps"), _mean(j, "sc_oom_kills")
            assert np.isnan(swapin) or swapin > 0 or kills > 0
            assert _mean(j, "node_majfault_ps") > 0 or _mean(j, "node_mem_avail_frac") < 1
        elif "dram_active" in j.window.pods[0].signals:
            assert _mean(j, "dram_active") > _mean(j, "tensor_active")
    for j in by[Bottleneck.CPU]:
        if j.mechanism == Mechanism.THROTTLED.value:
            assert _mean(j, "cpu_throttled_frac") > 0.5
    for j in jobs:
        # RDMA collectives show on the infiniband counters, never on the pod's own interfaces
        if "rdma" in j.tags and "sc_net_tx_bps" in j.window.pods[0].signals:
            assert _mean(j, "ib_tx_bps") > 10 * _mean(j, "sc_net_tx_bps")


def test_a_neighbours_traffic_shows_in_the_nodes_bytes_only() -> None:
    plan = _quiet_compute_plan()
    plan.view.sidecar, plan.view.sidecar_net, plan.view.reset, plan.view.miss = True, True, 0.0, 0.0
    at = START + 30.0 * np.arange(plan.samples)
    seen = []
    for flows in (0.0, 16.0):
        plan.noise["nbr_flows"][:] = flows
        ((state, consts, _),) = _simulate([plan])
        pw = pod_signals(np.random.default_rng(5), plan, telemetry(state, consts), 0, START - LEAD_S, at)
        seen.append((np.nanmedian(pw.signals["node_net_rx_bps"]), np.nanmedian(pw.signals["sc_net_rx_bps"])))
    (node_quiet, pod_quiet), (node_busy, pod_busy) = seen
    assert node_busy > node_quiet + 1e8
    assert pod_busy <= pod_quiet * 1.05 + 1e5
