"""Family N's step model, and what its classes look like through the exporters it models.

Every expectation here comes from the generator's own stage model (see docs/familyn.md): an
IO-bound job's GPUs wait for input, a throttled loader sits at its CPU quota, and so on. None of
it comes from the project's analysis.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyn import FamilyNJob, generate_family_n
from bottleneck_operator_dev.familyn.family import _fit
from bottleneck_operator_dev.familyn.plans import draw_plan
from bottleneck_operator_dev.familyn.steps import class_gains, label_of, step_time
from bottleneck_operator_dev.familyn.timeline import draw_timeline

START = 1_767_225_600.0  # 2026-01-01T00:00:00Z
ZERO = ("io", "cpu", "cpu_serial", "h2d", "tc", "hbm", "launch", "hostmem")


def _one_pod(**seconds: float) -> dict[str, np.ndarray]:
    return {k: np.full((1, 1), seconds.get(k, 0.0)) for k in ZERO}


def _gains(stages: dict[str, np.ndarray], comm: float = 0.0, overlap: float = 0.0) -> dict[Bottleneck, float]:
    pods, n = int(stages["tc"].shape[0]), int(stages["tc"].shape[-1])
    alive = np.ones((pods, n), dtype=bool)
    return class_gains(stages, np.full(n, comm), alive, np.ones(n), bubble=0.0, overlap=overlap)


def test_input_overlaps_the_gpu_path() -> None:
    gains = _gains(_one_pod(io=2.0, cpu=0.5, tc=1.0))
    label, lead = label_of(gains)
    assert label is Bottleneck.IO and lead == pytest.approx(2.0)
    assert gains[Bottleneck.GPU] == pytest.approx(1.0)  # faster kernels would only wait longer for input


def test_serial_stages_add_up() -> None:
    gains = _gains(_one_pod(tc=1.0, hbm=0.6, h2d=0.2, cpu=0.3))
    label, lead = label_of(gains)
    assert label is Bottleneck.GPU and gains[Bottleneck.GPU] == pytest.approx(1.8 / 0.8)
    assert lead == pytest.approx((1.8 / 0.8) / (1.8 / 1.2))


def test_backward_pass_hides_the_collective() -> None:
    hidden = _gains(_one_pod(tc=1.5), comm=0.9, overlap=1.0)
    assert hidden[Bottleneck.INTERCONNECT] == pytest.approx(1.0)
    exposed = _gains(_one_pod(tc=0.3), comm=0.9, overlap=1.0)
    assert label_of(exposed)[0] is Bottleneck.INTERCONNECT


def test_the_slowest_pod_sets_the_step() -> None:
    stages = {k: np.zeros((2, 1)) for k in ZERO}
    stages["tc"][:] = 1.0
    stages["io"][1] = 1.6  # one pod reads from a slower volume
    step, own = step_time(stages, np.zeros(1), np.ones((2, 1), dtype=bool), bubble=0.0, overlap=0.0)
    assert step[0] == pytest.approx(1.6) and own[0, 0] == pytest.approx(1.0)
    alive = np.array([[True], [False]])  # an elastic job without that pod
    assert step_time(stages, np.zeros(1), alive, bubble=0.0, overlap=0.0)[0][0] == pytest.approx(1.0)


@pytest.mark.parametrize("label", list(Bottleneck)[:5])
def test_fitted_label_holds_on_every_grid_point(label: Bottleneck) -> None:
    rng = np.random.default_rng(17)
    end = START + 30.0 * 80
    for variant in (0, 1):
        for _ in range(20):
            plan = draw_plan(rng, label, variant)
            line = draw_timeline(rng, plan, START, end)
            fitted = _fit(plan, line, START, end)
            if fitted is not None:
                break
        assert fitted is not None
        stages, comm, lead = fitted
        inside = (line.grid >= START) & (line.grid <= end)
        kw = {"bubble": plan.bubble, "overlap": plan.overlap}
        full = {k: v[:, inside] for k, v in stages.items()}
        progress = line.progress[inside]
        gains = class_gains(full, comm[inside], line.alive[:, inside], progress, **kw)
        again, again_lead = label_of(gains)
        assert again is label and again_lead == pytest.approx(lead)


@pytest.fixture(scope="module")
def sample() -> list[FamilyNJob]:
    return generate_family_n(23, 150, start=START)


def _median(job: FamilyNJob, name: str) -> float:
    values = [
        np.nanmedian(p.signals[name]) for p in job.window.pods if np.isfinite(p.signals.get(name, [np.nan])).any()
    ]
    return float(np.median(values)) if values else float("nan")


def _over(jobs: list[FamilyNJob], which: Callable[[FamilyNJob], bool], name: str) -> float:
    values = [_median(j, name) for j in jobs if which(j)]
    values = [v for v in values if np.isfinite(v)]
    assert values, f"no job with {name}"
    return float(np.median(values))


def test_input_bound_gpus_wait(sample: list[FamilyNJob]) -> None:
    io = _over(sample, lambda j: j.label is Bottleneck.IO, "gpu_util")
    cpu = _over(sample, lambda j: j.label is Bottleneck.CPU, "gpu_util")
    gpu = _over(sample, lambda j: j.label is Bottleneck.GPU, "gpu_util")
    assert max(io, cpu) + 0.2 < gpu and gpu > 0.8


def test_io_bound_readers_stall_on_io(sample: list[FamilyNJob]) -> None:
    io = _over(sample, lambda j: j.label is Bottleneck.IO and j.mechanism != "network-storage", "sc_psi_io_some")
    others = _over(sample, lambda j: j.label is not Bottleneck.IO, "sc_psi_io_some")
    assert io > 0.3 > others


def test_throttled_loaders_sit_at_their_quota(sample: list[FamilyNJob]) -> None:
    throttled = [j for j in sample if j.mechanism == "throttled"]
    assert throttled
    for job in throttled:
        for pod in job.window.pods:
            if "cpu_throttled_frac" in pod.signals:
                assert np.nanpercentile(pod.signals["cpu_throttled_frac"], 75) > 0.3
            if "cpu_limit_cores" in pod.signals and "cpu_cores" in pod.signals:
                use = pod.signals["cpu_cores"] / pod.signals["cpu_limit_cores"]
                assert np.nanpercentile(use, 75) > 0.7


def test_host_memory_pressure_shows_as_stalls_and_swap_in(sample: list[FamilyNJob]) -> None:
    pressed = [j for j in sample if j.mechanism == "host-memory-pressure"]
    assert pressed
    for job in pressed:
        for pod in job.window.pods:
            if "sc_psi_mem_some" in pod.signals:
                assert np.nanmax(pod.signals["sc_psi_mem_some"]) > 0.01
                assert np.nanmax(pod.signals["sc_swapin_ps"] + pod.signals["sc_majfault_ps"]) > 100.0


def test_hbm_bound_kernels_keep_dram_busy_not_tensor_pipes(sample: list[FamilyNJob]) -> None:
    def hbm(j: FamilyNJob) -> bool:
        return j.mechanism == "hbm-bandwidth"

    def compute(j: FamilyNJob) -> bool:
        return j.mechanism == "compute"

    assert _over(sample, hbm, "dram_active") > _over(sample, compute, "dram_active") + 0.1
    ratio = [_median(j, "tensor_active") / _median(j, "dram_active") for j in sample if hbm(j)]
    assert np.nanmedian(ratio) < 0.6


def test_network_bound_jobs_fill_their_fabric(sample: list[FamilyNJob]) -> None:
    multi = [j for j in sample if len(j.window.pods) > 1]
    net = _over(multi, lambda j: j.mechanism == "network", "ib_rx_bps")
    rest = _over(multi, lambda j: j.label is not Bottleneck.INTERCONNECT, "ib_rx_bps")
    assert net > 3 * rest
