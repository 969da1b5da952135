"""simdup: near-duplicate text detection with SimHash fingerprints.

The public API, one name per pipeline stage; see the README for a tour.
"""

__version__ = "0.1.0"

from simdup.blocking import candidate_pairs, candidates
from simdup.errors import InputError, ParameterError, SimdupError
from simdup.model import Document, Pair, Params, ScanResult, Skip
from simdup.pipeline import clusters, find_duplicates
from simdup.simhash import fingerprint, fingerprint_many
from simdup.tokens import tokenize
from simdup.verify import cosine, estimate_cosine, hamming
from simdup.weights import term_weights, weight_matrix

__all__ = [
    "Document",
    "InputError",
    "Pair",
    "ParameterError",
    "Params",
    "ScanResult",
    "SimdupError",
    "Skip",
    "__version__",
    "candidate_pairs",
    "candidates",
    "clusters",
    "cosine",
    "estimate_cosine",
    "find_duplicates",
    "fingerprint",
    "fingerprint_many",
    "hamming",
    "term_weights",
    "tokenize",
    "weight_matrix",
]
