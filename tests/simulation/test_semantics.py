"""The simulator reads signals as the exporters define them (sources in docs/telemetry.md, "What the signals mean")."""

from __future__ import annotations

import numpy as np
import pytest

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.simulation import SimulatedJob, generate_jobs
from bottleneck_operator_dev.simulation import catalog as cat

START = 1_700_000_000.0


@pytest.fixture(scope="module")
def pool() -> list[SimulatedJob]:
    return generate_jobs(29, 80, start=START, duration=900.0, scrape_interval=15.0, dcgm_fieldset="full")


def _training(job: SimulatedJob, name: str) -> np.ndarray:
    """A signal's samples after start-up (step = the scrape interval), all pods."""
    w = job.to_window(step=job.params.scrape_interval, start=job.start + job.params.env.startup_s + 60)
    return np.concatenate([p.signals[name] for p in w.pods])


def test_dcgm_exporter_repeats_its_last_collection(pool: list[SimulatedJob]) -> None:
    held = [j for j in pool if j.params.env.dcgm_collect_s == 30.0]
    fresh = [j for j in pool if j.params.env.dcgm_collect_s < 15.0]
    assert held and fresh
    for job in held[:5]:
        power = job.state.gpu["power"][0, 0]
        assert np.mean(np.diff(power) == 0.0) > 0.4  # every other scrape repeats the collection
    for job in fresh[:5]:
        assert np.mean(np.diff(job.state.gpu["power"][0, 0]) == 0.0) < 0.05


def test_nvlink_total_is_an_instantaneous_rate(pool: list[SimulatedJob]) -> None:
    job = next(j for j in pool if np.nanmean(_training(j, "nvlink_tx_bps")) > 1e8)
    total = job.state.gpu["nvlink_total"]
    # not a cumulative counter: it falls as often as traffic does
    assert (np.diff(total, axis=-1) < 0).any()
    ratio = np.nanmean(_training(job, "nvlink_total_bps")) / np.nanmean(
        _training(job, "nvlink_tx_bps") + _training(job, "nvlink_rx_bps")
    )
    assert 0.9 < ratio < 1.1
    assert np.all(total * cat.NVLINK_TOTAL_UNIT_BYTES < 2e12)


def test_rdma_collectives_bypass_the_network_stack() -> None:
    jobs = generate_jobs(5, 30, start=START, duration=900.0, classes=[Bottleneck.INTERCONNECT], dcgm_fieldset="full")
    multi = [j for j in jobs if j.params.n_nodes > 1 and j.params.mechanism == "ic-comm"]
    rdma = [j for j in multi if j.params.env.rdma]
    tcp = [j for j in multi if not j.params.env.rdma]
    assert rdma and tcp
    for job in rdma:
        rx, tx = np.nanmedian(_training(job, "pcie_rx_bps")), np.nanmedian(_training(job, "pcie_tx_bps"))
        assert 0.5 < tx / rx <= 1.05  # the NIC reads and writes GPU memory: PCIe both ways
        assert np.nanmedian(_training(job, "node_net_tx_bps")) < 0.2 * tx * job.params.gpus_per_pod
    for job in tcp:  # over TCP the gradients pass the node's interfaces
        assert np.nanmedian(_training(job, "node_net_tx_bps")) > 1e8


def test_nvme_reads_busy_below_its_throughput() -> None:
    jobs = generate_jobs(5, 60, start=START, duration=900.0, classes=[Bottleneck.GPU, Bottleneck.CPU])
    nvme = [j for j in jobs if j.params.storage.startswith("nvme")]
    assert nvme
    busy = [j for j in nvme if np.nanmedian(_training(j, "node_disk_busy_frac")) > 0.7]
    assert busy, "NVMe drives read mostly busy"
    for job in busy:  # the node's reads include a noisy neighbour's, which may fill the drive itself
        own = np.nanmedian(_training(job, "node_disk_read_bps")) - job.params.env.neighbour_disk_bps
        assert own < 0.8 * job.params.storage_cap_bps


def test_http_readers_leave_no_iowait() -> None:
    jobs = generate_jobs(9, 60, start=START, duration=900.0, classes=[Bottleneck.IO], scrape_interval=30.0)
    http = [j for j in jobs if j.params.storage == "object-http" and j.params.env.neighbour_io_wait == 0.0]
    nfs = [j for j in jobs if j.params.storage == "nfs" and j.params.env.neighbour_io_wait == 0.0]
    assert http and nfs
    for job in http:
        assert np.nanmedian(_training(job, "node_net_rx_bps")) > 1e7
        assert np.nanmean(_training(job, "node_cpu_iowait_frac")) < 0.005
        if job.params.env.sidecar:
            assert np.nanmax(_training(job, "sc_procs_iowait")) == 0.0
    assert max(np.nanmean(_training(j, "node_cpu_iowait_frac")) for j in nfs) > 0.01


def _busy_counted(jobs: list[SimulatedJob]) -> list[SimulatedJob]:
    """The jobs whose collector reports its busy processes."""
    return [j for j in jobs if j.params.env.sidecar and "sc_procs_busy" in j.to_window(step=30.0).pods[0].signals]


def test_too_few_workers_are_pinned_at_a_core_and_http_readers_are_not() -> None:
    jobs = generate_jobs(13, 60, start=START, duration=900.0, classes=[Bottleneck.CPU, Bottleneck.IO])
    counted = _busy_counted(jobs)
    few = [j for j in counted if j.mechanism is Mechanism.TOO_FEW_WORKERS]
    http = [j for j in counted if j.params.storage == "object-http" and j.label is Bottleneck.IO]
    assert few and http
    assert np.median([np.nanmedian(_training(j, "sc_procs_busy")) for j in few]) >= 1.0
    assert np.median([np.nanmedian(_training(j, "sc_procs_busy")) for j in http]) == 0.0


def test_launch_bound_gpus_run_small_kernels_part_of_the_time() -> None:
    jobs = generate_jobs(13, 30, start=START, duration=900.0, classes=[Bottleneck.GPU], dcgm_fieldset="full")
    jobs = [j for j in jobs if not j.params.env.prof_missing]  # T4/L4/A10G may lack SM activity
    launch = [j for j in jobs if j.params.mechanism == "gpu-launch"]
    compute = [j for j in jobs if j.params.mechanism == "gpu"]
    assert launch and compute
    for job in launch:
        # GPU_UTIL reads the kernels' time share, as the graphics engine does (0.30-0.85 of the step,
        # knobs.KERNEL_DUTY); the kernels keep neither the tensor pipes nor HBM busy (an H200: 0.49,
        # 0.48 and 0.0; tests/data/gpu-launch)
        util, gr, sm = (np.nanmedian(_training(job, s)) for s in ("gpu_util", "gr_engine_active", "sm_active"))
        tensor, dram = (np.nanmedian(_training(job, s)) for s in ("tensor_active", "dram_active"))
        assert 0.2 < util < 0.95 and abs(util - gr) < 0.1 and sm <= 0.6 * gr + 0.02
        assert tensor < 0.03 and dram < 0.06
    for job in compute:
        assert np.nanmedian(_training(job, "sm_active")) > 0.5


def test_memory_mapped_datasets_fault_without_pressure() -> None:
    jobs = generate_jobs(21, 40, start=START, duration=900.0, classes=[Bottleneck.IO, Bottleneck.GPU])
    mapped = [j for j in jobs if j.params.env.mmap_dataset and j.params.env.node_psi]
    assert mapped
    # Faults follow the read rate: a job that reads few bytes (tokenised text) faults little, so most,
    # not all, mapped jobs stand out above the node's background of ~10 faults/s.
    faulting = [np.nanmedian(_training(job, "node_majfault_ps")) > 20 for job in mapped]
    assert sum(faulting) >= 0.8 * len(mapped)
    for job in mapped:
        assert np.nanmean(_training(job, "node_psi_mem_some")) < 0.05


def test_cpu_pressure_needs_more_runnable_work_than_cores() -> None:
    jobs = generate_jobs(17, 120, start=START, duration=900.0, classes=[Bottleneck.CPU])
    saturated = [
        j for j in jobs if j.mechanism is Mechanism.SATURATED and j.params.env.node_psi and j.params.n_pods == 1
    ]
    assert saturated
    # A busy node is not enough (tests/data/gpu-saturated: 14.6 of 16 cores busy, pressure 0.006):
    # a node busy below 0.9 reads no pressure, and pressure grows with how far the node is full.
    busy = np.array([np.nanmean(_training(j, "node_cpu_busy_frac")) for j in saturated])
    psi = np.array([np.nanmean(_training(j, "node_psi_cpu_some")) for j in saturated])
    assert (busy < 0.9).any() and (psi[busy < 0.9] < 0.05).all()
    assert (busy > 0.98).any() and np.median(psi[busy > 0.98]) > 0.2
    # the workers of a saturated loader keep their cores: some process sits at a full core
    counted = _busy_counted(saturated)
    assert counted and np.median([np.nanmedian(_training(j, "sc_procs_busy")) for j in counted]) >= 1.0


def test_the_trainer_spins_while_its_gpu_runs_and_sleeps_while_it_waits() -> None:
    jobs = generate_jobs(23, 80, start=START, duration=900.0, classes=[Bottleneck.GPU, Bottleneck.IO])
    counted = _busy_counted(jobs)
    compute = [j for j in counted if j.mechanism is Mechanism.COMPUTE]
    starved = [j for j in counted if j.label is Bottleneck.IO and np.nanmedian(_training(j, "gpu_util")) < 0.3]
    assert compute and starved
    # a GPU-bound trainer is a process at a full core, every one of them (six recorded loops with a busy
    # device held 1.00 core each: tests/data/gpu-compute, gpu-hbm, gpu-launch, gpu-h2d, ...)
    per_gpu = [np.nanmedian(_training(j, "sc_procs_busy")) / j.params.gpus_per_pod for j in compute]
    assert min(per_gpu) >= 1.0
    # one whose GPU waits for input sleeps on the loader's queue (gpu-objectstore: no busy process)
    assert np.median([np.nanmedian(_training(j, "sc_procs_busy")) for j in starved]) == 0.0


def test_kernels_count_alike_in_gpu_util_and_the_graphics_engine(pool: list[SimulatedJob]) -> None:
    """A kernel, NCCL's waiting ones included, is graphics-engine time as much as GPU_UTIL time: four real
    loops read the two within 0.005 (tests/data/gpu-compute, gpu-hbm, gpu-launch, gpu-launch-wide)."""
    kernel_bound = [j for j in pool if Bottleneck(j.params.label) in (Bottleneck.GPU, Bottleneck.INTERCONNECT)]
    kernel_bound = [j for j in kernel_bound if j.params.mechanism.startswith(("gpu", "ic-comm"))]
    assert len(kernel_bound) >= 10
    for job in kernel_bound:
        util, engine = job.state.gpu["gpu_util"] / 100.0, job.state.gpu["gr_engine_active"]
        busy = engine > 0.3
        assert np.median(util[busy] - engine[busy]) < 0.035, job.params.mechanism


def test_power_and_clock_follow_the_pipes_as_on_a_real_h200(pool: list[SimulatedJob]) -> None:
    """Math-bound kernels draw a GPU to its limit and the clock falls to hold it there; a GPU waiting for
    its input idles near its floor at its full clock, its context held (an H200: 0.99 of 700 W at 0.75
    of 1980 MHz under bf16 matmuls, 0.18 idle at 1980 MHz; tests/data/gpu-compute, gpu-io). Power
    management moves the clock a little on every board: only far below its maximum is a clock held."""
    compute, starved, wandering = [], [], 0
    for job in pool:
        kind = cat.GPU_KINDS[job.params.gpu]
        limit = kind.tdp_w * job.params.env.power_cap
        power, clock = job.state.gpu["power"], job.state.gpu["sm_clock"]
        assert power.max() <= limit
        held = clock < 0.95 * kind.boost_mhz
        assert np.all(power[held] > 0.95 * limit)  # lowered far only at the limit
        assert np.all(job.state.gpu["clock_reasons"][held].astype(int) & 0x4)  # and NVML says why
        draw = float(np.nanmedian(_training(job, "power_w"))) / kind.tdp_w
        if np.isnan(draw):  # power not exported for this job
            continue
        if job.params.mechanism == "gpu" and job.params.env.power_cap == 1.0:
            compute.append(draw)
        elif np.nanmedian(_training(job, "gpu_util")) < 0.1:
            starved.append(draw)
            clock_now = np.nanmedian(_training(job, "sm_clock_mhz"))
            assert clock_now >= 0.95 * kind.boost_mhz
            wandering += clock_now < kind.boost_mhz - 15
    assert compute and starved and wandering
    assert min(compute) > 0.45 and max(starved) < 0.3


def _extras_pool() -> list[SimulatedJob]:
    return generate_jobs(37, 150, start=START, duration=900.0, scrape_interval=30.0, dcgm_fieldset="full")


def test_capped_boards_hold_their_limit_and_say_why() -> None:
    """A board capped below its default limit draws no more than the cap: a job that asks for more runs at
    a lowered clock with the power-cap reason set; one that asks for less keeps its clock."""
    jobs = [j for j in _extras_pool() if j.params.env.power_cap < 1.0 and j.params.env.dcgm_power_clocks]
    bound, free = [], []
    for job in jobs:
        kind = cat.GPU_KINDS[job.params.gpu]
        limit = float(np.nanmedian(_training(job, "power_limit_w")))
        assert limit == pytest.approx(kind.tdp_w * job.params.env.power_cap)
        assert np.nanmax(_training(job, "power_w")) <= limit
        slowed = float(np.nanmean(_training(job, "clock_slowdown_frac")))
        clock = float(np.nanmedian(_training(job, "sm_clock_mhz"))) / kind.boost_mhz
        draw = np.nanmedian(_training(job, "power_w")) / limit
        if draw > 0.95:
            bound.append((slowed, clock))
        elif draw < 0.8:
            free.append((slowed, clock))
    assert bound and free
    assert all(slowed > 0.5 and clock < 0.95 for slowed, clock in bound)
    assert all(slowed < 0.05 and clock > 0.95 for slowed, clock in free)


def test_fp32_math_runs_on_the_fp32_pipes_not_the_tensor_pipes() -> None:
    """fp32 products with TF32 off: FP32 pipes 0.76 active, tensor 0.0 (an H200, tests/data/gpu-compute-fp32)."""
    pool = generate_jobs(43, 150, start=START, duration=1200.0, classes=[Bottleneck.GPU], dcgm_fieldset="full")
    jobs = [j for j in pool if j.params.env.dcgm_pipes and not j.params.env.prof_missing]
    fp32 = [j for j in jobs if j.params.env.fp32_math and j.mechanism is Mechanism.COMPUTE]
    mixed = [j for j in jobs if not j.params.env.fp32_math and j.mechanism is Mechanism.COMPUTE]
    assert fp32 and mixed
    for job in fp32:
        sm = np.nanmedian(_training(job, "sm_active"))
        assert np.nanmedian(_training(job, "fp32_active")) > 0.6 * sm
        assert np.nanmax(_training(job, "tensor_active")) < 0.01
    for job in mixed:
        assert np.nanmedian(_training(job, "fp32_active")) < 0.1
        assert np.nanmedian(_training(job, "tensor_active")) > np.nanmedian(_training(job, "fp32_active"))
    fp16 = [np.nanmax(_training(j, "fp16_active")) for j in jobs]
    assert min(fp16) == 0.0 and max(fp16) < 0.1  # bf16 math leaves the FP16 pipes idle


def test_rdma_traffic_shows_on_the_adapters_ports() -> None:
    """Collectives over RDMA move their bytes through the InfiniBand/RoCE ports and not the interfaces;
    adapters beside Ethernet collectives idle (management traffic only)."""
    jobs = generate_jobs(5, 60, start=START, duration=900.0, classes=[Bottleneck.INTERCONNECT], dcgm_fieldset="full")
    counted = [j for j in jobs if j.params.env.ib_ports and j.params.n_nodes > 1 and j.params.mechanism == "ic-comm"]
    rdma = [j for j in counted if j.params.env.rdma]
    tcp = [j for j in counted if not j.params.env.rdma]
    assert rdma and tcp
    for job in rdma:
        ib = np.nanmedian(_training(job, "ib_tx_bps"))
        # the interfaces carry the neighbours' traffic and checkpoints, never the gradients
        others = 0.3 * job.params.env.neighbour_net_bps + 1e6
        assert ib > 1e8 and np.nanmedian(_training(job, "node_net_tx_bps")) < 0.1 * ib + others
        assert 0.8 < np.nanmedian(_training(job, "ib_rx_bps")) / ib < 1.25
    for job in tcp:
        assert np.nanmedian(_training(job, "ib_tx_bps")) < 1e5 * job.params.env.ib_ports
    assert any(not j.params.env.ib_ports for j in jobs if j.params.env.rdma)  # no collector: no family


def test_host_memory_pressure_swaps_in_and_sometimes_kills() -> None:
    jobs = generate_jobs(41, 120, start=START, duration=900.0, classes=[Bottleneck.MEMORY, Bottleneck.GPU])
    counted = [j for j in jobs if j.params.env.sidecar and j.params.env.swapins_counted]
    swapping = [j for j in counted if j.params.mechanism == "mem-host" and j.params.env.swap_bytes > 0]
    others = [j for j in counted if j.params.mechanism != "mem-host"]
    assert swapping and others
    assert min(np.nanmedian(_training(j, "sc_swapin_ps")) for j in swapping) > 100
    assert max(np.nanmedian(_training(j, "sc_swapin_ps")) for j in others) < 10
    killed = [j for j in jobs if j.params.env.sidecar and j.params.env.oom_kills]
    assert killed and all(j.params.mechanism == "mem-host" and j.params.env.mem_limit_bytes for j in killed)
    for job in killed:
        assert np.nanmax(job.to_window(step=30.0).pods[0].signals["sc_oom_kills"]) > 0 or job.params.n_pods > 1
    calm = [j for j in jobs if j.params.env.sidecar and not j.params.env.oom_kills]
    assert all(np.nanmax(np.concatenate([p.signals["sc_oom_kills"] for p in j.to_window().pods])) == 0 for j in calm)
