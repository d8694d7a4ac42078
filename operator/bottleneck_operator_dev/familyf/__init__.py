"""Family F: a blind evaluation family of labelled training-job windows.

Written from the data contract, the project's shared telemetry notes, vendors' datasheets and the
kernel's cgroup and PSI documentation alone, without reading the analysis or the other families.
It is stored for a later reading and nothing is tuned against it (docs/familyf.md).
"""

from bottleneck_operator_dev.familyf.jobs import FamilyFJob, generate_family_f

__all__ = ["FamilyFJob", "generate_family_f"]
