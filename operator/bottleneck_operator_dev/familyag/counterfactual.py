"""Labels by counterfactual: run the same Job again with one class's stages made ample.

The class whose stages, made ample, shorten the mean step the most is the label; within it, the
stage that shortens it most names the mechanism (for IO the storage's kind, for CPU what limits the
loader). A Job whose best class barely beats the runner-up, or barely helps at all, is too close to
call: the generator draws it again or tags it ``hard``.
"""

from __future__ import annotations

from dataclasses import dataclass

from bottleneck_operator.contract.verdict import CLASSES, Bottleneck, Mechanism
from bottleneck_operator_dev.familyag.host import host_costs
from bottleneck_operator_dev.familyag.scenario import Scenario
from bottleneck_operator_dev.familyag.stages import step_costs
from bottleneck_operator_dev.familyag.timeline import simulate

CLASS_STAGES: dict[Bottleneck, tuple[str, ...]] = {
    Bottleneck.IO: ("storage",),
    Bottleneck.CPU: ("cpu",),
    Bottleneck.INTERCONNECT: ("pcie", "nvlink", "network"),
    Bottleneck.GPU: ("compute", "launch"),
    Bottleneck.MEMORY: ("hbm", "host-memory"),
}
STAGE_MECHANISM: dict[str, Mechanism] = {
    "pcie": Mechanism.PCIE,
    "nvlink": Mechanism.NVLINK,
    "network": Mechanism.NETWORK,
    "compute": Mechanism.COMPUTE,
    "launch": Mechanism.LAUNCH_BOUND,
    "hbm": Mechanism.HBM_BANDWIDTH,
    "host-memory": Mechanism.HOST_MEMORY_PRESSURE,
}
# A label is clear when its class shortens the step by at least this much ...
MIN_GAIN = 0.15
# ... and by this much more than the runner-up (both as shares of the step).
MIN_MARGIN = 0.10


@dataclass(frozen=True)
class Outcome:
    """What the counterfactual runs found for one Job.

    Attributes:
        label: the class whose ample stages shorten the step most.
        mechanism: how it limits the Job (one of the contract's mechanisms of that class).
        gains: class -> share of the step removed when its stages are ample.
        step_s: the mean step time as drawn.
    """

    label: Bottleneck
    mechanism: Mechanism
    gains: dict[Bottleneck, float]
    step_s: float

    @property
    def margin(self) -> float:
        """How much more the label's class shortens the step than the runner-up."""
        ranked = sorted(self.gains.values(), reverse=True)
        return ranked[0] - ranked[1]

    @property
    def clear(self) -> bool:
        """Whether the label is clear enough to call (else the Job is hard)."""
        return self.gains[self.label] >= MIN_GAIN and self.margin >= MIN_MARGIN


def step_time(sc: Scenario, ample: frozenset[str] = frozenset()) -> float:
    """The Job's mean step time with ``ample`` stages made ample."""
    return simulate(step_costs(sc, ample), sc.gpus_per_pod).step_s


def _cpu_mechanism(sc: Scenario) -> Mechanism:
    """What starves the loader of CPU: the CFS quota, the node's cores, or too few worker processes."""
    hc = host_costs(sc)
    if hc.wanted_cores <= hc.avail_cores * 0.9:
        return Mechanism.TOO_FEW_WORKERS
    if sc.cpu_limit is not None and hc.avail_cores >= sc.cpu_limit - 1e-9:
        return Mechanism.THROTTLED
    return Mechanism.SATURATED


def _mechanism(sc: Scenario, label: Bottleneck, base: float) -> Mechanism:
    if label is Bottleneck.IO:
        return Mechanism.LOCAL_DISK if sc.storage.local else Mechanism.NETWORK_STORAGE
    if label is Bottleneck.CPU:
        return _cpu_mechanism(sc)
    best, stage_of_best = -1.0, CLASS_STAGES[label][0]
    for stage in CLASS_STAGES[label]:
        gain = 1.0 - step_time(sc, frozenset((stage,))) / base
        if gain > best:
            best, stage_of_best = gain, stage
    return STAGE_MECHANISM[stage_of_best]


def judge(sc: Scenario) -> Outcome:
    """Run the Job as drawn and once per class with that class's stages ample; name the label.

    Args:
        sc: the Job.

    Returns:
        The label, its mechanism, each class's gain and the drawn step time.
    """
    base = step_time(sc)
    gains = {c: max(0.0, 1.0 - step_time(sc, frozenset(CLASS_STAGES[c])) / base) for c in CLASSES}
    label = max(CLASSES, key=lambda c: gains[c])
    return Outcome(label, _mechanism(sc, label, base), gains, base)
