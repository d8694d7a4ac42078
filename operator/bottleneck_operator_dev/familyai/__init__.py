"""Family AI: labelled telemetry windows from a model of the training step, written blind.

Each Job's step is a set of overlapping stages (storage reads, CPU decoding, host-to-device copies,
kernel dispatch, dense and memory-bound kernels, collectives over PCIe, NVLink and the network,
host memory stalls) on machines drawn from datasheet figures; its label is the class whose stages,
made ample, speed the step up most. The exporters then sample what the stages did, the way
dcgm-exporter, cAdvisor, kube-state-metrics, node-exporter and the collector would, and the
contract's sampler reads them into a :class:`~bottleneck_operator.contract.window.JobWindow`.

Modules: :mod:`.hardware` and :mod:`.workloads` (published figures), :mod:`.plan` (what a Job
draws), :mod:`.aims` (making one resource scarce), :mod:`.timeline` (the Job's life),
:mod:`.stepmodel` (stages, step, measured label), :mod:`.accounting` and :mod:`.observed` (what the
stages leave in counters), :mod:`.scrapeconfig`, :mod:`.exporters` and :mod:`.podsignals` (the
monitoring stack), :mod:`.jobs` (the public entry point). See docs/familyai.md.
"""

from bottleneck_operator_dev.familyai.jobs import FamilyAIJob, generate_family_ai

__all__ = ["FamilyAIJob", "generate_family_ai"]
