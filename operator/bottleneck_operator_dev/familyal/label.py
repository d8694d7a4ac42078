"""The label, found counterfactually as DESIGN.md defines the bottleneck.

The bottleneck is the stage whose removal would speed the Job up most: the step model is rerun
with each class's stages made ample on every rank (same draws), and the class with the largest
speed-up wins. The mechanism is picked the same way among the class's own sub-stages. A close
call (the winner's speed-up within 12 % of the runner-up's, or a winner that gains under 8 %) is tagged
``hard``.
"""

from __future__ import annotations

from dataclasses import dataclass

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyal.costs import Costs
from bottleneck_operator_dev.familyal.steps import Steps, run

B, M = Bottleneck, Mechanism

# The sub-stages each class's counterfactual makes ample.
CLASS_STAGES: dict[Bottleneck, frozenset[str]] = {
    B.IO: frozenset({"storage"}),
    B.CPU: frozenset({"decode", "cpu-limit", "cores", "workers"}),
    B.INTERCONNECT: frozenset({"pcie", "nvlink", "network"}),
    B.GPU: frozenset({"compute", "launch"}),
    B.MEMORY: frozenset({"hbm", "host-memory"}),
}
# Within a class, the sub-stage that stands for each mechanism.
MECHANISM_STAGES: dict[Bottleneck, tuple[tuple[Mechanism, frozenset[str]], ...]] = {
    B.CPU: (
        (M.THROTTLED, frozenset({"cpu-limit"})),
        (M.SATURATED, frozenset({"cores"})),
        (M.TOO_FEW_WORKERS, frozenset({"workers"})),
    ),
    B.INTERCONNECT: (
        (M.PCIE, frozenset({"pcie"})),
        (M.NVLINK, frozenset({"nvlink"})),
        (M.NETWORK, frozenset({"network"})),
    ),
    B.GPU: ((M.COMPUTE, frozenset({"compute"})), (M.LAUNCH_BOUND, frozenset({"launch"}))),
    B.MEMORY: ((M.HBM_BANDWIDTH, frozenset({"hbm"})), (M.HOST_MEMORY_PRESSURE, frozenset({"host-memory"}))),
}
HARD_RATIO = 1.12
HARD_GAIN = 1.08


@dataclass(frozen=True)
class Labelled:
    """The factual run, the label and what decided it.

    Attributes:
        base: the factual step model run.
        label: the class whose removal speeds the Job up most.
        mechanism: how it limits the Job.
        speedups: class -> mean step time / mean step time with the class ample.
        hard: a close call.
    """

    base: Steps
    label: Bottleneck
    mechanism: Mechanism
    speedups: dict[Bottleneck, float]
    hard: bool


def _mechanism(c: Costs, label: Bottleneck, base: float, network_storage: bool, has_limit: bool) -> Mechanism:
    if label is B.IO:
        return M.NETWORK_STORAGE if network_storage else M.LOCAL_DISK
    gains: list[tuple[float, Mechanism]] = []
    for mech, stages in MECHANISM_STAGES[label]:
        if mech is M.THROTTLED and not has_limit:
            continue
        gains.append((base / run(c, stages).mean, mech))
    best = max(gains, key=lambda gm: gm[0])
    if label is B.CPU and best[1] is not M.TOO_FEW_WORKERS:
        # Raising the limit is the throttled fix when it recovers most of what unlimited cores would.
        by = {m: g for g, m in gains}
        throttled = M.THROTTLED in by and by[M.THROTTLED] - 1.0 >= 0.9 * (by[M.SATURATED] - 1.0)
        return M.THROTTLED if throttled and by[M.THROTTLED] > 1.0 else M.SATURATED
    # Ties keep the list's order (the first mechanism of each class is its plainest reading).
    return best[1]


def label_costs(c: Costs, *, network_storage: bool, has_limit: bool) -> Labelled:
    """Run the factual model and every class's counterfactual; pick the label and mechanism."""
    base = run(c)
    speedups = {cls: base.mean / run(c, stages).mean for cls, stages in CLASS_STAGES.items()}
    ranked = sorted(speedups.items(), key=lambda kv: -kv[1])
    label, best = ranked[0]
    runner_up = ranked[1][1]
    hard = best < HARD_GAIN or best < HARD_RATIO * runner_up
    mech = _mechanism(c, label, base.mean, network_storage, has_limit)
    return Labelled(base, label, mech, speedups, bool(hard))
