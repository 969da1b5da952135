"""Features to fingerprints: weights, the reference hash, SimHash and listings."""
