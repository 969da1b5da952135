"""``simdup dedupe`` outputs of a dataset: the kept records (``-o``) and the removals."""

from __future__ import annotations

import sys
from typing import Any, BinaryIO

from simdup.cli.status import RunError, user_errors
from simdup.dedupe.jsonl import Records


def is_parquet(path: str) -> bool:
    """Tell whether an output's name asks for Parquet."""
    return path.lower().endswith(".parquet")


def _kept_to(dataset: Records, removed: Any, handle: BinaryIO, *, gz: bool) -> None:
    """Write the kept lines to ``handle`` (gzip-compressed with ``gz``), or the kept rows."""
    from simdup.dedupe.jsonl import Dataset, compressed, write_kept

    if not isinstance(dataset, Dataset):
        from simdup.dedupe.tables import TableDataset, write_kept_rows

        assert isinstance(dataset, TableDataset)
        with user_errors():
            write_kept_rows(dataset, removed, handle)
    elif gz:
        with compressed(handle) as zipped:
            write_kept(dataset, removed, zipped)
    else:
        write_kept(dataset, removed, handle)


def _removed_to(
    records: list[dict[str, Any]], handle: BinaryIO, *, gz: bool, parquet: bool
) -> None:
    """Write the removal records to ``handle`` (gzip-compressed with ``gz``; or Parquet)."""
    from simdup.cli.output import encode_output
    from simdup.dedupe.jsonl import compressed
    from simdup.report.dedupe import RECORD_TYPES, to_jsonl

    if parquet:
        from simdup.inputs.tables import write_records

        with user_errors():
            write_records(records, RECORD_TYPES, handle)
        return
    data = encode_output(to_jsonl(records))
    if gz:
        with compressed(handle) as zipped:
            zipped.write(data)
    else:
        handle.write(data)


def write_dataset(
    dataset: Records,
    removed: Any,
    records: list[dict[str, Any]],
    kept_path: str | None,
    removed_path: str | None,
) -> None:
    """Write KEPT (``-o``) and REMOVED (``--removed``), renamed into place together."""
    from simdup.atomic import atomic_files
    from simdup.text.display import printable

    files = [p for p in (kept_path, removed_path) if p not in (None, "-")]
    stdout: BinaryIO = sys.stdout.buffer
    try:
        with atomic_files(files) as handles:
            opened = dict(zip(files, handles, strict=True))
            if kept_path is not None:
                gz = kept_path.lower().endswith(".gz")
                _kept_to(dataset, removed, opened.get(kept_path, stdout), gz=gz)
            if removed_path is not None:
                gz = removed_path.lower().endswith(".gz")
                handle = opened.get(removed_path, stdout)
                _removed_to(records, handle, gz=gz, parquet=is_parquet(removed_path))
    except OSError as exc:
        names = ", ".join(printable(f) for f in files) or "standard output"
        raise RunError(f"cannot write {names}: {(exc.strerror or str(exc)).lower()}") from exc
