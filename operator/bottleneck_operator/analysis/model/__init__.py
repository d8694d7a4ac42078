"""The classifier: gradient-boosted trees kept as plain arrays, their training and their envelope."""
