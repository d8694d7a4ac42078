"""Feature extraction: schema, missing families, capacity normalisation, pod aggregation."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from bottleneck_operator.analysis.features.derived import STAGED_COPY_BPS
from bottleneck_operator.analysis.features.extract import (
    FEATURE_INDEX,
    FEATURE_NAMES,
    N_FEATURES,
    extract_features,
    feature_schema_hash,
    value,
)
from bottleneck_operator.analysis.features.hardware import spec_for
from bottleneck_operator.analysis.features.implausible import drop_dcgm_repeats, util_in_phase
from bottleneck_operator.analysis.features.phases import segment_phases
from bottleneck_operator.contract.signals import SIGNAL_NAMES, Family, signals_of
from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator.contract.window import JobWindow

from .synth import GB, make_window


def test_schema_is_stable_and_unique() -> None:
    assert len(set(FEATURE_NAMES)) == N_FEATURES
    assert len(feature_schema_hash()) == 16
    assert FEATURE_INDEX["act.mean"] == 0


def test_one_row_per_window_and_empty_window_is_nan() -> None:
    empty = JobWindow("ml", "none", 0.0, 600.0, 30.0, np.empty(0), ())
    x = extract_features([make_window(Bottleneck.GPU), empty, make_window(Bottleneck.IO, pods=3)])
    assert x.shape == (3, N_FEATURES)
    assert np.isnan(x[1]).all()
    assert not np.isnan(x[0]).all() and not np.isnan(x[2]).all()


def test_missing_families_give_nan_not_errors() -> None:
    full = extract_features([make_window(Bottleneck.CPU)])[0]
    dev_only = extract_features(
        [
            make_window(
                Bottleneck.CPU, drop=[Family.DCGM_PROF, Family.DCGM_PROF_SM, Family.DCGM_PROF_NVLINK, Family.SIDECAR]
            )
        ]
    )[0]
    assert value(full, "sm_active.mean") is not None
    assert value(dev_only, "sm_active.mean") is None
    assert value(dev_only, "tensor_active.mean") is None
    assert value(dev_only, "sc_psi_cpu_some.mean") is None
    # the best-activity series falls back to GPU_UTIL when no PROF field exists
    assert value(dev_only, "act.mean") is not None
    assert abs(value(dev_only, "act.mean") - 0.4) < 0.05  # type: ignore[operator]
    assert abs(value(full, "act.mean") - 0.33) < 0.05  # type: ignore[operator]


def test_pcie_is_a_fraction_of_the_gpus_link() -> None:
    w = make_window(Bottleneck.INTERCONNECT, noise=0.0)
    x = extract_features([w])[0]
    # 3 GB/s host-to-device on an A100 (PCIe Gen4 x16, 31.5 GB/s per direction)
    assert abs(value(x, "pcie_rx_frac.mean") - 3 * GB / 31.5e9) < 1e-6  # type: ignore[operator]
    slower = make_window(Bottleneck.INTERCONNECT, noise=0.0, gpu_model="Tesla V100-SXM2-32GB")
    xv = extract_features([slower])[0]
    assert value(xv, "pcie_rx_frac.mean") > value(x, "pcie_rx_frac.mean")  # type: ignore[operator]


def test_util_gap_and_quantiles() -> None:
    x = extract_features([make_window(Bottleneck.INTERCONNECT, noise=0.0)])[0]
    # GPU_UTIL less the copy engines' time (one-way bytes at 0.9 of the link), less SM activity
    one_way = value(x, "pcie_rx_frac.mean") - value(x, "pcie_tx_frac.mean")  # type: ignore[operator]
    assert one_way > 0.05
    assert abs(value(x, "util_gap.mean") - (0.97 - one_way / 0.9 - 0.35)) < 1e-9  # type: ignore[operator]
    w = make_window(Bottleneck.GPU, noise=0.0)
    ramp = np.linspace(1.0, 0.0, 30)  # falling: a rising ramp's first half would read as start-up
    w.pods[0].signals["gr_engine_active"][:] = ramp  # type: ignore[index]
    x = extract_features([w])[0]
    # GPU activity reads GR_ENGINE_ACTIVE first
    p10, p50, p90 = (value(x, f"act.{q}") for q in ("p10", "p50", "p90"))
    assert p10 < p50 < p90  # type: ignore[operator]
    assert abs(value(x, "act_low_share") - np.mean(ramp < 0.3)) < 1e-9  # type: ignore[operator]


def test_context_series_carry_the_statistics_that_are_read() -> None:
    """A series the classifier never splits on enters the row with its mean (over the training-loop
    samples, as every statistic), the PCIe shares also with their p90 (read by the evidence)."""
    assert "gr_engine_active.mean" in FEATURE_INDEX and "gr_engine_active.p10" not in FEATURE_INDEX
    assert "pcie_rx_frac.p90" in FEATURE_INDEX and "pcie_rx_frac.cv" not in FEATURE_INDEX
    assert "act.p10" in FEATURE_INDEX and "act.cv" in FEATURE_INDEX
    w = make_window(Bottleneck.GPU, noise=0.0)
    ramp = np.linspace(0.2, 1.0, 30)
    w.pods[0].signals["gpu_util"][:] = ramp  # type: ignore[index]
    w.pods[0].signals["gpu_util"][::3] = np.nan  # type: ignore[index]
    w.pods[0].signals["gr_engine_active"][:] = 0.2  # type: ignore[index]  # at or below GPU_UTIL: in phase
    x = extract_features([w])[0]
    assert abs(value(x, "gpu_util.mean") - np.nanmean(w.pods[0].signals["gpu_util"])) < 1e-12  # type: ignore[operator]


def test_samples_lost_are_ignored() -> None:
    w = make_window(Bottleneck.GPU, noise=0.0)
    w.pods[0].signals["gpu_util"][::2] = np.nan  # type: ignore[index]
    x = extract_features([w])[0]
    assert abs(value(x, "gpu_util.mean") - 0.99) < 1e-9  # type: ignore[operator]


def test_pod_spread_shows_a_straggler() -> None:
    w = make_window(Bottleneck.GPU, pods=3, noise=0.0)
    # Busy fractions come from GR_ENGINE_ACTIVE (time busy), not SM_ACTIVE (which also measures fill).
    w.pods[2].signals["gr_engine_active"][:] = 0.2  # type: ignore[index]
    x = extract_features([w])[0]
    assert abs(value(x, "act.mean.podmax") - 0.95) < 1e-9  # type: ignore[operator]
    assert abs(value(x, "act.mean.podmin") - 0.2) < 1e-9  # type: ignore[operator]
    assert abs(value(x, "act_pod_spread") - 0.75) < 1e-9  # type: ignore[operator]
    assert value(x, "n_pods") == 3


def test_batch_equals_one_by_one() -> None:
    ws = [make_window(c, seed=i, pods=1 + i % 3) for i, c in enumerate(Bottleneck) if c is not Bottleneck.UNKNOWN]
    batch = extract_features(ws)
    single = np.vstack([extract_features([w]) for w in ws])
    np.testing.assert_allclose(batch, single, equal_nan=True)


def test_ragged_series_are_copied_as_far_as_they_go() -> None:
    w = make_window(Bottleneck.GPU, noise=0.0)
    signals = dict(w.pods[0].signals)
    signals["gpu_util"] = signals["gpu_util"][:10]  # a series shorter than its window
    ragged = replace(w, pods=(replace(w.pods[0], signals=signals),))
    x = extract_features([ragged, make_window(Bottleneck.IO, noise=0.0)])
    assert abs(value(x[0], "gpu_util.mean") - 0.99) < 1e-9  # type: ignore[operator]
    assert abs(value(x[1], "node_psi_io_some.mean") - 0.6) < 1e-9  # type: ignore[operator]


def test_mixed_lengths_and_unknown_signals_leave_no_stale_values() -> None:
    # Windows of several lengths in one batch, a pod with a signal outside the catalogue and a pod
    # without some families: every value missing from a pod must come out NaN, never a leftover.
    short = make_window(Bottleneck.CPU, samples=12, noise=0.0)
    long = make_window(Bottleneck.IO, samples=30, noise=0.0)
    odd_signals = {**long.pods[0].signals, "not_a_signal": np.ones(30)}
    odd = replace(long, pods=(replace(long.pods[0], signals=odd_signals),))
    sparse = make_window(Bottleneck.GPU, samples=20, noise=0.0, drop=[Family.NODE_PSI, Family.SIDECAR])
    batch = [short, long, odd, sparse]
    x = extract_features(batch)
    single = np.vstack([extract_features([w]) for w in batch])
    # atol: the variance of a constant series is a difference of near-equal sums (~1e-8 of rounding)
    np.testing.assert_allclose(x, single, atol=1e-6, equal_nan=True)
    np.testing.assert_allclose(x[1], x[2], atol=1e-6, equal_nan=True)  # the unknown signal is ignored
    assert value(x[3], "node_psi_io_some.mean") is None
    assert value(x[3], "sc_psi_io_some.mean") is None


def test_iowait_is_measured_against_the_cpu_time_left_idle() -> None:
    w = make_window(Bottleneck.IO, noise=0.0)
    n = len(w.timestamps)
    signals = {**w.pods[0].signals, "node_cpu_busy_frac": np.full(n, 0.9), "node_cpu_iowait_frac": np.full(n, 0.06)}
    busy_node = replace(w, pods=(replace(w.pods[0], signals=signals),))
    signals = {**signals, "node_cpu_busy_frac": np.full(n, 0.2)}
    idle_node = replace(w, pods=(replace(w.pods[0], signals=signals),))
    x = extract_features([busy_node, idle_node])
    # 6 % iowait is most of a 90 %-busy node's idle time, and little of a 20 %-busy node's
    assert abs(value(x[0], "iowait_of_idle.mean") - 0.6) < 1e-9  # type: ignore[operator]
    assert abs(value(x[1], "iowait_of_idle.mean") - 0.075) < 1e-9  # type: ignore[operator]


def test_strided_and_integer_series_are_read_by_value() -> None:
    w = make_window(Bottleneck.CPU, noise=0.0)
    n = len(w.timestamps)
    signals = dict(w.pods[0].signals)
    signals["gpu_util"] = np.repeat(signals["gpu_util"], 2)[::2]  # a strided view, not a contiguous buffer
    signals["node_cpus"] = np.full(n, 64, dtype=np.int64)  # an integer gauge
    odd = replace(w, pods=(replace(w.pods[0], signals=signals),))
    as_float = {**signals, "gpu_util": signals["gpu_util"].copy(), "node_cpus": np.full(n, 64.0)}
    plain = replace(w, pods=(replace(w.pods[0], signals=as_float),))
    x = extract_features([odd, plain])
    np.testing.assert_allclose(x[0], x[1], atol=1e-9, equal_nan=True)
    assert value(x[0], "cpu_node_frac.mean") is not None


def test_busy_time_is_not_spatial_fill() -> None:
    """Small kernels: GPU_UTIL and GR_ENGINE_ACTIVE high, SM_ACTIVE low; the GPU is busy, not idle."""
    w = make_window(Bottleneck.GPU, noise=0.0)
    w.pods[0].signals["sm_active"][:] = 0.15  # type: ignore[index]
    x = extract_features([w])[0]
    assert abs(value(x, "act.mean") - 0.95) < 1e-9  # type: ignore[operator]
    assert abs(value(x, "sm_fill.mean") - 0.15 / 0.95) < 1e-9  # type: ignore[operator]
    assert abs(value(x, "util_gr_gap.mean") - (0.99 - 0.95)) < 1e-9  # type: ignore[operator]


def test_repeated_dcgm_samples_count_once() -> None:
    """A 30 s dcgm-exporter collection scraped every 15 s: each collection counts once, host samples all."""
    gpu = [n for f in Family if f.value.startswith("dcgm") for n in signals_of(f)]
    doubled = make_window(Bottleneck.IO, seed=4)
    once = make_window(Bottleneck.IO, seed=4)
    for a, b in zip(doubled.pods, once.pods, strict=True):
        for name in gpu:
            if name in a.signals:
                held = np.repeat(np.asarray(a.signals[name])[::2], 2)[: len(a.signals[name])]
                a.signals[name][:] = held  # type: ignore[index]
                b.signals[name][:] = np.where(np.arange(len(held)) % 2 == 1, np.nan, held)  # type: ignore[index]
    np.testing.assert_allclose(extract_features([doubled]), extract_features([once]), equal_nan=True)
    # GPU_UTIL held at 100 % while power moves is a busy GPU, not a repeat: every sample stays.
    raw = np.full((1, len(SIGNAL_NAMES), 6), np.nan)
    raw[0, SIGNAL_NAMES.index("gpu_util")] = 1.0
    raw[0, SIGNAL_NAMES.index("fb_used_frac")] = 0.98
    raw[0, SIGNAL_NAMES.index("power_w")] = [300.0, 300.0, 310.5, 290.25, 290.25, 305.0]
    kept = ~np.isnan(drop_dcgm_repeats(raw)[0, SIGNAL_NAMES.index("gpu_util")])
    assert kept.tolist() == [True, False, True, True, False, True]


def _with(w: JobWindow, **series: object) -> JobWindow:
    """The window with some of its first pod's signals replaced (scalars fill the whole window)."""
    n = len(w.timestamps)
    signals = dict(w.pods[0].signals)
    for name, v in series.items():
        signals[name] = np.asarray(v, dtype=np.float64) if np.ndim(v) else np.full(n, float(v))  # type: ignore[arg-type]
    return replace(w, pods=(replace(w.pods[0], signals=signals),))


def test_gpu_util_read_out_of_phase_is_the_engines_time_plus_copies() -> None:
    util = np.array([[0.0, 0.93, 0.0, 0.73], [0.5, 0.52, 0.49, 0.5]])
    gr = np.array([[0.34, 0.25, 0.17, 0.34], [0.48, 0.5, 0.49, 0.5]])
    copying = np.array([[0.01, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    fixed = util_in_phase(util, gr, copying)
    # the first pod reads GPU_UTIL below the engine: every sample of it becomes engine plus copies
    np.testing.assert_allclose(fixed[0], [0.35, 0.25, 0.17, 0.34])
    # the second reads them in phase (within rounding): left as read, as is a pod without the engine
    np.testing.assert_array_equal(fixed[1], util[1])
    no_engine = np.full_like(gr, np.nan)
    assert util_in_phase(util, no_engine, copying) is util
    # one sample below the engine in ten is exporter noise, not a reading out of phase
    noisy = np.full((1, 10), 0.6)
    engine = np.full((1, 10), 0.6)
    engine[0, 3] = 0.75
    assert util_in_phase(noisy, engine, np.zeros((1, 10))) is noisy


def test_a_loop_faster_than_the_readings_is_no_collective_gap() -> None:
    """A loop alternating faster than NVML's utilisation window reads GPU_UTIL as 0 or 1 at random
    beside steady profiling fields (tests/data/gpu-*-busy): no GPU_UTIL-SM gap, which would read as
    NCCL kernels waiting."""
    w = make_window(Bottleneck.CPU, noise=0.0)
    n = len(w.timestamps)
    flips = np.where(np.arange(n) % 3 == 0, 0.0, 0.93)
    aliased = _with(w, gpu_util=flips, gr_engine_active=0.3, sm_active=0.25, power_w=np.linspace(300.0, 310.0, n))
    x = extract_features([aliased])[0]
    assert abs(value(x, "util_gap.mean") - 0.05) < 0.02  # type: ignore[operator]
    assert abs(value(x, "util_gr_gap.mean")) < 0.02  # type: ignore[operator]


def test_idle_phases_with_quiet_inputs_are_left_out() -> None:
    """A checkpoint (GPU idle, no input moving) leaves the busy fractions; a stall (input busy) stays."""
    w = make_window(Bottleneck.GPU, noise=0.0)
    n = len(w.timestamps)
    w = _with(w, power_w=np.linspace(300.0, 310.0, n))  # power moves: no sample is a dcgm-exporter repeat
    pause = np.zeros(n, dtype=bool)
    pause[10:14] = True
    idle = np.where(pause, 0.0, 0.95)
    quiet = {name: np.where(pause, 0.0, w.pods[0].signals[name]) for name in ("pcie_rx_bps", "node_net_rx_bps")}
    reads = {name: np.where(pause, 0.0, w.pods[0].signals[name]) for name in ("node_disk_read_bps", "fs_read_bps")}
    checkpoint = _with(w, gr_engine_active=idle, sc_io_read_bps=0.0, **quiet, **reads)
    x = extract_features([checkpoint])[0]
    assert abs(value(x, "act.mean") - 0.95) < 1e-9  # type: ignore[operator]
    # the same dips with the reads still flowing are the job waiting on its input: they count
    stall = _with(w, gr_engine_active=idle)
    xs = extract_features([stall])[0]
    assert abs(value(xs, "act.mean") - 0.95 * (n - 4) / n) < 1e-9  # type: ignore[operator]


def test_start_up_before_the_gpu_first_works_is_left_out() -> None:
    """Start-up staging the dataset (GPU idle, network busy) is not an input-bound loop; the same idle
    samples after the loop has begun are a stall and count, and a GPU that never works keeps them all."""
    w = make_window(Bottleneck.GPU, noise=0.0)
    n = len(w.timestamps)
    w = _with(w, power_w=np.linspace(300.0, 310.0, n))
    first = np.arange(n) < 6
    staging = _with(w, gr_engine_active=np.where(first, 0.02, 0.95))  # the network keeps flowing meanwhile
    assert abs(value(extract_features([staging])[0], "act.mean") - 0.95) < 1e-9  # type: ignore[operator]
    late = _with(w, gr_engine_active=np.where(first[::-1], 0.02, 0.95))
    assert abs(value(extract_features([late])[0], "act.mean") - (0.95 * (n - 6) + 0.02 * 6) / n) < 1e-9  # type: ignore[operator]
    starved = _with(w, gr_engine_active=np.where(first, 0.02, 0.1))  # never reaches IDLE_ACT
    assert abs(value(extract_features([starved])[0], "act.mean") - (0.02 * 6 + 0.1 * (n - 6)) / n) < 1e-9  # type: ignore[operator]


def test_cpu_saturation_is_the_jobs_own_not_the_nodes() -> None:
    """Neighbours keeping a node busy do not make a job that uses little CPU look saturated."""
    w = make_window(Bottleneck.GPU, noise=0.0)
    alone = _with(w, cpu_cores=2.0, sc_cpu_cores=2.0, cpu_limit_cores=np.nan, node_cpus=32.0, node_cpu_busy_frac=0.1)
    crowded = _with(alone, node_cpu_busy_frac=0.99, node_psi_cpu_some=0.8)
    capped = _with(alone, cpu_limit_cores=2.0)
    x = extract_features([alone, crowded, capped])
    # 2 cores of 2 + 32 x 0.9 free; of 2 + 1 when neighbours hold the rest (the scheduler still gives
    # the job a share of one core); of a 2-core limit
    assert abs(value(x[0], "cpu_own_sat.mean") - 2.0 / (2.0 + 32 * 0.9)) < 1e-9  # type: ignore[operator]
    assert abs(value(x[1], "cpu_own_sat.mean") - 2.0 / (2.0 + 1.0)) < 1e-9  # type: ignore[operator]
    assert abs(value(x[2], "cpu_own_sat.mean") - 1.0) < 1e-9  # type: ignore[operator]
    assert value(x[0], "cpu_node_frac.mean") == value(x[1], "cpu_node_frac.mean")


def test_gpu_saturation_reads_any_pipe_and_launch_gaps_need_quiet_links() -> None:
    w = make_window(Bottleneck.GPU, noise=0.0)
    hbm = _with(w, tensor_active=0.1, dram_active=0.72, sm_active=0.5)
    launch = _with(w, gpu_util=0.5, gr_engine_active=0.48, sm_active=0.2, tensor_active=0.0, dram_active=0.0)
    launch = _with(launch, pcie_rx_bps=0.1 * GB, pcie_tx_bps=0.1 * GB)
    launch = _with(launch, nvlink_tx_bps=0.0, nvlink_rx_bps=0.0, nvlink_total_bps=0.0)
    nccl = _with(launch, nvlink_tx_bps=100 * GB, nvlink_rx_bps=100 * GB)
    # kernels of a compute-bound model beside input waits: their pipes are busy while they run
    waiting = _with(launch, tensor_active=0.2, dram_active=0.1)
    x = extract_features([hbm, launch, nccl, waiting])
    assert abs(value(x[0], "gpu_any_pipe.mean") - 0.9) < 1e-9  # type: ignore[operator]
    assert abs(value(x[1], "launch_gap.mean") - 0.48) < 1e-9  # type: ignore[operator]
    assert value(x[2], "launch_gap.mean") == 0.0
    assert value(x[2], "link_busy.mean") > 0.3  # type: ignore[operator]
    assert value(x[3], "launch_gap.mean") == 0.0


def test_gpu_util_counts_copy_engine_time() -> None:
    """Pinned copies streaming at the link's rate read 0.99 on GPU_UTIL with the SMs idle (an H200,
    tests/data/gpu-h2d-pinned): without the graphics engine's figure, that time is copies, not kernels."""
    w = make_window(Bottleneck.INTERCONNECT, noise=0.0)
    w = _with(w, nvlink_tx_bps=0.0, nvlink_rx_bps=0.0, nvlink_total_bps=0.0, tensor_active=0.0, dram_active=0.0)
    pinned = _with(w, gpu_util=0.99, gr_engine_active=0.003, sm_active=0.003)
    pinned = _with(pinned, pcie_rx_bps=0.9 * 31.5e9, pcie_tx_bps=0.02 * 31.5e9)
    dev_only = _with(pinned, gr_engine_active=float("nan"), sm_active=float("nan"))
    x = extract_features([pinned, dev_only])
    assert value(x[1], "act.mean") < 0.05  # type: ignore[operator]
    assert value(x[1], "link_busy.mean") > 0.85  # type: ignore[operator]
    assert value(x[1], "util_gap.mean") is None  # no SM or graphics-engine figure to set it against
    assert value(x[0], "util_gap.mean") < 0.05  # type: ignore[operator]
    assert value(x[0], "launch_gap.mean") < 0.05  # type: ignore[operator]


def test_symmetric_pcie_reads_as_fabric_traffic() -> None:
    w = make_window(Bottleneck.INTERCONNECT, noise=0.0)
    rdma = _with(w, pcie_rx_bps=12 * GB, pcie_tx_bps=11 * GB)
    h2d = _with(w, pcie_rx_bps=12 * GB, pcie_tx_bps=0.2 * GB)
    x = extract_features([rdma, h2d])
    assert abs(value(x[0], "pcie_fabric_frac.mean") - 11 * GB / 31.5e9) < 1e-9  # type: ignore[operator]
    assert value(x[1], "pcie_fabric_frac.mean") < 0.01  # type: ignore[operator]


def test_one_way_copies_load_the_link_only_while_the_gpu_waits() -> None:
    """Input copies beside a busy GPU are little of an Interconnect stall; the same copies count as far
    as the GPU idles, and balanced (GPUDirect) traffic counts whatever the GPU does."""
    w = make_window(Bottleneck.GPU, noise=0.0)
    w = _with(w, nvlink_tx_bps=0.0, nvlink_rx_bps=0.0, nvlink_total_bps=0.0, pcie_tx_bps=0.0)
    busy = _with(w, gr_engine_active=0.95, pcie_rx_bps=0.2 * 31.5e9)
    waiting = _with(busy, gr_engine_active=0.5)
    rdma = _with(busy, pcie_tx_bps=0.2 * 31.5e9)
    x = extract_features([busy, waiting, rdma])
    # 6.3 GB/s against the copy path's 10 GB/s (a staging memcpy, slower than 0.9 of PCIe Gen4 x16)
    copies = 0.2 * 31.5e9 / STAGED_COPY_BPS
    assert abs(value(x[0], "link_busy.mean") - copies * 0.05) < 1e-9  # type: ignore[operator]
    assert abs(value(x[1], "link_busy.mean") - copies * 0.5) < 1e-9  # type: ignore[operator]
    assert abs(value(x[2], "link_busy.mean") - 0.2) < 1e-9  # type: ignore[operator]


def test_copies_read_against_the_slower_leg_of_their_path() -> None:
    """Pageable copies at a host memcpy's rate fill their path on a Gen5 link, at 0.15 of its bytes
    (tests/data/gpu-h2d); pinned copies fill it only near the link's own rate."""
    w = make_window(Bottleneck.INTERCONNECT, noise=0.0, gpu_model="NVIDIA H100 80GB HBM3")
    w = _with(w, nvlink_tx_bps=0.0, nvlink_rx_bps=0.0, nvlink_total_bps=0.0, pcie_tx_bps=0.0, gr_engine_active=0.0)
    link = spec_for("NVIDIA H100 80GB HBM3").pcie_bps
    pageable = _with(w, pcie_rx_bps=9.5 * GB)
    pinned = _with(w, pcie_rx_bps=0.9 * link)
    x = extract_features([pageable, pinned])
    assert abs(value(x[0], "link_busy.mean") - 9.5 * GB / STAGED_COPY_BPS) < 1e-9  # type: ignore[operator]
    assert value(x[0], "pcie_rx_frac.mean") < 0.2  # type: ignore[operator]
    assert value(x[1], "link_busy.mean") == 1.0


def test_hbm_bandwidth_reads_dram_activity_alone() -> None:
    """MEM_COPY_UTIL counts time with any access in flight, compute kernels' too: it is no stand-in for
    DRAM_ACTIVE, and without DRAM activity the HBM's use is unread."""
    w = make_window(Bottleneck.GPU, noise=0.0)
    prof = _with(w, dram_active=0.4, mem_copy_util=0.9)
    no_prof = _with(prof, dram_active=float("nan"))
    x = extract_features([prof, no_prof])
    assert abs(value(x[0], "hbm_busy.mean") - 0.4 / 0.8) < 1e-9  # type: ignore[operator]
    assert value(x[1], "hbm_busy.mean") is None


def test_launch_gaps_survive_input_copies_but_not_collectives_on_a_gpu_link() -> None:
    """One-way host-to-device copies are input, in every class; NVLink bytes are collectives. The
    network's balance is a feature of its own: the gap is not cut by it (the classifier reads both)."""
    w = make_window(Bottleneck.GPU, noise=0.0)
    launch = _with(w, gpu_util=0.5, gr_engine_active=0.48, sm_active=0.2, tensor_active=0.0, dram_active=0.0)
    launch = _with(launch, nvlink_tx_bps=0.0, nvlink_rx_bps=0.0, nvlink_total_bps=0.0)
    launch = _with(launch, node_net_rx_bps=1e6, node_net_tx_bps=1e4)
    copies = _with(launch, pcie_rx_bps=8 * GB, pcie_tx_bps=0.1 * GB)
    allreduce = _with(launch, node_net_rx_bps=2 * GB, node_net_tx_bps=2 * GB)
    nvlink = _with(launch, nvlink_tx_bps=40 * GB, nvlink_rx_bps=40 * GB, nvlink_total_bps=80 * GB)
    x = extract_features([copies, allreduce, nvlink])
    assert abs(value(x[0], "launch_gap.mean") - 0.48) < 1e-9  # type: ignore[operator]
    assert abs(value(x[1], "launch_gap.mean") - 0.48) < 1e-9  # type: ignore[operator]
    assert value(x[1], "net_symmetry.mean") == 1.0
    assert value(x[2], "launch_gap.mean") == 0.0
    # with the link busy the whole GPU_UTIL-SM gap is NCCL's; without, none of it
    gap = value(x[2], "util_gap.mean")
    assert gap is not None and gap > 0.2 and value(x[2], "collective_gap.mean") == gap
    assert value(x[0], "collective_gap.mean") == 0.0


def test_cpu_pressure_counts_where_the_cgroup_is_near_its_limit() -> None:
    """Pressure on a cgroup that uses a sliver of a core on a crowded node is its neighbours' doing."""
    w = make_window(Bottleneck.GPU, noise=0.0)
    base = dict(cpu_limit_cores=np.nan, node_cpus=32.0, sc_procs_running=4.0, sc_psi_cpu_some=0.3)
    starved = _with(w, cpu_cores=0.12, sc_cpu_cores=0.12, node_cpu_busy_frac=0.99, **base)
    loaders = _with(w, cpu_cores=4.0, sc_cpu_cores=4.0, node_cpu_busy_frac=0.2, **base)
    throttled = _with(starved, cpu_limit_cores=0.5, sc_throttled_frac=0.4, cpu_throttled_frac=0.4)
    x = extract_features([starved, loaders, throttled])
    band = (0.3 - 0.05) / 0.95
    own = value(x[0], "cpu_psi_own.mean")
    assert own is not None and own < 0.25 * band
    assert abs(value(x[1], "cpu_psi_own.mean") - band) < 1e-9  # type: ignore[operator]
    assert abs(value(x[2], "cpu_psi_own.mean") - (0.4 - 0.05) / 0.95) < 1e-9  # type: ignore[operator]
    # raw pressure is unchanged for the evidence and the report
    assert value(x[0], "sc_psi_cpu_some.mean") == value(x[1], "sc_psi_cpu_some.mean")


def test_busy_core_share_is_the_pods_cpu_in_pinned_processes() -> None:
    """Two workers at a full core each of 2.5 cores used read 0.8; readers asleep on sockets read 0;
    an older collector without the count reads missing, not 0."""
    w = make_window(Bottleneck.CPU, noise=0.0)
    pinned = _with(w, sc_cpu_cores=2.5, cpu_cores=2.5, sc_procs_busy=2.0)
    asleep = _with(w, sc_cpu_cores=2.5, cpu_cores=2.5, sc_procs_busy=0.0)
    older = _with(w, sc_cpu_cores=2.5, cpu_cores=2.5)
    older = replace(older, pods=(replace(older.pods[0], signals={
        k: v for k, v in older.pods[0].signals.items() if k != "sc_procs_busy"
    }),))  # fmt: skip
    small = _with(w, sc_cpu_cores=0.5, cpu_cores=0.5, sc_procs_busy=1.0)  # under one core: counted per core
    x = extract_features([pinned, asleep, older, small])
    assert abs(value(x[0], "busy_core_share.mean") - 0.8) < 1e-9  # type: ignore[operator]
    assert value(x[1], "busy_core_share.mean") == 0.0
    assert value(x[2], "busy_core_share.mean") is None
    assert value(x[3], "busy_core_share.mean") == 1.0


def test_stall_shares_say_which_wait_explains_the_idle_gpu() -> None:
    """The same idle GPU reads as IO, CPU or memory by the stall that fills its idle time."""
    w = make_window(Bottleneck.GPU, noise=0.0)
    idle = _with(w, gr_engine_active=0.4, sc_psi_io_some=0.0, sc_psi_cpu_some=0.0, sc_psi_mem_some=0.0)
    idle = _with(idle, sc_throttled_frac=0.0, cpu_throttled_frac=0.0, node_psi_io_some=0.0, node_psi_mem_some=0.0)
    io = _with(idle, sc_psi_io_some=0.5)
    mem = _with(idle, sc_psi_mem_some=0.5)
    x = extract_features([idle, io, mem])
    assert value(x[0], "io_stall_share.mean") == 0.0
    stall = (0.5 - 0.05) / 0.95 * 0.6
    assert abs(value(x[1], "io_stall_share.mean") - stall / (stall + 0.05)) < 1e-9  # type: ignore[operator]
    assert value(x[1], "mem_stall_share.mean") == 0.0
    assert abs(value(x[2], "mem_stall_share.mean") - stall / (stall + 0.05)) < 1e-9  # type: ignore[operator]


def test_power_reads_against_the_enforced_limit_and_clocks_against_peers() -> None:
    """Power against DCGM_FI_DEV_POWER_MGMT_LIMIT where exported (else the board's TDP); a clock against the
    pod's own range and the Job's other pods, never against a datasheet's maximum boost."""
    w = make_window(Bottleneck.GPU, gpu_model="NVIDIA H200", noise=0.0)
    capped = extract_features([_with(w, power_w=450.0, power_limit_w=500.0)])[0]
    assert capped[FEATURE_INDEX["power_limit_frac.mean"]] == pytest.approx(0.9)
    tdp = extract_features([_with(w, power_w=350.0, power_limit_w=float("nan"))])[0]
    assert tdp[FEATURE_INDEX["power_limit_frac.mean"]] == pytest.approx(0.5)  # 350 of the H200's 700 W
    # a steady clock is at its own peak whatever its MHz; a lone pod has no peers to be slower than
    steady = extract_features([_with(w, sm_clock_mhz=1100.0)])[0]
    assert steady[FEATURE_INDEX["clock_rel_peak.mean"]] == pytest.approx(1.0)
    assert np.isnan(steady[FEATURE_INDEX["clock_peer_min"]])
    # two pods: one's boards at 1200 MHz, the other's at 1500: the slower reads 0.8 of its peer
    two = make_window(Bottleneck.GPU, pods=2, noise=0.0)
    pods = tuple(
        replace(p, signals={**p.signals, "sm_clock_mhz": np.full(30, mhz)})
        for p, mhz in zip(two.pods, (1500.0, 1200.0), strict=True)
    )
    peer = extract_features([replace(two, pods=pods)])[0]
    assert peer[FEATURE_INDEX["clock_peer_min"]] == pytest.approx(0.8)
    # an idle GPU's clock says nothing of the work (maximum with a CUDA context, far below without one)
    idle = _with(make_window(Bottleneck.IO), gpu_util=0.02, gr_engine_active=0.02, sm_active=0.01, sm_clock_mhz=345.0)
    assert np.isnan(extract_features([idle])[0, FEATURE_INDEX["clock_rel_peak.mean"]])


def test_periodic_pauses_are_a_finding_with_their_share_of_the_window() -> None:
    """Checkpoints at a regular interval leave the busy fractions but are said, with the share of the
    window they took: the run is that much longer than its training."""
    w = make_window(Bottleneck.GPU, noise=0.0)
    n = len(w.timestamps)
    w = _with(w, power_w=np.linspace(300.0, 310.0, n))
    pause = np.zeros(n, dtype=bool)
    starts = [n // 5, 2 * n // 5, 3 * n // 5]
    for s in starts:
        pause[s : s + 2] = True
    quiet = {name: np.where(pause, 0.0, w.pods[0].signals[name]) for name in ("pcie_rx_bps", "node_net_rx_bps")}
    reads = {name: np.where(pause, 0.0, w.pods[0].signals[name]) for name in ("node_disk_read_bps", "fs_read_bps")}
    checkpoints = _with(w, gr_engine_active=np.where(pause, 0.0, 0.95), sc_io_read_bps=0.0, **quiet, **reads)
    phases = segment_phases(checkpoints)
    assert [p.kind for p in phases.phases] == ["pause"] * 3
    share = 100 * 6 * checkpoints.step / checkpoints.duration
    (note,) = [t for t in phases.notes() if "pause" in t]
    assert note.startswith("3 pause(s) with idle GPUs at a regular interval"), note
    assert f"{share:.0f} % of the window" in note, note
    # without pauses, no such finding
    assert not [t for t in segment_phases(w).notes() if "pause" in t]


def test_feature_keys_are_declared_once_and_name_real_columns() -> None:
    """The typed keys build every column name the analysis reads: each series' mean (and quantiles
    where it has them), each spread and each Job feature is a column of the row, in the schema's order."""
    from bottleneck_operator.analysis.features.extract import CONTEXT_SERIES, FEATURE_INDEX, POD_SPREAD
    from bottleneck_operator.analysis.features.series_names import SERIES, Extra, Series

    assert [s.value for s in Series] == list(SERIES)
    for s in Series:
        assert s.mean in FEATURE_INDEX
        assert (s.p90 in FEATURE_INDEX) == (s not in CONTEXT_SERIES or s in ("pcie_rx_frac", "pcie_tx_frac"))
    for s in POD_SPREAD:
        assert Series(s).podmax in FEATURE_INDEX and Series(s).podmin in FEATURE_INDEX
    assert all(e.key in FEATURE_INDEX for e in Extra)
    # the analysis itself names no column by a string
    import re
    from pathlib import Path

    analysis = Path(__file__).resolve().parents[2] / "operator" / "bottleneck_operator" / "analysis"
    quoted = re.compile(r'"[a-z0-9_]+\.(mean|p10|p50|p90|cv)(\.pod(max|min))?"')
    hits = [
        f"{p.name}:{i}"
        for p in analysis.rglob("*.py")
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if quoted.search(line) and '"""' not in line and not line.lstrip().startswith("#")
    ]
    assert hits == []
