"""Family X, a blind evaluation family: each training step a task graph scheduled on the Job's
resources, labelled by the resource class holding the largest share of the critical path, and read
by the exporters as they really read a GPU node (see docs/familyx.md)."""

from bottleneck_operator_dev.familyx.family import FamilyXJob, generate_family_x

__all__ = ["FamilyXJob", "generate_family_x"]
