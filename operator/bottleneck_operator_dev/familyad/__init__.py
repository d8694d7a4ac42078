"""Family AD: a blind evaluation family of training Jobs modelled as closed queueing networks.

Each Job's step circulates through stations (storage, loader cores, host memory, PCIe, the host
thread issuing kernels, the GPU's SMs and HBM, NVLink, the network); the label is the class of the
station with the largest service demand per server, by the operational laws. See docs/familyad.md.
"""

from .family import FamilyADJob, generate_family_ad

__all__ = ["FamilyADJob", "generate_family_ad"]
