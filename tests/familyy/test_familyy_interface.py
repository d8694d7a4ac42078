"""Family Y's interface: determinism, errors, balance, the grid and the contract's names and units."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from bottleneck_operator.contract.signals import SIGNALS
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familyy import FamilyYJob, generate_family_y
from bottleneck_operator_dev.familyy.hardware import GPUS

START = 1_700_000_000.0


@pytest.fixture(scope="module")
def jobs() -> list[FamilyYJob]:
    return generate_family_y(seed=7, n=40, start=START)


def test_same_seed_same_jobs_and_a_job_does_not_depend_on_n() -> None:
    a = generate_family_y(seed=3, n=6, start=START)
    b = generate_family_y(seed=3, n=9, start=START)
    for x, y in zip(a, b, strict=False):
        assert (x.label, x.mechanism, x.tags, x.name) == (y.label, y.mechanism, y.tags, y.name)
        for px, py in zip(x.window.pods, y.window.pods, strict=True):
            assert px.signals.keys() == py.signals.keys()
            for k in px.signals:
                np.testing.assert_array_equal(px.signals[k], py.signals[k])
    other = generate_family_y(seed=4, n=6, start=START)
    assert [j.tags for j in other] != [j.tags for j in a]


@pytest.mark.parametrize(("n", "step", "words"), [(-1, 30.0, "n must be"), (3, 0.0, "step"), (3, -5.0, "step")])
def test_bad_arguments_say_what_was_wrong(n: int, step: float, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        generate_family_y(seed=1, n=n, start=START, step=step)


def test_zero_jobs_is_an_empty_list() -> None:
    assert generate_family_y(seed=1, n=0, start=START) == []


def test_classes_come_in_equal_numbers_and_shuffled(jobs: list[FamilyYJob]) -> None:
    counts = collections.Counter(j.label for j in jobs)
    assert set(counts) == set(CLASSES)
    assert all(v == 8 for v in counts.values())
    seven = collections.Counter(j.label for j in generate_family_y(seed=2, n=7, start=START))
    assert max(seven.values()) - min(seven.get(c, 0) for c in CLASSES) <= 1
    order = [j.label for j in jobs]
    assert order != [CLASSES[i % 5] for i in range(40)]  # not the plain cycle
    assert len({tuple(order[k : k + 5]) for k in range(0, 40, 5)}) > 1  # blocks are shuffled differently


def test_both_memory_mechanisms_and_every_mechanism_is_its_class(jobs: list[FamilyYJob]) -> None:
    mechs = {(j.label, j.mechanism) for j in jobs}
    assert (Bottleneck.MEMORY, Mechanism.HOST_MEMORY_PRESSURE.value) in mechs
    assert (Bottleneck.MEMORY, Mechanism.HBM_BANDWIDTH.value) in mechs
    for j in jobs:
        assert Mechanism(j.mechanism) in MECHANISMS[j.label]


def test_grid_and_shapes() -> None:
    for step in (15.0, 30.0, 60.0):
        for job in generate_family_y(seed=11, n=3, start=START, step=step):
            w = job.window
            assert w.start == START and w.step == step
            np.testing.assert_allclose(np.diff(w.timestamps), step)
            assert w.timestamps[0] == START and w.end == w.timestamps[-1]
            assert w.timestamps.size >= 20
            assert w.namespace == job.namespace and w.job == job.name
            for pod in w.pods:
                assert pod.gpu_count >= 1 and pod.gpu_model
                for values in pod.signals.values():
                    assert values.shape == w.timestamps.shape and values.dtype == np.float64


def test_contract_names_units_power_and_clocks(jobs: list[FamilyYJob]) -> None:
    boards = {g.model_name: g for g in GPUS}
    for job in jobs:
        for pod in job.window.pods:
            s = pod.signals
            assert set(s) <= set(SIGNALS)
            for name, v in s.items():
                finite = v[np.isfinite(v)]
                if SIGNALS[name].unit == "ratio":
                    assert np.all((finite >= 0) & (finite <= 1)), name
                elif name != "xid_code":
                    assert np.all(finite >= 0), name
            board = boards[pod.gpu_model or ""]
            assert np.nanmax(s["sm_clock_mhz"]) <= board.max_clock_mhz
            assert np.nanmax(s["power_w"]) <= board.tdp_w
            if "power_limit_w" in s:
                assert np.all(s["power_w"] <= s["power_limit_w"] + 1e-9) or np.isnan(s["power_limit_w"]).any()


def test_quality_is_the_contracts_own(jobs: list[FamilyYJob]) -> None:
    for job in jobs:
        fams, cov = families_and_coverage(job.window.pods)
        q = job.window.quality
        assert q.families == fams and q.coverage == pytest.approx(cov)
        assert q.scrape_interval in (10.0, 15.0, 30.0, 60.0)
        assert cov > 0.8


def test_the_pods_own_network_bytes_never_exceed_the_nodes(jobs: list[FamilyYJob]) -> None:
    seen = 0
    for job in jobs:
        for pod in job.window.pods:
            s = pod.signals
            if "sc_net_rx_bps" in s and "node_net_rx_bps" in s:
                # scraped at different instants, so step by step they may cross; over the window, never
                assert np.nanmedian(s["sc_net_rx_bps"]) <= np.nanmedian(s["node_net_rx_bps"]) * 1.02 + 1e6
                seen += 1
    assert seen > 0
