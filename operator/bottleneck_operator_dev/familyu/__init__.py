"""Family U: a blind evaluation family built from contention for shared cluster resources.

Each labelled Job runs among other tenants; max-min fair sharing over a small resource graph gives
it a share of storage, CPU, host memory, PCIe, NVLink, the network, SMs and HBM, phase by phase;
its step time follows from the shares, and its label is the resource class whose doubling for this
Job alone shortens the step most. See docs/familyu.md.
"""

from bottleneck_operator_dev.familyu.generate import FamilyUJob, generate_family_u

__all__ = ["FamilyUJob", "generate_family_u"]
