"""Plan: what to ask Prometheus (names, selectors, the grid, the catalog, discovery)."""
