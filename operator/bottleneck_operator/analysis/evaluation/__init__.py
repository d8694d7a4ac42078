"""Scoring verdicts against ground truth: figures, invariants and the threshold baseline."""
