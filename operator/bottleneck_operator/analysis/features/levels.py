"""The cited levels that more than one stage of the class path reads, each declared once with its source.

A level read in one place is declared there, beside its source; one read by the features, the vetoes
and the explanations alike lives here, so that the number has one name and one citation
(docs/analysis.md, "Every number on the class path, with its source").
"""

from __future__ import annotations

# TensorBoard/XProf's input-pipeline analysis calls a step "moderately input-bound" from 5 % of it spent
# waiting (TELEMETRY.md, "Peers' rules"). Below it a stage is not waited on (the vetoes), a share of time
# is the background every busy machine shows (the stall features' dead band), and a link carrying under
# it carries no collectives to speak of.
WAITED_ON = 0.05
# DCGM's profiling-metrics documentation: DRAM_ACTIVE reaches about 0.8 at the practical peak of a
# bandwidth-bound kernel (TELEMETRY.md, "Reading the profiling metrics"); 0.89 measured on an H200
# (tests/data/gpu-hbm).
DRAM_PEAK = 0.8
