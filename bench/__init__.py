"""Benchmarks that print figures (`make bench`). Never timed assertions: the machines are shared and noisy."""
