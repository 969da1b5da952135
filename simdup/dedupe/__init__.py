"""Deduplication: keep one document of each near-duplicate group, remove the rest."""
