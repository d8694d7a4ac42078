"""Family Y: Job windows labelled by the shadow prices of a linear program over shared resources.

Written blind (see docs/familyy.md): it imports the data contract, numpy and scipy's LP solver only.
"""

from .generate import FamilyYJob, generate_family_y

__all__ = ["FamilyYJob", "generate_family_y"]
