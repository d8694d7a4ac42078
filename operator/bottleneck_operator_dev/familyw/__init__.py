"""Family W: a blind evaluation family of labelled Job windows (see docs/familyw.md).

A time-stepped stochastic fluid simulation of each Job's input pipeline and training loop, with
finite buffers and back-pressure, sampled the way the exporters sample; labelled by which
resource, doubled for the Job alone, raises its steps per second most.

Modules, by concern: :mod:`.hardware` and :mod:`.workloads` (published figures), :mod:`.processes`
(other tenants and phases), :mod:`.model` (a Job and its stage rates), :mod:`.plan` (drawing and
shaping a Job), :mod:`.fluid` (the integration), :mod:`.label` (the counterfactual label),
:mod:`.exporters` (what the collectors show), :mod:`.family` (the entry point).
"""

from bottleneck_operator_dev.familyw.family import FamilyWJob, generate_family_w

__all__ = ["FamilyWJob", "generate_family_w"]
