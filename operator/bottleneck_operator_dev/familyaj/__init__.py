"""Family AJ: labelled Job windows from a shared GPU fleet, for scoring the classifier blind.

Each Job is placed on nodes of one kind among neighbours that share its CPUs, memory, disks, NICs
and storage; its training step is costed stage by stage from published hardware and workload
figures; its label is the stage that, made ample, shortens its step most; its telemetry is what
the cluster's exporters, scraped as that cluster scrapes them, would show. See docs/familyaj.md.

    from bottleneck_operator_dev.familyaj import FamilyAJJob, generate_family_aj
    jobs = generate_family_aj(seed, n, start=start, step=30.0)
"""

from bottleneck_operator_dev.familyaj.generate import FamilyAJJob, generate_family_aj

__all__ = ["FamilyAJJob", "generate_family_aj"]
