"""Family R: a blind evaluation family of labelled job windows, written from first principles.

Written without reading the project's analysis, simulators or other families: it starts from how
real fleets go wrong and from the workloads teams run, models a training step's stages, labels each
window by the stage whose removal shortens its steps most, and then publishes what the exporters
would. See docs/familyr.md.
"""

from bottleneck_operator_dev.familyr.generate import FamilyRJob, generate_family_r

__all__ = ["FamilyRJob", "generate_family_r"]
