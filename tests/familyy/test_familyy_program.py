"""Family Y's linear program: the exact solver against HiGHS, shadow prices, and the label they give."""

from __future__ import annotations

import ast
import pathlib

import numpy as np
import pytest
from scipy.optimize import linprog

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyy.program import (
    CAPACITIES,
    ROWS,
    Demand,
    class_elasticities,
    elasticities,
    rows,
    solve,
)

PACKAGE = pathlib.Path(__file__).parents[2] / "operator" / "bottleneck_operator_dev" / "familyy"


def _demand(**changes: object) -> Demand:
    base: dict[str, object] = {
        "dec_cpu": 5e-3,
        "read_cpu": 1e-5,
        "collate": 2e-6,
        "launch": 1e-5,
        "flops": 12.3e9,
        "hbm_bytes": 12.3e9 / 100,
        "gpu_dec_flops": 1e9,
        "gpu_dec_max": 0.0,
        "h2d": 150e3,
        "h2d_gpu": 110e3,
        "read_bytes": 110e3,
        "read_reqs": 1.0,
        "hit": 0.0,
        "remote": False,
        "ar_intra": 0.0,
        "intra_link": "",
        "ar_net": 0.0,
        "net_link": "",
        "gpudirect": False,
        "overlap": 0.6,
        "msgs": 0.0,
        "resident": 50e9,
        "touch": 1e6,
        "touch_thread": 1e5,
        "fault_s": 30e-6,
        "reclaim_cpu": 2e-9,
    }
    base.update(changes)
    return Demand(**base)  # type: ignore[arg-type]


def _caps(**changes: float) -> dict[str, float]:
    base = {
        "cores": 64.0,
        "workers": 64.0,
        "launch": 1.0,
        "thread": 1.0,
        "storage_bw": 7e9,
        "storage_iops": 1e6,
        "nic": 12.5e9,
        "rdma": 25e9,
        "pcie": 31.5e9,
        "nvlink": 300e9,
        "msg_rate": 1e5,
        "hbm": 2039e9 * 0.85,
        "flops": 312e12 * 0.5,
        "host_mem": 100e9,
        "swap_bw": 2e9,
    }
    base.update(changes)
    return base


def _label(d: Demand, caps: dict[str, float]) -> Bottleneck:
    sol = solve(*rows(d, caps))
    by_class = class_elasticities(d, caps, elasticities(d, caps, sol))
    return max(by_class, key=lambda c: by_class[c])


def test_exact_solver_matches_highs_on_random_programs() -> None:
    rng = np.random.default_rng(5)
    for _ in range(60):
        a = rng.uniform(0.0, 2.0, size=(len(ROWS), 2))
        a[:, 1] -= rng.uniform(0.0, 1.0, size=len(ROWS)) * (rng.random(len(ROWS)) < 0.3)
        a[-1] = [-rng.uniform(0.1, 1.0), 1.0]  # g is at most a share of x, as in the family
        b = rng.uniform(0.5, 3.0, size=len(ROWS))
        b[-1] = 0.0
        ours = solve(a, b)
        ref = linprog([-1.0, 0.0], A_ub=a, b_ub=b, bounds=[(0, None), (0, None)], method="highs")
        assert ref.status == 0
        assert ours.x == pytest.approx(-ref.fun, rel=1e-7)
        # duals agree on the capacity rows (x's shadow price is unique there in general position)
        np.testing.assert_allclose(ours.duals @ b, -ref.ineqlin.marginals @ b, rtol=1e-6, atol=1e-9)


def test_one_binding_row_has_elasticity_one_and_the_rest_zero() -> None:
    d, caps = _demand(), _caps(storage_bw=0.1e9)  # 100 MB/s for 110 KB samples: ~900 samples/s
    sol = solve(*rows(d, caps))
    assert sol.x == pytest.approx(0.1e9 / 110e3)
    e = elasticities(d, caps, sol)
    assert e["storage_bw"] == pytest.approx(1.0, rel=1e-4)
    assert all(abs(v) < 1e-4 for k, v in e.items() if k != "storage_bw")
    assert _label(d, caps) is Bottleneck.IO


def test_raising_the_highest_shadow_price_raises_the_rate_most() -> None:
    rng = np.random.default_rng(9)
    for _ in range(25):
        caps = _caps(**{k: v * float(rng.uniform(0.02, 1.5)) for k, v in _caps().items()})
        d = _demand(
            ar_intra=float(rng.uniform(0, 2e6)),
            intra_link="nvlink",
            ar_net=float(rng.uniform(0, 1e6)),
            net_link="rdma",
            msgs=float(rng.uniform(0, 0.05)),
            resident=float(rng.uniform(50e9, 150e9)),
        )
        sol = solve(*rows(d, caps))
        e = elasticities(d, caps, sol)
        gains = {}
        for name in CAPACITIES:
            bumped = dict(caps)
            bumped[name] *= 1.001
            gains[name] = solve(*rows(d, bumped)).x / sol.x - 1.0
        top = max(e, key=lambda k: e[k])
        assert gains[top] == pytest.approx(max(gains.values()), rel=0.02, abs=1e-9)
        assert gains[top] == pytest.approx(0.001 * e[top], rel=0.05)


def test_gpu_decode_couples_cores_and_the_gpu() -> None:
    # The loader's cores and the GPU's time both bind: decoding part of the samples on the GPU
    # balances them, and both carry a shadow price.
    d = _demand(gpu_dec_max=1.0, dec_cpu=20e-3, gpu_dec_flops=2e11)
    caps = _caps(cores=16.0)
    sol = solve(*rows(d, caps))
    assert 0 < sol.g < sol.x
    e = elasticities(d, caps, sol)
    assert e["cores"] > 0.05 and e["flops"] > 0.05
    only_cpu = solve(*rows(_demand(dec_cpu=20e-3), caps))
    assert sol.x > only_cpu.x


def test_stream_row_splits_between_compute_hbm_and_the_exposed_all_reduce() -> None:
    # compute, HBM-bound kernels and the all-reduce's exposed part share the GPU's time
    d = _demand(hbm_bytes=12.3e9 / 20, ar_intra=10e6, intra_link="pcie", overlap=0.5)
    caps = _caps(pcie=15.8e9)
    e = elasticities(d, caps, solve(*rows(d, caps)))
    by = class_elasticities(d, caps, e)
    assert by[Bottleneck.MEMORY] > 0.1 and by[Bottleneck.GPU] > 0.05 and by[Bottleneck.INTERCONNECT] > 0.05
    assert sum(by.values()) == pytest.approx(1.0, rel=1e-3)


@pytest.mark.parametrize(
    ("changes", "caps", "expected"),
    [
        ({}, {}, Bottleneck.GPU),
        ({"dec_cpu": 50e-3}, {"cores": 8.0, "workers": 64.0}, Bottleneck.CPU),
        ({"dec_cpu": 50e-3}, {"workers": 4.0}, Bottleneck.CPU),
        ({"hbm_bytes": 12.3e9}, {}, Bottleneck.MEMORY),
        ({"h2d": 20e6}, {}, Bottleneck.INTERCONNECT),
        ({"ar_net": 20e6, "net_link": "nic"}, {"nic": 1.25e9}, Bottleneck.INTERCONNECT),
        ({"read_bytes": 2e6, "remote": True}, {"storage_bw": 0.5e9}, Bottleneck.IO),
        ({"resident": 200e9, "touch": 3e6}, {"swap_bw": 0.3e9}, Bottleneck.MEMORY),
        ({"launch": 5e-4}, {}, Bottleneck.GPU),
    ],
)
def test_each_class_by_its_physics(changes: dict[str, object], caps: dict[str, float], expected: Bottleneck) -> None:
    assert _label(_demand(**changes), _caps(**caps)) is expected


def test_host_memory_shortfall_swaps_and_the_limit_carries_the_price() -> None:
    d = _demand(resident=200e9, touch=3e6)
    caps = _caps(swap_bw=0.3e9)
    sol = solve(*rows(d, caps))
    assert sol.usage[ROWS.index("swap")] == pytest.approx(caps["swap_bw"])
    e = elasticities(d, caps, sol)
    assert e["host_mem"] > 0 and e["swap_bw"] > 0
    roomy = solve(*rows(d, _caps(swap_bw=0.3e9, host_mem=250e9)))
    assert roomy.x > sol.x  # a limit above the resident set removes the swap row's load


def test_the_nic_is_shared_between_storage_and_collectives() -> None:
    d = _demand(read_bytes=1e6, remote=True, ar_net=3e6, net_link="nic", overlap=1.0)
    caps = _caps(nic=1.25e9)
    e = elasticities(d, caps, solve(*rows(d, caps)))
    by = class_elasticities(d, caps, e)
    assert by[Bottleneck.INTERCONNECT] == pytest.approx(0.75, rel=1e-3)
    assert by[Bottleneck.IO] == pytest.approx(0.25, rel=1e-3)


def test_the_package_imports_contract_numpy_scipy_optimize_and_the_standard_library_only() -> None:
    allowed_roots = {"numpy", "bottleneck_operator"}
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                root = name.split(".")[0]
                if root == "bottleneck_operator":
                    assert name.startswith("bottleneck_operator.contract"), (path.name, name)
                elif root == "scipy":
                    assert name.startswith("scipy.optimize"), (path.name, name)
                elif root not in allowed_roots:
                    import sys

                    assert root in sys.stdlib_module_names or root == "__future__", (path.name, name)


def test_every_mechanism_a_capacity_names_exists() -> None:
    from bottleneck_operator_dev.familyy.program import mechanism_of

    d = _demand()
    for name in CAPACITIES:
        assert isinstance(mechanism_of(name, d, cpu_quota_bound=True), Mechanism)
