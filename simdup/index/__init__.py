"""A persistent fingerprint index in SQLite: incremental adds, queries and rescans.

A SimHash fingerprint is a few machine words, so a whole collection's fingerprints fit in
a small database that grows with the collection (the seeds' point about massive, growing
corpora). The index keeps, per document:

* the fingerprint, one signed 64-bit column per 64-bit word (``fp0``, ``fp1``, ...): the
  uint64 words are stored as their int64 view, which SQLite holds exactly;
* one blocking key per table (``k0``, ``k1``, ...), each an indexed integer column, so a
  query is one index lookup per table, never a scan of the whole table; the tables are
  planned on the first documents added (:mod:`~simdup.index.keys`) unless the user names
  them;
* its sparse weight vector, compactly: a blob of ids into a ``features`` table and a blob
  of weights, each in the narrowest type that holds it exactly (term counts take one
  byte each), so queries and rescans report the true cosine, bit for bit as a scan of
  the files would;
* what an incremental ``add`` needs: the file's size and modification time (a file whose
  stat is unchanged is not read again) and a BLAKE2b hash of its text (a file whose text
  is unchanged is not fingerprinted again).

The settings that define a fingerprint (:func:`simdup.fingerprints.listing.fingerprint_settings`)
are recorded when the index is created, and every later use must match them exactly:
fingerprints made with other settings are not comparable. ``tfidf`` weighting is refused:
its weights depend on document frequencies across the whole corpus, which change with
every add, so stored fingerprints would silently go stale.

The index is a package of rooms, one floor above the other (each imports only lower
floors): :mod:`~simdup.index.packing` (names, signed words, packed weights),
:mod:`~simdup.index.keys` (the blocking tables stored, planned on the first documents),
:mod:`~simdup.index.schema` (the file, its version and settings, opening checks),
:mod:`~simdup.index.store` (the connection, transactions, rows),
:mod:`~simdup.index.writing` (add, prune, remove), :mod:`~simdup.index.reading` (load,
scan, statistics), :mod:`~simdup.index.query` (stored near-duplicates of new documents),
:mod:`~simdup.index.transfer` (export, import), and :mod:`~simdup.index.handle`, whose
:class:`FingerprintIndex` is the public face composing them.

Safety: the database runs in WAL mode (readers never wait for the writer), each ``add``
commits in batches of whole documents, and writers take the write lock up front
(``BEGIN IMMEDIATE``) and wait up to a busy timeout for one another; a process killed in
the middle of an add leaves the last committed batch. The schema version is kept in
``PRAGMA user_version`` and the file is marked with an ``application_id``, so a file that
is not an index, or an index from a newer simdup, is refused with a clear message.
"""

from simdup.index.handle import FingerprintIndex, open_index
from simdup.index.packing import (
    decode_name,
    encode_name,
    pack_weights,
    same_tables,
    text_digest,
    to_signed,
    to_unsigned,
    unpack_weights,
)
from simdup.index.schema import (
    APPLICATION_ID,
    SCHEMA_VERSION,
    IndexFileError,
    IndexLockedError,
    IndexSettingsError,
    SimdupIndexError,
    check_weighting_storable,
    default_db,
    index_exists,
    integrity,
    settings_to_params,
)
from simdup.index.store import SQL_VARIABLES
from simdup.index.writing import RACY_SECONDS, AddReport
from simdup.params import BATCH_DOCUMENTS, DB_ENV, DEFAULT_DB, DEFAULT_TIMEOUT

__all__ = [
    "APPLICATION_ID",
    "BATCH_DOCUMENTS",
    "DB_ENV",
    "DEFAULT_DB",
    "DEFAULT_TIMEOUT",
    "RACY_SECONDS",
    "SCHEMA_VERSION",
    "SQL_VARIABLES",
    "AddReport",
    "FingerprintIndex",
    "IndexFileError",
    "IndexLockedError",
    "IndexSettingsError",
    "SimdupIndexError",
    "check_weighting_storable",
    "decode_name",
    "default_db",
    "encode_name",
    "index_exists",
    "integrity",
    "open_index",
    "pack_weights",
    "same_tables",
    "settings_to_params",
    "text_digest",
    "to_signed",
    "to_unsigned",
    "unpack_weights",
]
