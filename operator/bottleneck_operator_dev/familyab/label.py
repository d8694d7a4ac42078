"""The label: the class whose stages, made twice as fast, shorten the mean step the most.

Each class owns stages of the step (:data:`CLASS_STAGES`); its gain is the share of the step that
halving all of them removes. The mechanism is the one of the class's stages whose halving alone
gains the most. A runner-up whose gain is within 5 % of the mean step of the winner's (gains are
shares of the step) makes the Job ``hard``: two stages bound it nearly as much.
"""

from __future__ import annotations

from dataclasses import dataclass

from bottleneck_operator.contract.verdict import MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator_dev.familyab.config import Config
from bottleneck_operator_dev.familyab.stages import Stages, step_time

CLASS_STAGES: dict[Bottleneck, tuple[str, ...]] = {
    Bottleneck.IO: ("read", "ckpt"),
    Bottleneck.CPU: ("cpu",),
    Bottleneck.INTERCONNECT: ("h2d", "intra", "inter"),
    Bottleneck.GPU: ("math", "launch", "eval"),
    Bottleneck.MEMORY: ("hbm", "host_mem", "restart"),
}
HARD_MARGIN = 0.05


@dataclass(frozen=True)
class Label:
    """The physics' answer for one Job.

    Attributes:
        bottleneck: the class with the largest gain.
        mechanism: how that class limits the step.
        hard: a runner-up's gain is within 5 % of the mean step of the winner's.
        gains: class -> share of the mean step removed by halving the class's stages.
        step_s: the mean step, seconds.
    """

    bottleneck: Bottleneck
    mechanism: Mechanism
    hard: bool
    gains: dict[Bottleneck, float]
    step_s: float


def gains(st: Stages) -> dict[Bottleneck, float]:
    """Share of the mean step each class's halved stages would remove."""
    base = step_time(st)
    return {c: 1.0 - step_time(st, dict.fromkeys(names, 0.5)) / base for c, names in CLASS_STAGES.items()}


def stage_mechanism(stage: str, cfg: Config, st: Stages) -> Mechanism:
    """The mechanism a stage stands for, in this Job."""
    if stage in ("read", "ckpt"):
        store = cfg.storage if stage == "read" else cfg.ckpt_storage
        return Mechanism.LOCAL_DISK if store.local else Mechanism.NETWORK_STORAGE
    named = {
        "cpu": Mechanism(st.cpu_bind),
        "h2d": Mechanism.PCIE,
        "intra": Mechanism.NVLINK if cfg.intra == "nvlink" else Mechanism.PCIE,
        "inter": Mechanism.NETWORK,
        "math": Mechanism.COMPUTE,
        "eval": Mechanism.COMPUTE,
        "launch": Mechanism.LAUNCH_BOUND,
        "hbm": Mechanism.HBM_BANDWIDTH,
        "host_mem": Mechanism.HOST_MEMORY_PRESSURE,
        "restart": Mechanism.HOST_MEMORY_PRESSURE,
    }
    return named[stage]


def mechanism(cls: Bottleneck, cfg: Config, st: Stages) -> Mechanism:
    """The class's stage whose halving alone gains the most, as a mechanism of the class."""
    base = step_time(st)
    best = max(CLASS_STAGES[cls], key=lambda name: base - step_time(st, {name: 0.5}))
    found = stage_mechanism(best, cfg, st)
    assert found in MECHANISMS[cls]
    return found


def label_of(cfg: Config, st: Stages) -> Label:
    """The label, mechanism and hardness the physics gives ``cfg``."""
    g = gains(st)
    ranked = sorted(g, key=lambda c: g[c], reverse=True)
    top, second = ranked[0], ranked[1]
    hard = g[top] - g[second] < HARD_MARGIN
    return Label(top, mechanism(top, cfg, st), hard, g, step_time(st))
