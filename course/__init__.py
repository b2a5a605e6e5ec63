"""Build and test helpers for the course site (not shown to readers)."""
