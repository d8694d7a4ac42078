"""Fetch: the HTTP client, the answers decoded onto the grid, and the store they are filed into."""
