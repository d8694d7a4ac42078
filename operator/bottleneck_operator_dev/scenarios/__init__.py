"""A second, independently written scenario family: windows with ground truth from outside the simulator.

It shares nothing with :mod:`bottleneck_operator_dev.simulation` but the output contract
(:class:`~bottleneck_operator.contract.window.JobWindow`): its own stage-time model
(:mod:`.stages`), hardware mix (:mod:`.hardware`), per-tick physics (:mod:`.ticks`) and exporter
sampling and noise (:mod:`.render`). Each job carries its class and the mechanism behind it.
"""

from bottleneck_operator_dev.scenarios.family import ScenarioJob, generate_family
from bottleneck_operator_dev.scenarios.plans import MECHANISMS

__all__ = ["MECHANISMS", "ScenarioJob", "generate_family"]
