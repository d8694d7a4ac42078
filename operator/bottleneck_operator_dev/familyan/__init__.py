"""Family AN: labelled GPU-training telemetry from a catalogue of workloads whose runs change over time.

Written blind (from the data contract, shared/DESIGN.md and shared/TELEMETRY.md alone) and stored
unread for one evaluation; see docs/familyan.md.
"""

from __future__ import annotations

from bottleneck_operator_dev.familyan.generate import FamilyANJob, generate_family_an

__all__ = ["FamilyANJob", "generate_family_an"]
