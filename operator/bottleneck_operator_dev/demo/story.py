"""The demo's Jobs: one per class, and one whose bottleneck changes mid-run.

The changing Job starts IO-bound: its loaders read the dataset from storage slower than the GPUs
consume it. At ``switch`` the dataset is cached (the page cache or a local NVMe copy now serves the
reads), so the storage stage shrinks and the GPU's math becomes the slowest stage. It is simulated as
two records with one identity (namespace, name, pods, nodes): the IO-bound scenario up to the switch,
the cached one after it, so Prometheus sees one Job whose signals change. Both records are simulated
over the whole run; :meth:`DemoJob.switch` sets when the second takes over, so the demo can time the
change from when the operator starts watching rather than from when the Jobs were drawn.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from bottleneck_operator.analysis.classify import Classifier, analyze_windows
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck, Mechanism
from bottleneck_operator.errors import BottleneckError
from bottleneck_operator_dev.simulation import SimulatedJob, generate_jobs
from bottleneck_operator_dev.simulation.catalog import STORAGE_KINDS
from bottleneck_operator_dev.simulation.stages import label_of

# After caching, reads come this much faster than from the storage the Job was drawn with.
CACHE_SPEEDUP = 20.0
# Seeds tried for an IO-bound Job that caching turns clearly GPU-bound (deterministic: the first wins).
_SEEDS_TRIED = 64
_DRAWS = 3  # Jobs drawn per class, of which the clearest is shown


@dataclass(frozen=True)
class DemoJob:
    """One Job of the demo: its simulated records (two for the changing Job) and what it should show.

    Attributes:
        records: the simulated telemetry, in time order; they share the Job's identity.
        classes: the bottleneck built in, in order (one class, or the class before and after the switch).
        completes_at: seconds into the watch at which the Job is marked Complete, or None (it keeps running).
    """

    records: tuple[SimulatedJob, ...]
    classes: tuple[str, ...]
    completes_at: float | None = None

    @property
    def first(self) -> SimulatedJob:
        return self.records[0]

    @property
    def key(self) -> str:
        return f"{self.first.namespace}/{self.first.name}"

    @property
    def changes(self) -> bool:
        return len(self.classes) > 1

    @property
    def history(self) -> SimulatedJob:
        """The record whose past is backfilled (the changing Job's cached phase is still to come)."""
        return self.records[0]

    def switch(self, at: float) -> None:
        """Make the second record take over at ``at`` (unix seconds) in the live exporters."""
        if self.changes:
            before, after = self.records
            before.end = after.start = at

    @property
    def truth(self) -> str:
        """The class its final report should show (the last one built in)."""
        return self.classes[-1]


def steady(job: SimulatedJob) -> SimulatedJob:
    """The Job without scrape gaps or exporter restarts.

    The demo analyses short windows (a minute) so that a change shows within it; a gap of several
    minutes would leave such windows empty. The test suite and the benchmark exercise gaps.
    """
    env = replace(job.params.env, gap_prob=0.0, counter_reset=False)
    return replace(job, params=replace(job.params, env=env))


def _cached(job: SimulatedJob) -> SimulatedJob | None:
    """The same Job with its dataset cached, dormant until :meth:`DemoJob.switch`; None when caching leaves it not GPU-bound."""
    sc = job.params
    times = replace(sc.times, io=sc.times.io / CACHE_SPEEDUP)
    label, margin, runner_up = label_of(times)
    if label is not Bottleneck.GPU or margin < 0.3:
        return None
    # The Job is already warm: no second start-up phase after the switch.
    params = replace(
        sc,
        times=times,
        storage_bw_bps=sc.storage_bw_bps * CACHE_SPEEDUP,
        storage_cap_bps=sc.storage_cap_bps * CACHE_SPEEDUP,
        label=label.value,
        margin=margin,
        runner_up=runner_up.value,
        env=replace(sc.env, startup_s=0.0, counter_reset=False),
    )
    after = replace(job, params=params, label=label, margin=margin, completed=False)
    # Simulated over the whole run now (the state is computed once, on first use), then held back:
    # the live exporters serve a record only between its start and its end.
    _ = after.state
    after.start = after.end
    return after


def changing_job(seed: int, *, namespace: str, start: float, end: float, scrape: float) -> DemoJob:
    """A Job that is IO-bound until :meth:`DemoJob.switch` is called and GPU-bound after the time it names.

    Args:
        seed: the simulator's seed (the first of the seeds tried).
        namespace: the Job's namespace.
        start / end: unix seconds: its telemetry starts and ends.
        scrape: the scrape interval, seconds.

    Returns:
        The Job (two records).
    """
    for s in range(seed, seed + _SEEDS_TRIED):
        (io,) = generate_jobs(
            s,
            1,
            start=start,
            duration=end - start,
            classes=[Bottleneck.IO],
            scrape_interval=scrape,
            namespace=namespace,
        )
        io = steady(io)
        after = _cached(io)
        if after is not None:
            return DemoJob((replace(io, completed=False), after), (Bottleneck.IO.value, Bottleneck.GPU.value))
    raise BottleneckError(f"no IO-bound Job among seeds {seed}..{seed + _SEEDS_TRIED - 1} turns GPU-bound when cached")


def class_jobs(
    seed: int,
    *,
    namespace: str,
    start: float,
    end: float,
    scrape: float,
    sureness: Callable[[SimulatedJob], float] | None = None,
) -> list[DemoJob]:
    """One Job per class: of a few drawn per class, the clearest.

    Clearest means, in order: what binds it shows in what its exporters collect (:func:`observable`);
    then, when ``sureness`` is given, how surely the classifier reads it (see :func:`read_surely`); then
    the simulator's margin between its slowest stage and the next. The margin alone is not enough: a
    Job with a wide margin can sit where the model hesitates between two classes, and a one-minute
    window then turns Unknown in one demo run and not in the next.

    The demo shows what a verdict looks like on a clear case; accuracy over hard and ambiguous cases is
    measured by ``make bench`` and ``make evaluate``, not here.
    """
    # Twice as many drawn as looked at first: a class none of whose first draws is a clear case takes
    # one from the second half, and the others keep the Job they had.
    drawn = generate_jobs(
        seed, 2 * _DRAWS * len(CLASSES), start=start, duration=end - start, classes=list(CLASSES),
        scrape_interval=scrape, namespace=namespace,
    )  # fmt: skip
    first = {j.name for j in drawn[: _DRAWS * len(CLASSES)]}
    steadied = [steady(j) for j in drawn]
    sure = {j.name: sureness(j) if sureness is not None and observable(j) else 0.0 for j in steadied}
    best = {
        c: max(
            (j for j in steadied if j.label is c),
            key=lambda j: (observable(j), sure[j.name], j.name in first, j.margin),
        )
        for c in CLASSES
    }
    return [DemoJob((best[c],), (c.value,)) for c in CLASSES]


def read_surely(
    model: Classifier, *, ends: Sequence[float], window: float, step: float, min_window: float
) -> Callable[[SimulatedJob], float]:
    """How surely ``model`` reads a Job's own class in the windows the demo will analyse.

    Args:
        model: the classifier the operator runs.
        ends: unix seconds at which the windows end.
        window: each window's length, seconds.
        step: seconds between a window's samples (the scrape interval).
        min_window: the operator's shortest window, seconds.

    Returns:
        A function of a Job: the lowest confidence over those windows, 0 where any window reads
        another class or abstains.
    """

    def surely(job: SimulatedJob) -> float:
        windows = [job.to_window(step=step, start=e - window, end=e) for e in ends]
        verdicts = analyze_windows(windows, model, min_window=min_window, with_details=False)
        return min((v.confidence or 0.0) if v.bottleneck is job.label else 0.0 for v in verdicts)

    return surely


# Mechanisms whose plain signal is a DCGM profiling field: host-to-device copies show only in PCIe bytes,
# bandwidth-bound kernels in DRAM activity (without it, only in NVML's coarser memory utilization).
_PROF_ONLY = frozenset({Mechanism.PCIE, Mechanism.HBM_BANDWIDTH})


def observable(job: SimulatedJob) -> bool:
    """Whether what binds the Job shows in what its exporters collect, not only through a pattern.

    A PCIe-bound Job whose exporter collects no profiling fields can be told from a remote-storage reader
    only by the model's guess (both leave GPUs idle and the network carrying the input). A Job bound by
    remote storage leaves a wait only where its readers block in D state (NFS, FUSE) and the collector
    reads its cgroup: object-store readers sleep in S state, so only their network rate's plateau shows,
    a reading a one-minute window makes borderline (about one window in ten reads Unknown). A local
    disk's readers without the collector leave only the node's iowait and IO pressure, which a
    neighbour raises as well: in a one-minute window such a Job can read like a loader with too few
    workers, whose GPUs wait with nothing else busy; a busy neighbour's own disk and network bytes
    blur which source the Job reads. None of these is a clear case.
    """
    if job.params.dcgm_fieldset == "dev" and job.mechanism in _PROF_ONLY:
        return False
    if job.label is not Bottleneck.IO:
        return True
    if "sidecar" not in job.tags or "noisy_neighbour" in job.tags:
        return False
    return job.mechanism is not Mechanism.NETWORK_STORAGE or STORAGE_KINDS[job.params.storage].iowait_factor > 0
