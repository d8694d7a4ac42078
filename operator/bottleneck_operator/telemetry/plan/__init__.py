"""Plan: what to ask Prometheus (names, selectors, the grid and series on it, the catalog, discovery and label layouts)."""
