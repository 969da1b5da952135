"""Progress displays: silent by default, documents and bytes with rate on a terminal."""

from __future__ import annotations

import functools
import io
import re
import sys
from pathlib import Path

import pytest
import tqdm

from simdup.cli.meter import byte_size, make_meter
from simdup.corpus import ReadOptions
from simdup.progress import no_meter
from simdup.streaming import count_inputs, gather_inputs


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
