"""simdup: near-duplicate text detection with SimHash fingerprints."""

__version__ = "0.1.0"
