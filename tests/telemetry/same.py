"""What two reads of the same data are compared on."""

from __future__ import annotations

from bottleneck_operator.contract.verdict import Abstention, Bottleneck, Verdict


def favoured(verdict: Verdict) -> Bottleneck:
    """The class the analysis favours: the verdict's own, or where the model was merely not confident
    enough to name one, the class it leaned to. Two exporters' readings of one window differ by a
    hair, and a class a hair either side of the abstain threshold is the same reading; a data
    abstention (no pods, short window, low coverage) stays Unknown."""
    if verdict.abstention is Abstention.LOW_CONFIDENCE and verdict.secondary is not None:
        return verdict.secondary
    return verdict.bottleneck
