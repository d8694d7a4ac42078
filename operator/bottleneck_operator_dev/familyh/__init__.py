"""Family H: a blind evaluation family of labelled training-job windows.

Written from the data contract, public datasheets and kernel/DCGM documentation alone, without
reading the analysis, the simulator or any other family; stored for a later, single reading.
See docs/familyh.md.
"""

from bottleneck_operator_dev.familyh.generate import FamilyHJob, generate_family_h

__all__ = ["FamilyHJob", "generate_family_h"]
