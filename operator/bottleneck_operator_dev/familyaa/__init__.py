"""Family AA: blind evaluation jobs from a structural causal model of a training Job.

Cluster and workload are drawn from published figures, stage times follow from physical
relations, a hidden Markov chain of regimes moves the Job inside the window, the exporters' noise
is drawn jointly through a Gaussian copula, and each job is labelled by intervention: the stage
whose removal shortens the mean step most. See docs/familyaa.md.
"""

from __future__ import annotations

from bottleneck_operator_dev.familyaa.generate import FamilyAAJob, generate_family_aa

__all__ = ["FamilyAAJob", "generate_family_aa"]
