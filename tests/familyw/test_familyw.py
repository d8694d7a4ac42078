"""Family W: the interface, the window contract, the counterfactual label and the model's physics."""

from __future__ import annotations

import dataclasses
import math
import time
from collections import Counter

import numpy as np
import pytest

from bottleneck_operator.contract.signals import SIGNALS
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familyw import FamilyWJob, generate_family_w
from bottleneck_operator_dev.familyw.exporters import counter_values
from bottleneck_operator_dev.familyw.family import _targets
from bottleneck_operator_dev.familyw.fluid import Run, integrate
from bottleneck_operator_dev.familyw.hardware import GPUS
from bottleneck_operator_dev.familyw.label import counterfactuals
from bottleneck_operator_dev.familyw.model import JobPlan, stage_rates
from bottleneck_operator_dev.familyw.plan import draw_plan

START = 1_700_000_000.0
N = 20


@pytest.fixture(scope="module")
def jobs() -> list[FamilyWJob]:
    return generate_family_w(seed=3, n=N, start=START)


def _plan(target: Bottleneck = Bottleneck.GPU, index: int = 0, memory: str = "hbm") -> JobPlan:
    return draw_plan(np.random.default_rng((11, index)), index, target, memory, 0, 270.0)


def _single_node_plan(target: Bottleneck) -> JobPlan:
    """A drawn one-pod plan with no pauses and no launch-bound kernels, to be made bound by hand."""
    for i in range(200):
        p = _plan(target, i)
        if p.nodes == 1 and float(stage_rates(p).launch_share.max()) == 0.0:
            return dataclasses.replace(p, pause=np.zeros_like(p.pause))
    raise AssertionError("no single-node plan drawn")


# --- the interface


def test_errors_say_what_was_wrong() -> None:
    with pytest.raises(ValueError, match="n must be >= 0"):
        generate_family_w(1, -1, start=START)
    with pytest.raises(ValueError, match="step must be a positive"):
        generate_family_w(1, 5, start=START, step=0.0)
    with pytest.raises(ValueError, match="step must be a positive"):
        generate_family_w(1, 5, start=START, step=-30.0)
    assert generate_family_w(1, 0, start=START) == []


def test_deterministic_and_independent_of_n(jobs: list[FamilyWJob]) -> None:
    again = generate_family_w(seed=3, n=7, start=START)
    for a, b in zip(jobs[:7], again, strict=True):
        assert (a.name, a.label, a.mechanism, a.tags) == (b.name, b.label, b.mechanism, b.tags)
        for pa, pb in zip(a.window.pods, b.window.pods, strict=True):
            assert list(pa.signals) == list(pb.signals)
            for name in pa.signals:
                np.testing.assert_array_equal(pa.signals[name], pb.signals[name])
    other = generate_family_w(seed=4, n=2, start=START)
    assert [j.name for j in other] != [j.name for j in jobs[:2]]


def test_never_reads_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom() -> float:
        raise AssertionError("the clock was read")

    monkeypatch.setattr(time, "time", boom)
    monkeypatch.setattr(time, "time_ns", boom)
    (job,) = generate_family_w(seed=5, n=1, start=123_456.0)
    assert job.window.start == 123_456.0


def test_classes_balanced_and_shuffled(jobs: list[FamilyWJob]) -> None:
    assert Counter(j.label for j in jobs) == {c: N // 5 for c in CLASSES}
    assert [j.label for j in jobs] != list(CLASSES) * (N // 5)  # not in the plain order
    counts = Counter(t for t, _ in _targets(9, 602))
    assert sorted(counts.values()) == [120, 120, 120, 121, 121]
    assert [t for t, _ in _targets(9, 10)] == [t for t, _ in _targets(9, 602)][:10]


def test_both_memory_mechanisms(jobs: list[FamilyWJob]) -> None:
    memory = {j.mechanism for j in jobs if j.label is Bottleneck.MEMORY}
    assert memory == {Mechanism.HOST_MEMORY_PRESSURE.value, Mechanism.HBM_BANDWIDTH.value}
    for j in jobs:
        assert Mechanism(j.mechanism) in MECHANISMS[j.label]
        assert j.label.value not in j.name and j.label.value.lower() not in j.name


# --- the window contract


def test_grid_and_shapes(jobs: list[FamilyWJob]) -> None:
    for j in jobs:
        w = j.window
        assert w.start == START and w.step == 30.0
        np.testing.assert_allclose(np.diff(w.timestamps), 30.0)
        assert w.timestamps[0] == START and w.end == w.timestamps[-1]
        assert len(w.timestamps) >= 20
        assert w.pods and len({p.pod for p in w.pods}) == len(w.pods)
        for p in w.pods:
            assert p.gpu_count >= 1 and p.gpu_model in {g.model_name for g in GPUS}
            for values in p.signals.values():
                assert values.shape == w.timestamps.shape and values.dtype == np.float64


def test_names_units_and_limits(jobs: list[FamilyWJob]) -> None:
    max_clock = {g.model_name: g.max_clock for g in GPUS}
    for j in jobs:
        families, coverage = families_and_coverage(j.window.pods)
        assert j.window.quality.families == families and j.window.quality.coverage == coverage
        assert j.window.quality.scrape_interval is not None and 10 <= j.window.quality.scrape_interval <= 60
        for p in j.window.pods:
            sig = p.signals
            assert set(sig) <= set(SIGNALS)
            for name, v in sig.items():
                f = v[np.isfinite(v)]
                if SIGNALS[name].unit == "ratio":
                    assert ((f >= 0) & (f <= 1)).all(), name
                if SIGNALS[name].unit in ("B/s", "1/s", "cores", "B", "W", "MHz"):
                    assert (f >= -1e-6).all(), name
            if "power_w" in sig and "power_limit_w" in sig:
                ok = np.isfinite(sig["power_w"]) & np.isfinite(sig["power_limit_w"])
                assert (sig["power_w"][ok] <= sig["power_limit_w"][ok] + 1e-9).all()
            if "sm_clock_mhz" in sig:
                clk = sig["sm_clock_mhz"][np.isfinite(sig["sm_clock_mhz"])]
                assert (clk <= max_clock[str(p.gpu_model)]).all()
            assert np.isfinite(sig["gpu_util"]).mean() > 0.5


def test_counters_monotone_between_resets() -> None:
    rng = np.random.default_rng(0)
    flow = rng.uniform(0.0, 5.0, (2, 600))
    cum = np.concatenate([np.zeros((2, 1)), np.cumsum(flow, axis=1)], axis=1)
    t = np.sort(rng.uniform(0.0, 599.0, 40))
    plain = counter_values(cum, t, math.inf)
    assert (np.diff(plain, axis=1) >= 0).all()
    reset = counter_values(cum, t, 300.0)
    d = np.diff(reset, axis=1)
    drops = np.flatnonzero((d < 0).any(axis=0))
    assert drops.size == 1 and t[drops[0]] < 300.0 <= t[drops[0] + 1]
    assert (np.delete(d, drops, axis=1) >= 0).all()
    assert (reset[:, t >= 300.0] >= 0).all()


# --- the label: what doubling a resource does


def test_label_from_hand_built_bounds() -> None:
    base = _single_node_plan(Bottleneck.GPU)
    r = stage_rates(base)
    gpu = float(r.gpu.mean())
    # storage at a fifth of what the devices take: doubling it is the best thing to do
    slow_io = dataclasses.replace(base, stor_bw=base.stor_bw * 0.2 * gpu / r.io, lat_bw=base.lat_bw * 0.2 * gpu / r.io)
    # the loader with a fifth of the cores it needs
    slow_cpu = dataclasses.replace(
        base, workers=0.2 * gpu * base.workload.decode, quota=math.inf, nb_load=base.nb_load * 0
    )
    # HBM traffic five times the matmul time
    wl = base.workload
    c1 = 0.93 * wl.flops * base.batch / base.peak
    m2 = wl.bytes_mem * base.batch / base.hbm
    hbm = dataclasses.replace(base, bytes_scale=5.0 * c1 / m2)
    out = counterfactuals([slow_io, slow_cpu, hbm])
    assert [o.winner for o in out] == ["storage", "cpu", "hbm"]
    assert [o.label for o in out] == [Bottleneck.IO, Bottleneck.CPU, Bottleneck.MEMORY]
    for o in out:
        assert o.gains[o.winner] > 1.3
        assert all(g <= o.gains[o.winner] for g in o.gains.values())


def test_step_composition_removing_the_binding_part_shortens_most() -> None:
    p = _single_node_plan(Bottleneck.GPU)
    wl = p.workload
    c1 = 0.93 * wl.flops * p.batch / p.peak
    m2 = wl.bytes_mem * p.batch / p.hbm
    for scale, winner in ((0.2 * c1 / m2, "compute"), (4.0 * c1 / m2, "hbm")):
        q = dataclasses.replace(p, bytes_scale=scale)
        t = {v: float(stage_rates(q, v).t_step.mean()) for v in ("base", "compute", "hbm")}
        assert max(("compute", "hbm"), key=lambda v: t["base"] - t[v]) == winner
        assert t[winner] < t["base"] and t["compute"] <= t["base"] and t["hbm"] <= t["base"]


# --- the model's physics


def test_fluid_conserves_samples_and_keeps_the_barrier() -> None:
    p = _plan(Bottleneck.INTERCONNECT, 1)
    while p.nodes < 2:
        p = _plan(Bottleneck.INTERCONNECT, p.index + 100)
    run = Run(p, stage_rates(p), record=True)
    integrate([run])
    assert run.trace is not None and run.steps_per_s > 0
    tr = run.trace
    read, dec, copied, steps = (tr[k].sum(axis=1) for k in ("io", "dec", "copy", "steps"))
    assert (dec <= read + p.raw_cap / 2 + 1e-6).all()
    assert (copied <= dec + p.pf_cap / 2 + 1e-6).all()
    assert (steps * p.samples_per_step <= copied + p.dev_cap / 2 + 1e-6).all()
    progress = np.cumsum(tr["steps"], axis=1)
    assert (progress.max(axis=0) - progress.min(axis=0) <= 1.0 + 1e-3).all()  # one step ahead at most


def test_memory_pressure_slows_every_host_stage() -> None:
    p = _single_node_plan(Bottleneck.GPU)
    tight = dataclasses.replace(p, mem_limit=float(p.ws.mean()) / 1.3)
    a, b = stage_rates(p), stage_rates(tight)
    assert (b.ms < 1).all() and (a.ms == 1).all()
    assert (b.io < a.io).all() and (b.dec < a.dec).all() and (b.t_step > a.t_step).all()
    relieved = stage_rates(tight, "memory")
    np.testing.assert_allclose(relieved.ms, 1.0)


def test_per_class_signatures(jobs: list[FamilyWJob]) -> None:
    def mean(job: FamilyWJob, name: str) -> float | None:
        vals = [p.signals[name] for p in job.window.pods if name in p.signals]
        if not vals:
            return None
        v = np.concatenate(vals)
        return float(np.nanmean(v)) if np.isfinite(v).any() else None

    util = {c: [mean(j, "gpu_util") for j in jobs if j.label is c] for c in CLASSES}
    assert np.mean(util[Bottleneck.GPU]) > np.mean(util[Bottleneck.IO])  # starved GPUs idle
    for j in jobs:
        dram = mean(j, "dram_active")
        if j.mechanism == Mechanism.HBM_BANDWIDTH.value and dram is not None:
            assert dram > 0.4
        if j.mechanism == Mechanism.HOST_MEMORY_PRESSURE.value:
            psi = mean(j, "sc_psi_mem_some")
            assert psi is None or psi > 0.05
            assert j.window.pods[0].signals["mem_working_set_bytes"] is not None


def test_throttled_loader_is_cpu_throttled() -> None:
    p = _single_node_plan(Bottleneck.GPU)
    gpu = float(stage_rates(p).gpu.mean())
    # two cores of quota for the loader, whose decoding would need about seven to keep up
    noise = np.full_like(p.dec_noise, 0.3 * gpu * p.workload.decode / 2.0)
    q = dataclasses.replace(p, workers=8.0, quota=2.0 + p.main_cores, nb_load=p.nb_load * 0, dec_noise=noise)
    q = dataclasses.replace(q, node_cores=max(q.node_cores, 64.0))
    (o,) = counterfactuals([q])
    assert o.label is Bottleneck.CPU and o.mechanism is Mechanism.THROTTLED
    assert o.gains["cpu"] > 1.5
