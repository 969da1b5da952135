"""The parameters that shape a run, and the names and checks they are validated with.

:class:`Params` holds every setting that changes which pairs a scan reports; it validates
itself on construction, so a bad value fails before any file is read and the command line
and the library share one source of defaults.

The vocabulary of the settings (weightings, schemes, segmentation modes, stop-word lists,
the range of widths and seeds) lives here, below every stage, so that the stages acting
on a setting and the settings themselves take it from one place.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import sys
from dataclasses import dataclass
from typing import Any, Literal

from simdup.errors import ParameterError

#: The width of the JavaScript reference, and the width ``bits="auto"`` stands for
#: wherever one must be fixed (:attr:`Params.fixed_bits`): everything that stores or
#: compares fingerprints across runs (fingerprint, match, index, compare).
REFERENCE_BITS = 64

#: Seeds are JavaScript integers: exact below 2**53, printed in decimal.
MAX_SEED = 2**53

Weighting = Literal["tf", "log", "binary", "tfidf"]
WEIGHTINGS: tuple[Weighting, ...] = ("tf", "log", "binary", "tfidf")

#: Named block schemes and their block counts.
SCHEMES: dict[str, int] = {"strict": 1, "balanced": 4, "loose": 8}

#: The values of ``scheme``: a named one, or ``auto`` (planned from the threshold).
SCHEME_CHOICES: tuple[str, ...] = (*SCHEMES, "auto")

#: Ways to cut runs of Han characters: ``words`` needs the extra, ``auto`` uses it when
#: installed, ``bigrams`` never does.
SEGMENT_MODES: tuple[str, ...] = ("auto", "bigrams", "words")

#: The module the ``zh`` extra installs (:mod:`simdup.text.segment`).
SEGMENTER_MODULE = "rjieba"

#: What to install for word segmentation, for messages.
INSTALL_HINT = "pip install 'simdup[zh]'"

#: Languages with a noise-word list, which the guess chooses among. The order breaks
#: ties: languages with the most text on the web first, then the rest of the collection
#: alphabetically.
LANGUAGES: tuple[str, ...] = (
    "en", "zh", "es", "de", "fr", "ja", "ru", "pt", "it", "nl", "pl", "tr", "ar", "ko",
    "af", "bg", "bn", "br", "ca", "cs", "da", "el", "eo", "et", "eu", "fa", "fi", "ga",
    "gl", "gu", "ha", "he", "hi", "hr", "hu", "hy", "id", "la", "lt", "lv", "mr", "ms",
    "no", "ro", "sk", "sl", "so", "st", "sv", "sw", "th", "tl", "uk", "ur", "vi", "yo",
    "zu",
)  # fmt: skip

#: The stop-word setting that guesses each document's language.
AUTO = "auto"

# -- Settings beyond Params, here so the command line declares its options without loading
# -- the stages that act on them (``simdup --help`` stays instant) -------------------------

#: Default largest file read, in bytes (after gzip decompression).
DEFAULT_MAX_SIZE = 8 * 1024 * 1024

#: The command line's default ``--min-size`` and ``--min-features``: stubs (``.so man7/...``
#: pages, empty ``__init__.py``) are not compared. Measured on /usr/share/man, /usr/share/doc
#: and the Python standard library (README, "Small documents").
DEFAULT_MIN_SIZE = 0
DEFAULT_MIN_FEATURES = 8

#: How a file's text is read (:mod:`simdup.text.markup`): ``auto`` by its name, or as
#: plain text, HTML/XML, Markdown or a troff manual page.
TEXT_MODES: tuple[str, ...] = ("auto", "plain", "html", "markdown", "man")

SortKey = Literal["cosine", "hamming", "path"]

#: Orders of a pair report.
#: How ``--clusters`` groups: around a representative (the default), or single-link chains.
CLUSTER_KINDS = ("representative", "linked")
ClusterKind = Literal["representative", "linked"]

SORT_KEYS: tuple[SortKey, ...] = ("cosine", "hamming", "path")

#: Links ``dedupe --link`` replaces a removed file with.
LINK_KINDS: tuple[str, ...] = ("hard", "symbolic")

#: Keep policies: which document of a near-duplicate group stays.
KEEP_POLICIES: tuple[str, ...] = ("first", "last", "longest", "shortest", "newest", "oldest")

#: Fingerprint widths an evaluation sweeps by default: the seed's table.
EVAL_BITS: tuple[int, ...] = (8, 16, 32, 64, 128, 256, 512)

#: Independent hash seeds per width of an evaluation (the seed's 300-seed sweep).
EVAL_HASH_SEEDS = 300

#: Default file name of an index, and the environment variable overriding it.
DEFAULT_DB = "simdup.db"
DB_ENV = "SIMDUP_DB"

#: Seconds an index writer waits for another writer's lock before giving up.
DEFAULT_TIMEOUT = 30.0

#: Documents written per transaction by an index add.
BATCH_DOCUMENTS = 2000


def check_bits(bits: object) -> int:
    """Return ``bits`` if it is a positive integer, else raise :class:`ParameterError`."""
    if isinstance(bits, bool) or not isinstance(bits, int) or bits < 1:
        raise ParameterError(f"bits must be a positive integer, got {bits!r}")
    return bits


def check_seed(seed: int) -> int:
    """Return ``seed`` if 0 <= seed < 2**53 (JavaScript prints it exactly), else raise."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < MAX_SEED:
        raise ParameterError(f"seed must be an integer with 0 <= seed < 2**53, got {seed!r}")
    return seed


def check_weighting(weighting: str) -> Weighting:
    """Return ``weighting`` if simdup knows it.

    Raises:
        ParameterError: naming the value and the choices.
    """
    if weighting not in WEIGHTINGS:
        raise ParameterError(
            f"unknown weighting {weighting!r}; choose one of: {', '.join(WEIGHTINGS)}"
        )
    return weighting


def zh_extra_installed() -> bool:
    """Tell whether the ``simdup[zh]`` extra is installed, without importing it.

    Asked for every document fingerprinted, so the search of the import path (about
    2 ms) is done once per process; a module already imported, or blocked (``None`` in
    ``sys.modules``), answers from there.
    """
    if SEGMENTER_MODULE in sys.modules:
        return sys.modules[SEGMENTER_MODULE] is not None
    return _segmenter_found()


@functools.cache
def _segmenter_found() -> bool:
    try:
        return importlib.util.find_spec(SEGMENTER_MODULE) is not None
    except (ImportError, ValueError):
        return False


def check_segment(mode: str) -> str:
    """Return the segmentation ``mode`` if it can be used here.

    Raises:
        ParameterError: for an unknown mode, or ``words`` without the extra.
    """
    if mode not in SEGMENT_MODES:
        raise ParameterError(
            f"unknown segmentation {mode!r}; choose one of: {', '.join(SEGMENT_MODES)}"
        )
    if mode == "words" and not zh_extra_installed():
        raise ParameterError(
            f"segmenting Chinese into words needs the zh extra: {INSTALL_HINT}, "
            "or use --segment bigrams"
        )
    return mode


@dataclass(frozen=True)
class StopwordSetting:
    """A parsed stop-word setting.

    Attributes:
        auto: Guess each document's language; remove its list plus English.
        languages: With ``auto`` False, the lists always removed (empty: none).
    """

    auto: bool
    languages: tuple[str, ...]

    @property
    def name(self) -> str | bool:
        """Return the canonical spelling: ``"auto"``, ``False`` or codes joined by commas."""
        if self.auto:
            return AUTO
        return ",".join(self.languages) or False

    def uses_data_package(self) -> bool:
        """Tell whether the setting reads lists from the stop-word data package.

        Every list but English's comes from it (:data:`simdup.text.languages.DATA_PACKAGE`).
        """
        return self.auto or any(code != "en" for code in self.languages)


def parse_setting(stopwords: bool | str) -> StopwordSetting:
    """Return the setting named by ``stopwords``.

    ``True`` is English (the library's historical default), ``False``, ``"none"`` and
    ``""`` keep every word, ``"auto"`` guesses per document, and ``"de"`` or ``"de,fr"``
    always remove those lists (in :data:`LANGUAGES` order, duplicates dropped).

    Raises:
        ParameterError: for a code simdup has no list for.

    >>> parse_setting("fr,de").name, parse_setting(True).name, parse_setting("none").name
    ('de,fr', 'en', False)
    """
    if stopwords is True:
        return StopwordSetting(False, ("en",))
    if stopwords is False:
        return StopwordSetting(False, ())
    if not isinstance(stopwords, str):
        raise ParameterError(
            f"stopwords must be auto, none, a language code or codes joined by commas, "
            f"got {stopwords!r}"
        )
    value = stopwords.strip().lower()
    if value == AUTO:
        return StopwordSetting(True, ())
    codes = {c.strip() for c in value.split(",")} - {"", "none"}
    unknown = sorted(codes - set(LANGUAGES))
    if unknown:
        raise ParameterError(
            f"no stop-word list for {', '.join(map(repr, unknown))}; use auto, none or "
            f"codes from: {', '.join(LANGUAGES)}"
        )
    return StopwordSetting(False, tuple(c for c in LANGUAGES if c in codes))


@dataclass(frozen=True)
class Params:
    """Settings that determine fingerprints, candidates and reported pairs.

    Attributes:
        bits: Fingerprint width, or ``"auto"`` (the default): a scan's planner prices
            64, 128, 256 and 512 bits and keeps the cheapest that reaches the recall;
            anything that needs a fixed width uses :attr:`fixed_bits`, the reference's.
        seed: Hash seed, 0 <= seed < 2**53.
        weighting: ``tf``, ``log``, ``binary`` or ``tfidf``.
        ngram: Word shingle size (1 = single words).
        stopwords: Noise words removed before weighting: ``"auto"`` (the list of each
            document's guessed language plus English), language codes joined by commas
            (``"de,fr"``: those lists always), ``False`` or ``"none"`` (keep every word).
            ``True`` is accepted for compatibility and means ``"en"``.
        segment: How runs of Han characters become features: ``"auto"`` (words when the
            ``zh`` extra is installed, else bigrams), ``"words"`` or ``"bigrams"``.
        scheme: ``strict``, ``balanced``, ``loose`` or ``auto`` (planned from threshold).
        blocks: Explicit block count; overrides ``scheme``.
        max_distance: Find every pair within this Hamming distance; overrides both.
        threshold: Report pairs whose true cosine is at least this.
        recall: With ``auto``: the probability of finding a pair at the threshold.
        min_features: Documents with fewer distinct features are skipped, not compared
            (stubs such as ``.so man7/...`` pages; 0: every document with a feature).
    """

    bits: int | Literal["auto"] = "auto"
    seed: int = 12345
    weighting: str = "tf"
    ngram: int = 1
    stopwords: bool | str = "auto"
    segment: str = "auto"
    scheme: str = "auto"
    blocks: int | None = None
    max_distance: int | None = None
    threshold: float = 0.8
    recall: float = 0.95
    min_features: int = 0

    def __post_init__(self) -> None:
        if not self.auto_bits:
            check_bits(self.bits)
        check_seed(self.seed)
        check_weighting(self.weighting)
        parse_setting(self.stopwords)
        check_segment(self.segment)  # refuses "words" without the extra, before any reading
        if isinstance(self.ngram, bool) or not isinstance(self.ngram, int) or self.ngram < 1:
            raise ParameterError(f"ngram must be an integer >= 1, got {self.ngram!r}")
        if self.scheme not in SCHEME_CHOICES:
            raise ParameterError(
                f"unknown scheme {self.scheme!r}; choose one of: {', '.join(SCHEME_CHOICES)}"
            )
        bits = self.fixed_bits
        if self.blocks is not None and not 1 <= self.blocks <= bits:
            raise ParameterError(
                f"blocks must be from 1 to bits ({bits}), got {self.blocks}; "
                "use fewer blocks or more bits"
            )
        if self.max_distance is not None and not 0 <= self.max_distance < bits:
            raise ParameterError(
                f"max distance must be from 0 to bits - 1 ({bits - 1}), got {self.max_distance}"
            )
        if not 0.0 <= self.threshold <= 1.0:
            raise ParameterError(f"threshold must be within [0, 1], got {self.threshold}")
        if not 0.0 < self.recall <= 1.0:
            raise ParameterError(f"recall must be within (0, 1], got {self.recall}")
        if isinstance(self.min_features, bool) or not isinstance(self.min_features, int):
            raise ParameterError(f"min features must be an integer, got {self.min_features!r}")
        if self.min_features < 0:
            raise ParameterError(f"min features must not be negative, got {self.min_features}")

    @property
    def auto_bits(self) -> bool:
        """Tell whether the planner chooses the width (``bits="auto"``)."""
        return self.bits == "auto"

    @property
    def fixed_bits(self) -> int:
        """Return the width to use where one must be fixed: ``bits``, or 64 for ``auto``.

        Fingerprints that are stored, matched or compared across runs are made at
        :data:`REFERENCE_BITS` when the width is ``auto``, and checks against the width
        (blocks, max distance) hold it to that.
        """
        return REFERENCE_BITS if isinstance(self.bits, str) else self.bits

    @property
    def planned(self) -> bool:
        """Tell whether the planner chooses the tables (and may scan exactly or price widths).

        That is ``scheme="auto"`` with neither ``blocks`` nor ``max_distance`` forcing them.
        """
        return self.scheme == "auto" and self.blocks is None and self.max_distance is None

    def replace(self, **changes: Any) -> Params:
        """Return a copy with some settings changed (validated again)."""
        return dataclasses.replace(self, **changes)

    @staticmethod
    def stored_settings(settings: dict[str, Any]) -> dict[str, Any]:
        """Return the :class:`Params` arguments that reproduce stored fingerprint settings.

        Settings without a ``segment`` key were made with bigrams (word segmentation
        always records itself), so they keep bigrams even where the extra is installed.

        Raises:
            KeyError: when a required setting is missing.
        """
        return {
            "bits": int(settings["bits"]),
            "seed": int(settings["seed"]),
            "weighting": str(settings["weighting"]),
            "ngram": int(settings["ngram"]),
            "stopwords": settings["stopwords"],
            "segment": "words"
            if str(settings.get("segment", "")).startswith("words")
            else "bigrams",
        }

    def as_dict(self) -> dict[str, Any]:
        """Return every setting as a JSON-ready dict, in declaration order.

        ``bits`` is ``"auto"`` when the planner chooses the width.
        """
        return dataclasses.asdict(self)
