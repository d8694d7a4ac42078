"""Family AL: synchronous data-parallel training Jobs simulated iteration by iteration, rank by rank.

Written blind, for evaluation only (see docs/familyal.md). Each Job is a set of ranks over several
pods whose step is the slowest rank's, with heavy-tailed per-iteration costs (sample sizes and
padding, storage latency tails, page-cache misses, pauses, stragglers, neighbours, congested
fabrics); its label is the class whose stage, made ample on every rank with the same draws, speeds
the Job up most. Its telemetry is derived from the simulated activity with the exporters' semantics.
"""

from __future__ import annotations

from bottleneck_operator_dev.familyal.job import FamilyALJob, generate_family_al

__all__ = ["FamilyALJob", "generate_family_al"]
