"""The label by DESIGN.md's definition: the stage whose removal would speed the step up most.

Each candidate stage is made ample in turn (:class:`~.stages.Knobs`) and the loop is run again with
the same per-batch noise; the speed-up of each run over the Job as drawn ranks the stages. A class
takes the best speed-up of its mechanisms. Two classes within a close margin make the Job ``hard``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator_dev.familyak.loop import LoopRun, Noise, run_loop
from bottleneck_operator_dev.familyak.spec import JobSpec
from bottleneck_operator_dev.familyak.stages import OOM_RESTART_S, Knobs

# Close call: the runner-up's gain (log speed-up) is at least this share of the winner's.
HARD_RATIO = 0.7
# A too-few-workers Job: more workers on the same cores win most of what ample CPU would.
WORKERS_SHARE = 0.6

B, M = Bottleneck, Mechanism


@dataclass(frozen=True)
class Labelled:
    """The counterfactual verdict on one Job.

    Attributes:
        label: the class whose stage, made ample, speeds the step up most.
        mechanism: how it limits (one of the contract's mechanisms of that class).
        speedups: counterfactual run -> speed-up factor of the run with that stage ample (>= about 1).
        hard: the runner-up class came close.
        base: the run of the Job as drawn (what the telemetry is rendered from).
    """

    label: Bottleneck
    mechanism: Mechanism
    speedups: dict[str, float]
    hard: bool
    base: LoopRun


def effective_step(run: LoopRun) -> float:
    """Seconds per step, counting the restarts OOM kills force (host memory's own cost)."""
    period = run.costs.oom_period
    down = OOM_RESTART_S / (period + OOM_RESTART_S) if np.isfinite(period) else 0.0
    return run.mean_step / (1.0 - down)


def _candidates(spec: JobSpec) -> dict[str, tuple[Mechanism, Knobs]]:
    """The counterfactual runs worth making for this Job (a stage it does not have is skipped)."""
    runs: dict[str, tuple[Mechanism, Knobs]] = {
        "io": (M.LOCAL_DISK if spec.loader.storage.local else M.NETWORK_STORAGE, Knobs(io=True)),
        "cpu": (M.SATURATED, Knobs(cpu=True)),
        "h2d": (M.PCIE, Knobs(pcie=True)),
        "compute": (M.COMPUTE, Knobs(compute=True)),
        "launch": (M.LAUNCH_BOUND, Knobs(launch=True)),
        "hbm": (M.HBM_BANDWIDTH, Knobs(hbm=True)),
    }
    if spec.gpus > 1:
        # without NVLink, the GPUs of a node all-reduce over PCIe
        runs["intra"] = (M.NVLINK if spec.board.nvlink_gbs else M.PCIE, Knobs(intra=True))
    if spec.pods > 1:
        runs["network"] = (M.NETWORK, Knobs(network=True))
    if spec.host.mem_limit is not None:
        runs["hostmem"] = (M.HOST_MEMORY_PRESSURE, Knobs(hostmem=True))
    return runs


CLASS_OF: dict[Mechanism, Bottleneck] = {m: cls for cls, ms in MECHANISMS.items() for m in ms}


def _cpu_mechanism(spec: JobSpec, noise: Noise, base: float, cpu_speedup: float) -> Mechanism:
    """Which CPU mechanism: too few workers (more on the same cores win most), a CPU limit, or none left."""
    more = effective_step(run_loop(spec, Knobs(workers=True), noise))
    if np.log(base / more) >= WORKERS_SHARE * np.log(cpu_speedup):
        return M.TOO_FEW_WORKERS
    return M.THROTTLED if spec.host.cpu_limit is not None else M.SATURATED


def label_job(spec: JobSpec, noise: Noise) -> Labelled:
    """Run the Job as drawn and once per candidate stage made ample; the best speed-up names the class."""
    base_run = run_loop(spec, Knobs(), noise)
    base = effective_step(base_run)
    speedups: dict[str, float] = {}
    by_class: dict[Bottleneck, tuple[float, Mechanism]] = {}
    for name, (mechanism, knobs) in _candidates(spec).items():
        s = base / effective_step(run_loop(spec, knobs, noise))
        speedups[name] = s
        cls = CLASS_OF[mechanism]
        if cls not in by_class or s > by_class[cls][0]:
            by_class[cls] = (s, mechanism)
    ranked = sorted(by_class.items(), key=lambda kv: -kv[1][0])
    (label, (best, mechanism)), (_, (second, _)) = ranked[0], ranked[1]
    if label is B.CPU:
        mechanism = _cpu_mechanism(spec, noise, base, best)
    hard = bool(np.log(max(second, 1.0)) >= HARD_RATIO * np.log(max(best, 1.0 + 1e-9)))
    return Labelled(label, mechanism, speedups, hard, base_run)
