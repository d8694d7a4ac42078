"""``SimulatedJob.to_window``: shapes, units, NaN gaps, absent families, and the physics behind labels."""

from __future__ import annotations

import numpy as np

from bottleneck_operator.contract.signals import SIGNALS, Family, signals_of
from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.simulation import SimulatedJob, generate_jobs

START = 1_700_000_000.0
RATIOS = [n for n, s in SIGNALS.items() if s.unit == "ratio"]


def _mean(job: SimulatedJob, name: str, how: str = "mean") -> float:
    w = job.to_window(step=30.0, start=job.start + job.params.env.startup_s + 60)
    values = np.concatenate([p.signals[name] for p in w.pods])
    return float(np.nanmedian(values) if how == "median" else np.nanmean(values))


def test_shapes_names_and_ranges(many_jobs: list[SimulatedJob]) -> None:
    for job in many_jobs[:20]:
        w = job.to_window(step=30.0)
        assert w.namespace == job.namespace and w.job == job.name
        assert w.timestamps[0] == job.start and w.timestamps[-1] <= job.end
        assert len(w.pods) == len(job.pods)
        assert w.quality.scrape_interval == job.params.scrape_interval
        assert 0.0 < w.quality.coverage <= 1.0
        for pod in w.pods:
            assert pod.gpu_count == job.params.gpus_per_pod
            assert set(pod.signals) <= set(SIGNALS)
            for name, values in pod.signals.items():
                assert values.shape == w.timestamps.shape, name
                finite = values[np.isfinite(values)]
                assert (finite >= 0).all(), name
                if name in RATIOS:
                    assert (finite <= 1.0 + 1e-6).all(), name


def test_window_bounds_and_step(few_jobs: list[SimulatedJob]) -> None:
    job = few_jobs[0]
    w = job.to_window(step=60.0, start=job.start + 120, end=job.start + 420)
    assert w.step == 60.0 and len(w.timestamps) == 6
    outside = job.to_window(step=30.0, start=job.end + 3600, end=job.end + 7200)
    assert outside.pods == ()


def test_families_follow_the_scenario(many_jobs: list[SimulatedJob]) -> None:
    for job in many_jobs:
        env = job.params.env
        w = job.to_window()
        names = set(w.pods[0].signals)
        fams = w.quality.families
        assert (Family.SIDECAR in fams) == env.sidecar
        assert (Family.NODE_PSI in fams) == env.node_psi
        assert (Family.NODE_IB in fams) == (env.ib_ports > 0)
        assert (Family.DCGM_POWER_CLOCKS in fams) == env.dcgm_power_clocks
        assert (Family.DCGM_PROF_PIPES in fams) == (env.dcgm_fieldset == "full" and env.dcgm_pipes)
        assert ("sc_swapin_ps" in names) == (env.sidecar and env.swapins_counted)
        assert ("cpu_throttled_frac" in names) == (job.params.cpu_limit is not None)
        assert ("cpu_limit_cores" in names) == (job.params.cpu_limit is not None and env.ksm)
        if env.dcgm_fieldset == "dev":
            assert not names & (set(signals_of(Family.DCGM_PROF)) | set(signals_of(Family.DCGM_PROF_SM)))
        if env.dcgm_fieldset != "full":
            assert "sm_active" not in names and "nvlink_tx_bps" not in names
        if env.mem_limit_bytes is None:
            assert np.isnan(w.pods[0].signals["mem_limit_bytes"]).all()


def test_scrape_gaps_are_nan() -> None:
    jobs = generate_jobs(11, 30, start=START, duration=1800, scrape_interval=15)
    job = next(j for j in jobs if not j.state.up["dcgm"].all())
    st = job.state
    missing = st.times("dcgm")[~st.up["dcgm"]]
    w = job.to_window(step=15.0)
    # A window timestamp after two missed scrapes in a row has no GPU sample within one step.
    inside = [i for i, t in enumerate(w.timestamps) if ((missing > t - 15.0) & (missing <= t)).any()]
    assert inside
    assert any(np.isnan(w.pods[0].signals["gpu_util"][i]) for i in inside)
    assert w.quality.coverage < 1.0


def test_signals_reflect_the_bound(many_jobs: list[SimulatedJob]) -> None:
    by = {c: [j for j in many_jobs if j.label is c] for c in Bottleneck if c is not Bottleneck.UNKNOWN}
    gpu_busy = {c: np.mean([_mean(j, "gpu_util") for j in js]) for c, js in by.items()}
    assert gpu_busy[Bottleneck.GPU] > 0.8
    assert gpu_busy[Bottleneck.IO] < gpu_busy[Bottleneck.GPU]
    assert gpu_busy[Bottleneck.CPU] < gpu_busy[Bottleneck.GPU]
    for job in many_jobs:
        tags = set(job.tags)
        if "cpu_throttled" in tags:
            assert _mean(job, "cpu_throttled_frac") > 0.4
        if "fb_full" in tags:
            assert _mean(job, "fb_used_frac") >= 0.94
        if "dram_bound" in tags and "dram_active" in job.to_window().pods[0].signals:
            assert _mean(job, "dram_active") > 0.55
        if job.label is Bottleneck.IO and "network_storage" in tags:
            assert _mean(job, "fs_read_bps") < 1e6 < _mean(job, "node_net_rx_bps")


def test_nccl_busy_looks_busy_but_sms_wait() -> None:
    jobs = generate_jobs(2, 40, start=START, duration=1200, classes=[Bottleneck.INTERCONNECT], dcgm_fieldset="full")
    busy = [j for j in jobs if "nccl_busy" in j.tags]
    assert busy
    for job in busy:
        # Outside evaluation passes and checkpoints (no all-reduce there) the GPU looks busy.
        assert _mean(job, "gpu_util", "median") > 0.8
        if "sm_active" in job.to_window().pods[0].signals:
            assert _mean(job, "sm_active", "median") < 0.55


def test_the_label_bounds_most_samples(many_jobs: list[SimulatedJob]) -> None:
    """Per sample (with drift, jitter and bursts) the labelled class is still the slowest stage most of the time."""
    from bottleneck_operator_dev.simulation.physics import BOUND_CLASSES
    from bottleneck_operator_dev.simulation.stages import step_time

    for job in many_jobs:
        st = job.state
        training = st.t - job.start > job.params.env.startup_s * 1.5
        share = float((st.pod["bound_class"][:, training] == BOUND_CLASSES.index(job.label)).mean())
        assert share > (0.6 if job.margin > 0.25 else 0.4), (job.name, job.margin, share)
        nominal = step_time(list(job.params.times.bounds().values()), job.params.overlap_slack)
        median = float(np.median(st.pod["step_s"][:, training]))
        assert 0.6 * nominal < median < 1.6 * nominal


def test_counter_reset_is_undone_like_rate() -> None:
    """A node-exporter restart resets its counters; the window's rates stay non-negative and sane."""
    jobs = generate_jobs(21, 80, start=START, duration=1800, scrape_interval=15)
    job = next(j for j in jobs if j.params.env.counter_reset)
    net = job.state.node["net_rx_c"][0]
    assert (np.diff(net) < 0).sum() == 1
    w = job.to_window(step=15.0)
    node = job.nodes[0].name
    pod = next(p for p in w.pods if p.node == node)
    for name in ("node_net_rx_bps", "node_disk_read_bps", "node_cpu_busy_frac", "node_majfault_ps"):
        values = pod.signals[name]
        assert (values[np.isfinite(values)] >= 0).all(), name
    rx = pod.signals["node_net_rx_bps"]
    assert np.nanmax(rx) < 10 * np.nanmedian(rx)


def test_a_full_framebuffer_is_drawn_for_every_class() -> None:
    """Allocators reserve the framebuffer whatever bounds the step, so fullness must not mark a class."""
    from bottleneck_operator_dev.simulation.draw import draw_scenario

    rng = np.random.default_rng(5)
    for target in (c for c in Bottleneck if c is not Bottleneck.UNKNOWN):
        fb = np.array(
            [draw_scenario(rng, target, ambiguous=False, holdout=False, seed=i).env.fb_frac for i in range(120)]
        )
        assert fb.max() <= 0.99
        # Roughly a third of each class near full (TensorFlow's default, tuned batches, PyTorch's cache).
        assert 0.15 < float(np.mean(fb >= 0.93)) < 0.55, target
        assert float(np.mean(fb < 0.7)) > 0.2, target
