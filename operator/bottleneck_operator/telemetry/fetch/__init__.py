"""Fetch: the HTTP client, answers decoded onto the grid, the store they are filed into, and the steps that ask."""
