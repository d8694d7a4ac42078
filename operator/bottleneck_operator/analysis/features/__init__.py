"""Features: a window's signals turned into derived series that mean the same on any cluster, then into one row.

:mod:`.extract` builds the rows the classifier reads; :mod:`.summary` and :mod:`.phases` give the
whole-job totals and the training phases that the explanations read.
"""
