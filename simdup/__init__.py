"""simdup: near-duplicate text detection with SimHash fingerprints.

The public API, one name per pipeline stage; see the README for a tour.

Names are imported when first used (PEP 562), so ``import simdup`` costs nothing until
then: the command line's entry point, ``simdup.cli.main``, is then in charge before numpy
and the pipeline load, and Ctrl-C during that load is handled like any other.
"""

__version__ = "0.1.0"

TYPE_CHECKING = False  # mypy reads the imports below; at run time __getattr__ provides them
if TYPE_CHECKING:
    from simdup.blocking import candidate_pairs, candidates
    from simdup.errors import InputError, ParameterError, SimdupError
    from simdup.model import Document, Pair, Params, ScanResult, Skip
    from simdup.pipeline import clusters, find_duplicates
    from simdup.simhash import fingerprint, fingerprint_many
    from simdup.tokens import tokenize
    from simdup.verify import cosine, estimate_cosine, hamming
    from simdup.weights import term_weights, weight_matrix

#: Where each public name is defined.
_SOURCES = {
    "candidate_pairs": "blocking",
    "candidates": "blocking",
    "InputError": "errors",
    "ParameterError": "errors",
    "SimdupError": "errors",
    "Document": "model",
    "Pair": "model",
    "Params": "model",
    "ScanResult": "model",
    "Skip": "model",
    "clusters": "pipeline",
    "find_duplicates": "pipeline",
    "fingerprint": "simhash",
    "fingerprint_many": "simhash",
    "tokenize": "tokens",
    "cosine": "verify",
    "estimate_cosine": "verify",
    "hamming": "verify",
    "term_weights": "weights",
    "weight_matrix": "weights",
}


def __getattr__(name: str) -> object:
    """Import a public name from its module on first use."""
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module 'simdup' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"simdup.{source}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_SOURCES})


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
