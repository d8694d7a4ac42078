"""Family I: a blind evaluation family of labelled training jobs (see docs/familyi.md).

Written from the data contract, public datasheets and kernel/exporter documentation only, without
reading the project's analysis or its other scenario families, and stored for evaluation: nothing
is tuned against it. Imports only :mod:`bottleneck_operator.contract`, numpy and the standard library.
"""

from bottleneck_operator_dev.familyi.generate import FamilyIJob, generate_family_i

__all__ = ["FamilyIJob", "generate_family_i"]
