"""Fingerprints to pairs: tables, buckets, candidates, exact scans, verification, results."""
