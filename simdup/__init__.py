"""simdup: near-duplicate text detection with SimHash fingerprints.

The public API, one name per pipeline stage; see the README for a tour.

Names are imported when first used (PEP 562), so ``import simdup`` costs nothing until
then: the command line's entry point, ``simdup.cli.main``, is then in charge before numpy
and the pipeline load, and Ctrl-C during that load is handled like any other.
"""

__version__ = "0.1.0"

TYPE_CHECKING = False  # mypy reads the imports below; at run time __getattr__ provides them
if TYPE_CHECKING:
    from simdup.engines.local import find_duplicates
    from simdup.errors import InputError, ParameterError, SimdupError
    from simdup.fingerprints.simhash import fingerprint, fingerprint_many
    from simdup.fingerprints.weights import term_weights, weight_matrix
    from simdup.model import Document, Pair, ScanResult, Skip
    from simdup.params import Params
    from simdup.search.candidates import candidate_pairs, candidates
    from simdup.search.groups import clusters
    from simdup.search.verify import cosine, estimate_cosine, hamming
    from simdup.text.tokens import tokenize

#: Where each public name is defined.
_SOURCES = {
    "candidate_pairs": "search.candidates",
    "candidates": "search.candidates",
    "InputError": "errors",
    "ParameterError": "errors",
    "SimdupError": "errors",
    "Document": "model",
    "Pair": "model",
    "Params": "params",
    "ScanResult": "model",
    "Skip": "model",
    "clusters": "search.groups",
    "find_duplicates": "engines.local",
    "fingerprint": "fingerprints.simhash",
    "fingerprint_many": "fingerprints.simhash",
    "tokenize": "text.tokens",
    "cosine": "search.verify",
    "estimate_cosine": "search.verify",
    "hamming": "search.verify",
    "term_weights": "fingerprints.weights",
    "weight_matrix": "fingerprints.weights",
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
