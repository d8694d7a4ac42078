"""The second scenario family: deterministic per seed, and each kind shows the signature it claims."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from bottleneck_operator.analysis.features.hardware import spec_for
from bottleneck_operator.contract.signals import SIGNAL_NAMES
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator_dev.scenarios import MECHANISMS, ScenarioJob, generate_family
from bottleneck_operator_dev.scenarios.stages import StageTimes, truth

START = 1_700_000_000.0


@pytest.fixture(scope="module")
def jobs() -> list[ScenarioJob]:
    return generate_family(6, 240, start=START)


def _median(job: ScenarioJob, name: str) -> float:
    values = [v for p in job.window.pods if (v := p.signals.get(name)) is not None]
    return float(np.nanmedian(np.concatenate(values))) if values else float("nan")


def _pick(jobs: list[ScenarioJob], *tags: str, alone: bool = True) -> list[ScenarioJob]:
    found = [j for j in jobs if all(t in j.tags for t in tags) and not (alone and j.partner)]
    assert found, f"no job tagged {tags}"
    return found


def test_same_seed_same_jobs() -> None:
    a, b = generate_family(9, 12, start=START), generate_family(9, 12, start=START)
    c = generate_family(10, 12, start=START)
    assert [j.name for j in a] == [j.name for j in b]
    for x, y in zip(a, b, strict=True):
        assert x.label is y.label and x.mechanism == y.mechanism
        for px, py in zip(x.window.pods, y.window.pods, strict=True):
            assert px.signals.keys() == py.signals.keys()
            for k in px.signals:
                np.testing.assert_array_equal(px.signals[k], py.signals[k])
    assert any(x.mechanism != y.mechanism or x.label is not y.label for x, y in zip(a, c, strict=True))


def test_contract_and_truth(jobs: list[ScenarioJob]) -> None:
    assert {j.label for j in jobs} == set(CLASSES)
    for j in jobs:
        assert j.mechanism in MECHANISMS[j.label]
        assert j.margin > 0
        w = j.window
        assert w.pods and w.timestamps.size == 31
        for p in w.pods:
            assert set(p.signals) <= set(SIGNAL_NAMES)
            assert all(v.shape == w.timestamps.shape for v in p.signals.values())


def test_truth_follows_stage_times() -> None:
    gpu = StageTimes(t_gpu=1.0, t_comm=0.5, overlap=0.8, t_cpu=0.6, t_io=0.3, t_mem=0.0, serial_input=False)
    assert truth(gpu)[0].value == "GPU"
    io = StageTimes(t_gpu=1.0, t_comm=0.5, overlap=0.8, t_cpu=0.6, t_io=2.5, t_mem=0.0, serial_input=False)
    assert truth(io)[0].value == "IO"
    # with num_workers=0 the same input work adds to every step: no longer hidden behind the GPU
    serial = StageTimes(t_gpu=1.0, t_comm=0.0, overlap=0.8, t_cpu=0.6, t_io=0.0, t_mem=0.0, serial_input=True)
    assert truth(serial)[0].value == "CPU"
    # copies from pageable memory are synchronous: in series with the kernels they bound the step;
    # the same copies from pinned memory run beside the kernels and cost nothing
    pageable = StageTimes(
        t_gpu=1.0, t_comm=0.1, overlap=0.8, t_cpu=0.3, t_io=0.3, t_mem=0.0, serial_input=False, t_h2d=0.8, pinned=False
    )
    assert truth(pageable)[0] is Bottleneck.INTERCONNECT
    assert truth(replace(pageable, pinned=True))[0] is Bottleneck.GPU


def test_http_streaming_waits_without_iowait(jobs: list[ScenarioJob]) -> None:
    for j in _pick(jobs, "object-store"):
        assert np.nanmax(j.window.pods[0].signals["node_cpu_iowait_frac"]) < 0.005
        if "sc_procs_iowait" in j.window.pods[0].signals:
            assert np.nanmax(j.window.pods[0].signals["sc_procs_iowait"]) == 0
        assert _median(j, "node_net_rx_bps") > _median(j, "node_disk_read_bps")


def test_few_workers_are_pinned_and_object_store_readers_are_not(jobs: list[ScenarioJob]) -> None:
    """A loader of one or two workers keeps each at a full core; streaming readers sleep on sockets,
    and more workers than a quota's cores each get a slice of one."""
    counted = [j for j in jobs if "sc_procs_busy" in j.window.pods[0].signals and not j.partner]
    few = [j for j in counted if j.mechanism == "too-few-workers" and "num-workers-0" not in j.tags]
    streaming = [j for j in counted if "object-store" in j.tags and j.label is Bottleneck.IO]
    throttled = [j for j in counted if j.mechanism == "throttled" and j.label is Bottleneck.CPU]
    assert few and streaming and throttled
    assert np.median([_median(j, "sc_procs_busy") for j in few]) >= 1.0
    assert max(_median(j, "sc_procs_busy") for j in streaming) == 0.0
    assert np.median([_median(j, "sc_procs_busy") for j in throttled]) == 0.0


def test_a_trainer_decoding_its_own_batches_holds_a_core() -> None:
    """With num_workers=0 the training process decodes between its GPU steps and, unless it waits on
    storage, never sleeps: one process at a full core per GPU (tests/data/gpu-workers0: 1.001 cores,
    one busy process)."""
    serial = [
        j for j in generate_family(7, 600, start=START)
        if "num-workers-0" in j.tags and not j.partner and "sc_procs_busy" in j.window.pods[0].signals
        and j.label is Bottleneck.CPU
    ]  # fmt: skip
    assert serial
    for j in serial:
        assert _median(j, "sc_procs_busy") >= j.window.pods[0].gpu_count  # per pod: one per GPU process


def test_memory_mapped_reads_are_major_faults(jobs: list[ScenarioJob]) -> None:
    for j in _pick(jobs, "mmap"):
        if j.mechanism == "mmap":
            assert _median(j, "node_majfault_ps") > 1000
            assert _median(j, "node_cpu_iowait_frac") > 0


def test_gpudirect_shows_symmetric_pcie_and_no_nic_bytes(jobs: list[ScenarioJob]) -> None:
    checked = 0
    for j in _pick(jobs, "gpudirect", "network"):
        if "pcie_rx_bps" not in j.window.pods[0].signals or j.mechanism != "network":
            continue
        rx, tx = _median(j, "pcie_rx_bps"), _median(j, "pcie_tx_bps")
        assert 0.5 < tx / rx <= 1.05  # equal within the exporters' noise where input copies are few
        assert _median(j, "node_net_rx_bps") < 0.05 * rx * j.window.pods[0].gpu_count
        checked += 1
    assert checked


def test_rdma_bytes_show_on_the_adapters_ports_and_ethernet_leaves_them_idle(jobs: list[ScenarioJob]) -> None:
    rdma, ethernet = 0, 0
    for j in jobs:
        if "ib_tx_bps" not in j.window.pods[0].signals or j.mechanism != "network" or j.partner:
            continue
        ib, net = _median(j, "ib_tx_bps"), _median(j, "node_net_tx_bps")
        if "rdma" in j.tags:  # the gradients cross the ports, never the interfaces
            assert ib > 1e8 and net < 0.1 * ib
            rdma += 1
        else:  # adapters beside Ethernet collectives carry only the fabric's management traffic
            assert ib < 1e5 and net > 1e8
            ethernet += 1
    assert rdma and ethernet
    assert any("rdma" in j.tags and "ib_tx_bps" not in j.window.pods[0].signals for j in jobs)  # collector off


def test_capped_boards_hold_their_limit_and_say_why(jobs: list[ScenarioJob]) -> None:
    bound, free = 0, 0
    for j in _pick(jobs, "power-capped"):
        sig = j.window.pods[0].signals
        if "power_limit_w" not in sig or j.partner:
            continue
        spec = spec_for(j.window.pods[0].gpu_model)
        limit = _median(j, "power_limit_w")
        assert limit < spec.tdp_w and np.nanmax(sig["power_w"]) <= limit * 1.1  # the exporters' noise
        draw, slowed = _median(j, "power_w") / limit, np.nanmean(sig["clock_slowdown_frac"])
        if draw > 0.97 and j.mechanism == "compute":  # power-bound: the clock lowered, the cap named
            assert slowed > 0.5 and _median(j, "sm_clock_mhz") < 0.95 * spec.max_clock_mhz
            bound += 1
        elif draw < 0.8:
            assert slowed < 0.05
            free += 1
    assert bound and free


def test_throttled_stragglers_name_their_slowdown(jobs: list[ScenarioJob]) -> None:
    named = [j for j in jobs if j.mechanism == "throttled" and j.label is Bottleneck.GPU and not j.partner]
    named = [j for j in named if "clock_slowdown_frac" in j.window.pods[0].signals]
    assert named
    for j in named:  # the slow GPU's reasons carry a slowdown bit: a share of its pod's GPUs
        assert np.nanmax(j.window.pods[0].signals["clock_slowdown_frac"]) >= 1 / j.window.pods[0].gpu_count - 1e-9


def test_fp32_math_runs_on_the_fp32_pipes(jobs: list[ScenarioJob]) -> None:
    fp32 = [j for j in _pick(jobs, "fp32-math") if "fp32_active" in j.window.pods[0].signals]
    mixed = [j for j in jobs if "fp32-math" not in j.tags and j.mechanism == "compute" and not j.partner]
    mixed = [j for j in mixed if "fp32_active" in j.window.pods[0].signals]
    assert fp32 and mixed
    for j in fp32:
        assert _median(j, "tensor_active") < 0.01
        if j.mechanism == "compute":
            assert _median(j, "fp32_active") > 0.4
    for j in mixed:
        assert _median(j, "fp32_active") < 0.1 < _median(j, "tensor_active")


def test_host_memory_pressure_swaps_in_and_sometimes_kills(jobs: list[ScenarioJob]) -> None:
    counted = [j for j in jobs if "sc_swapin_ps" in j.window.pods[0].signals and not j.partner]
    swapping = [j for j in counted if j.mechanism == "host-memory" and _median(j, "node_swap_used_frac") > 0]
    calm = [j for j in counted if j.label in (Bottleneck.GPU, Bottleneck.IO)]
    assert swapping and calm
    assert min(_median(j, "sc_swapin_ps") for j in swapping) > 100
    assert max(_median(j, "sc_swapin_ps") for j in calm) < 10
    killed = [j for j in _pick(jobs, "oom-kill", alone=False) if "sc_oom_kills" in j.window.pods[0].signals]
    assert killed and all(j.mechanism == "host-memory" for j in killed)
    assert any(np.nanmax(np.concatenate([p.signals["sc_oom_kills"] for p in j.window.pods])) > 0 for j in killed)
    others = [j for j in jobs if "oom-kill" not in j.tags and "sc_oom_kills" in j.window.pods[0].signals]
    assert others and all(np.nanmax(j.window.pods[0].signals["sc_oom_kills"]) == 0 for j in others)


def test_time_sliced_pods_see_the_same_dcgm_values(jobs: list[ScenarioJob]) -> None:
    by_name = {j.name: j for j in jobs}
    sliced = _pick(jobs, "time-sliced", alone=False)
    for j in sliced:
        other = by_name[j.partner or ""]
        a, b = j.window.pods[0], other.window.pods[0]
        assert a.node == b.node and a.co_located_pods >= 1
        for name in ("power_w", "fb_used_frac", "gpu_util"):
            np.testing.assert_array_equal(a.signals[name], b.signals[name])
        np.testing.assert_array_equal(a.signals["node_cpu_busy_frac"], b.signals["node_cpu_busy_frac"])


def test_mig_has_no_gpu_util(jobs: list[ScenarioJob]) -> None:
    for j in _pick(jobs, "mig"):
        assert "gpu_util" not in j.window.pods[0].signals
        assert "fb_used_frac" in j.window.pods[0].signals


def test_launch_bound_runs_small_kernels_part_of_the_time_from_one_core(jobs: list[ScenarioJob]) -> None:
    # as an H200 read a 256-wide MLP in eager mode: GPU_UTIL the kernels' time share, tensor and DRAM
    # idle, one host core busy (tests/data/gpu-launch)
    launch = [j for j in jobs if j.mechanism == "launch-bound" and not j.partner]
    assert launch
    for j in launch:
        assert j.label.value == "GPU"
        assert 0.3 < _median(j, "gpu_util") < 0.95
        signals = j.window.pods[0].signals
        if "gr_engine_active" in signals:
            assert abs(_median(j, "gpu_util") - _median(j, "gr_engine_active")) < 0.1
        if "tensor_active" in signals:
            assert _median(j, "tensor_active") < 0.02 and _median(j, "dram_active") < 0.05
        assert _median(j, "cpu_cores") >= 0.8 * j.window.pods[0].gpu_count


def test_kernels_count_alike_in_gpu_util_and_the_graphics_engine(jobs: list[ScenarioJob]) -> None:
    # a kernel, NCCL's waiting ones included, is graphics-engine time as much as GPU_UTIL time: four real
    # loops read the two within 0.005 (tests/data/gpu-compute, gpu-hbm, gpu-launch, gpu-launch-wide)
    kernel_bound = [
        j for j in jobs
        if j.mechanism in ("compute", "hbm-bandwidth", "network", "nvlink") and not j.partner
        and "gr_engine_active" in j.window.pods[0].signals and "gpu_util" in j.window.pods[0].signals
    ]  # fmt: skip
    assert {j.mechanism for j in kernel_bound} >= {"compute", "network"}
    for j in kernel_bound:
        gap = [np.nanmedian(p.signals["gpu_util"] - p.signals["gr_engine_active"]) for p in j.window.pods]
        assert max(gap) < 0.035, (j.mechanism, gap)


def test_full_framebuffer_in_every_class(jobs: list[ScenarioJob]) -> None:
    for cls in CLASSES:
        assert max(_median(j, "fb_used_frac") for j in jobs if j.label is cls) > 0.9


def test_busy_nvme_is_not_an_io_bottleneck(jobs: list[ScenarioJob]) -> None:
    busy = [j for j in jobs if j.label.value != "IO" and _median(j, "node_disk_busy_frac") > 0.9]
    assert busy, "some jobs that are not IO-bound should keep an NVMe at 100 % io_time"


def test_scrape_interval_is_recorded(jobs: list[ScenarioJob]) -> None:
    assert {j.window.quality.scrape_interval for j in jobs} >= {15.0, 30.0}


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="at least two steps"):
        generate_family(1, 3, start=START, duration=10.0)


def test_hbm_bandwidth_bound_jobs_are_memory_as_the_design_card_says(jobs: list[ScenarioJob]) -> None:
    hbm = [j for j in jobs if j.mechanism == "hbm-bandwidth" and not j.partner]
    assert hbm and "hbm-bandwidth" in MECHANISMS[Bottleneck.MEMORY]
    assert "hbm-bandwidth" not in MECHANISMS[Bottleneck.GPU]
    for j in hbm:
        assert j.label is Bottleneck.MEMORY
        if "dram_active" in j.window.pods[0].signals:
            assert _median(j, "dram_active") > 0.45 and _median(j, "tensor_active") < 0.15
        # bound in the kernels, not by host memory: no memory stalls (major faults may be mmap reads)
        if "node_psi_mem_some" in j.window.pods[0].signals:
            assert _median(j, "node_psi_mem_some") < 0.05


def _link_share(job: ScenarioJob, name: str) -> float:
    return _median(job, name) / spec_for(job.window.pods[0].gpu_model).pcie_bps


def test_host_to_device_bound_jobs_fill_the_link_one_way(jobs: list[ScenarioJob]) -> None:
    h2d = [j for j in jobs if j.mechanism == "host-to-device" and "pcie_rx_bps" in j.window.pods[0].signals]
    assert h2d and all(j.label is Bottleneck.INTERCONNECT for j in h2d)
    others = [j for j in jobs if j.label is Bottleneck.GPU and "pcie_rx_bps" in j.window.pods[0].signals]
    # input copies of GPU-bound jobs move a small share of the link; copy-bound jobs several times it
    assert np.median([_link_share(j, "pcie_rx_bps") for j in h2d]) > 2 * np.median(
        [_link_share(j, "pcie_rx_bps") for j in others]
    )
    for j in h2d:
        # the copies go one way (a collective over PCIe or GPUDirect RDMA beside them adds as much each way)
        assert _link_share(j, "pcie_rx_bps") - _link_share(j, "pcie_tx_bps") > 0.05


def test_cpu_pressure_follows_from_the_cores_not_the_label(jobs: list[ScenarioJob]) -> None:
    """One busy worker per core on a node with cores to spare never waits for a CPU: a loader with too
    few workers shows no pressure beyond its throttling, whatever its class; a saturated loader does."""
    few = [j for j in jobs if j.mechanism == "too-few-workers" and "sc_psi_cpu_some" in j.window.pods[0].signals]
    assert few
    for j in few:
        throttled = _median(j, "cpu_throttled_frac") if "cpu_throttled_frac" in j.window.pods[0].signals else 0.0
        assert _median(j, "sc_psi_cpu_some") <= 0.8 * throttled + 0.08
    saturated = [j for j in jobs if j.mechanism == "saturated" and "sc_psi_cpu_some" in j.window.pods[0].signals]
    assert saturated and np.median([_median(j, "sc_psi_cpu_some") for j in saturated]) > 0.2


def test_a_small_model_on_a_large_gpu_starves_it(jobs: list[ScenarioJob]) -> None:
    """A fifth of the Jobs that a host stage bounds run a model whose kernels take 1-20 ms a step: the
    GPU works a few per cent of the time, as the real H200 loops held back by their input did
    (tests/data/gpu-io, gpu-loader, gpu-memory: 0.2-2 %). A GPU- or collective-bound Job has none."""
    small = [j for j in jobs if "small-model" in j.tags]
    assert {j.label for j in small} >= {Bottleneck.IO, Bottleneck.CPU}
    assert all(j.label in (Bottleneck.IO, Bottleneck.CPU, Bottleneck.MEMORY, Bottleneck.INTERCONNECT) for j in small)
    assert all(j.mechanism in ("host-memory", "host-to-device") for j in small if j.label in (
        Bottleneck.MEMORY, Bottleneck.INTERCONNECT))  # fmt: skip
    host_bound = [j for j in jobs if j.label in (Bottleneck.IO, Bottleneck.CPU)]
    assert 0.1 < len([j for j in host_bound if "small-model" in j.tags]) / len(host_bound) < 0.35
    busy = [_median(j, "gr_engine_active") for j in small if "gr_engine_active" in j.window.pods[0].signals]
    assert busy and np.median(busy) < 0.05
    others = [_median(j, "gr_engine_active") for j in host_bound if "small-model" not in j.tags
              and "gr_engine_active" in j.window.pods[0].signals]  # fmt: skip
    assert np.percentile(others, 10) > 0.1


def test_power_and_clock_follow_the_pipes_as_on_a_real_h200(jobs: list[ScenarioJob]) -> None:
    # bf16 matmuls hold an H200 at 0.99 of its 700 W with the SM clock lowered to 0.75 of 1980 MHz; a
    # starved GPU idles near its floor at its full clock (tests/data/gpu-compute, gpu-io)
    compute, starved = [], []
    for j in jobs:
        if j.partner:  # a time-sliced GPU draws for two
            continue
        spec = spec_for(j.window.pods[0].gpu_model)
        draw, clock = _median(j, "power_w") / spec.tdp_w, _median(j, "sm_clock_mhz") / spec.max_clock_mhz
        assert draw <= 1.0
        if j.mechanism == "compute":
            compute.append(draw)
        elif "small-model" in j.tags:
            starved.append(draw)
            assert clock > 0.96
    assert compute and starved
    assert min(compute) > 0.45 and max(starved) < 0.3
