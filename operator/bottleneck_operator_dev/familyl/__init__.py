"""Family L: a blind evaluation family of labelled training-job windows.

Written from the data contract (``bottleneck_operator.contract``) and public documentation alone,
without reading the project's analysis or its other scenario families; see docs/familyl.md. The
label of each job is the class of the stage whose removal shortens its step most, in this
package's own step model (:mod:`.stages`).
"""

from bottleneck_operator_dev.familyl.generate import FamilyLJob, generate_family_l

__all__ = ["FamilyLJob", "generate_family_l"]
