"""Progress displays: silent by default, documents and bytes with rate on a terminal."""

from __future__ import annotations

import contextlib
import functools
import io
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import tqdm

from simdup.cli.meter import byte_size, make_meter
from simdup.engines.local import scan_inputs
from simdup.engines.local.counting import count_inputs
from simdup.inputs.files import ReadOptions
from simdup.inputs.gather import gather_inputs
from simdup.params import Params
from simdup.progress import Advance, Meter, no_meter


class Terminal(io.StringIO):
    """A captured stderr that says it is a terminal, so tqdm draws."""

    def isatty(self) -> bool:
        return True


def test_quiet_meter_is_silent() -> None:
    assert make_meter(True) is no_meter
    with no_meter(desc="x", total=3) as advance:
        advance(3, 100)


def test_meter_shows_documents_bytes_and_rate_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch, sample_corpus: Path
) -> None:
    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    # Draw every update, not at most ten a second.
    monkeypatch.setattr(tqdm, "tqdm", functools.partial(tqdm.tqdm, mininterval=0))
    meter = make_meter(False)
    options = ReadOptions()
    found = gather_inputs([str(sample_corpus)], options, meter=meter)
    count_inputs(found.inputs, options, meter=meter)
    shown = screen.getvalue()
    total = len(found.inputs)
    size = r"\d+(\.\d)? (B|KiB|MiB|GiB)"
    # Files found while walking, with their bytes and the rate.
    assert re.search(rf"walk: {total}doc \[.*doc/s, {size}, {size}/s\]", shown)
    # Documents read and tokenised out of the total, with the bytes read and their rate.
    assert re.search(rf"read\+tokenize: 100%.*{total}/{total} .*doc/s, {size}, {size}/s", shown)


def test_meter_draws_nothing_when_stderr_is_not_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    screen = io.StringIO()
    monkeypatch.setattr(sys, "stderr", screen)
    with make_meter(False)(desc="read+tokenize", total=2) as advance:
        advance(2, 4096)
    assert screen.getvalue() == ""


def test_byte_size() -> None:
    assert byte_size(0) == "0 B"
    assert byte_size(1023) == "1023 B"
    assert byte_size(1024) == "1.0 KiB"
    assert byte_size(1536 * 1024) == "1.5 MiB"


def recording_meter(opened: list[tuple[str, int | None, str]], seen: dict[str, int]) -> Meter:
    """Return a meter that records the stages opened and the units each was told."""

    @contextlib.contextmanager
    def meter(*, desc: str, total: int | None = None, unit: str = "doc") -> Iterator[Advance]:
        opened.append((desc, total, unit))

        def advance(documents: int, size: int = 0) -> None:
            seen[desc] = seen.get(desc, 0) + documents

        yield advance

    return meter


@pytest.mark.parametrize("scheme", ["balanced", "auto"])
def test_the_pair_stage_counts_candidates_against_the_plan(
    sample_corpus: Path, scheme: str
) -> None:
    opened: list[tuple[str, int | None, str]] = []
    seen: dict[str, int] = {}
    options = ReadOptions()
    found = gather_inputs([str(sample_corpus)], options)
    params = Params(scheme=scheme)
    result = scan_inputs(found, params, options, meter=recording_meter(opened, seen))
    stages = {desc: (total, unit) for desc, total, unit in opened}
    assert stages["read+tokenize"] == (len(found.inputs), "doc")
    total, unit = stages["pairs"]
    assert unit == "pair"
    if result.plan["mode"] == "exact":
        # Every pair is covered, block by block.
        n = result.stats["documents"]
        assert total == seen["pairs"] == n * (n - 1) // 2
    else:
        # Every candidate verified is counted, out of the plan's estimate.
        assert seen.get("pairs", 0) == result.stats["candidates"]
        assert total == result.stats["planned_verified"]


def test_the_pair_bar_shows_pairs_and_their_rate_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    monkeypatch.setattr(tqdm, "tqdm", functools.partial(tqdm.tqdm, mininterval=0))
    with make_meter(False)(desc="pairs", total=3_000_000, unit="pair") as advance:
        advance(1_500_000)
    assert re.search(r"pairs:  50%.*1\.50M/3\.00M.*pair/s", screen.getvalue())
