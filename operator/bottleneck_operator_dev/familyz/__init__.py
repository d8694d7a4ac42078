"""Family Z: labelled Job windows from the closed loop of the feedback controllers that shape a node.

Each pod is simulated in one-second ticks with the CFS bandwidth controller, the GPU's power and
clock governor, TCP congestion control (or RDMA), the kernel's memory reclaim, a DataLoader's
bounded prefetch queue fed by a block device or network storage, NCCL's bucketed all-reduce and
the kernels' roofline. The label is where the training loop's main thread was blocked or busy for
the largest share of the window. See docs/familyz.md.
"""

from bottleneck_operator_dev.familyz.family import FamilyZJob, generate_family_z

__all__ = ["FamilyZJob", "generate_family_z"]
