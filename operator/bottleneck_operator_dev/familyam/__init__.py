"""Family AM: training Jobs drawn by placement and topology, labelled counterfactually.

Written blind (see docs/familyam.md): it imports the data contract and numpy only.
"""

from bottleneck_operator_dev.familyam.family import FamilyAMJob, generate_family_am

__all__ = ["FamilyAMJob", "generate_family_am"]
