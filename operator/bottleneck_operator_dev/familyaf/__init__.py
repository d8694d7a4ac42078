"""Family AF, written blind for evaluation only: Jobs labelled by a bulk-synchronous step model.

See docs/familyaf.md. Only numpy, the standard library and the data contract are imported.
"""

from bottleneck_operator_dev.familyaf.generate import FamilyAFJob, generate_family_af

__all__ = ["FamilyAFJob", "generate_family_af"]
