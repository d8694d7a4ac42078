"""Family T: blind evaluation jobs built from analytic performance models composed into a step.

Each job's step is composed from per-stage models (kernels on the GPU's roofline, alpha-beta
collectives, a k-worker input queue, host memory against the cgroup limit, h2d copies at the link's
rate); its label is the class of the stage whose removal shortens the step most. See docs/familyt.md.
"""

from bottleneck_operator_dev.familyt.generate import FamilyTJob, generate_family_t

__all__ = ["FamilyTJob", "generate_family_t"]
