"""Inputs to documents: the walk, reading files, JSON Lines, path lists and gzip."""
