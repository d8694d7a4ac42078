"""Family AK: a blind evaluation family, stored unread until the class path is frozen.

Each Job is a discrete-time simulation of a data-parallel PyTorch training loop (DataLoader
workers over a drawn storage and CPU limit, a prefetch queue, host-to-device copies, kernel
launches, the GPU's roofline, a gradient all-reduce over NVLink, PCIe or the fabric, host memory
pressure), labelled by counterfactual runs with one stage made ample at a time, and rendered as the
exporters would publish it. See docs/familyak.md.
"""

from bottleneck_operator_dev.familyak.generate import FamilyAKJob, generate_family_ak

__all__ = ["FamilyAKJob", "generate_family_ak"]
