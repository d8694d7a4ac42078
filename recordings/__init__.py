"""Real recordings of real bottlenecks on this machine, for the tests (see README.md)."""
