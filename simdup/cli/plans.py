"""The plan of a pair search, as ``--plan`` prints it: lines for people, or JSON.

``scan --plan`` and ``dedupe --plan`` describe the search they would run the same way.
"""

from __future__ import annotations

from typing import Any

from simdup.cli.output import write_text
from simdup.cli.parsed import Output, PairReport
from simdup.report.fields import dumps
from simdup.sizes import format_size
from simdup.text.display import printable

#: Seconds of writing a report from which ``--plan`` warns of it (as of pair work).
LONG_REPORT_SECONDS = 120.0


def plan_lines(described: dict[str, Any]) -> str:
    """Return the plan as lines for people: mode, width, tables, recall, cost, memory."""
    exact = described.get("mode") == "exact"
    lines = [
        "mode: exact (the true cosine of every pair: cheaper here than tables; recall 1.0)"
        if exact
        else f"mode: tables at {described['bits']} bits",
        f"bits: {described['bits']}"
        + "".join(
            f"; {w['bits']} bits: recall {w['recall']:.3f}, cost {w['estimated_cost']:,}"
            for w in described.get("widths_priced", [])
        ),
    ]
    if not exact:
        lines += [
            f"tables: {described['tables']} ({described['source']}; "
            f"key bits {', '.join(map(str, described['key_bits']))})",
            f"guarantee: every pair within Hamming distance {described['guarantee']}"
            if described["guarantee"] >= 0
            else "guarantee: none (probabilistic tables)",
        ]
    lines += [
        f"recall at cosine {described['threshold']}: {described['recall_at_threshold']:.3f}",
        "recall curve: "
        + "  ".join(f"{p['cosine']:.2f}:{p['recall']:.3f}" for p in described["recall_curve"]),
        f"expected candidates: {described['expected_candidates']:,} (upper bound); "
        f"to verify: {described['expected_verified']:,}",
        f"documents: {described['documents']:,} ({described['distinct_fingerprints']:,} distinct "
        f"fingerprints, key sizes measured on {described['measured_on']:,})",
        f"estimated cost: {described['estimated_cost']:,} candidate-pair units"
        + (
            f" (exact: {described['exact_cost']:,})"
            if described.get("exact_cost") is not None and not exact
            else ""
        ),
        f"estimated time: about {described['estimated_seconds']:.1f} s of pair work"
        + (
            f"; about {report['estimated_seconds']:.1f} s to write about "
            f"{report['pairs']:,} pairs as {report['format']}"
            if (report := described.get("report"))
            else ""
        ),
    ]
    memory = described.get("memory")
    if memory:
        lines.append(
            f"memory: about {format_size(memory['predicted']['total'])} predicted beyond the "
            f"corpus, its weights and fingerprints; budget {format_size(memory['budget'])}"
        )
    disk = described.get("disk")
    if disk:
        what = [
            *(["the corpus's weights and names"] if disk["store"] else []),
            *(["pairs past their share of memory"] if disk["pairs"] else []),
        ]
        lines.append(
            f"disk: about {format_size(disk['store'] + disk['pairs'])} of temporary files in "
            f"{disk['directory']} ({'; '.join(what)}), removed when the scan ends"
        )
    lines += [f"warning: {w}" for w in described["warnings"]]
    return "\n".join(lines) + "\n"


def priced_report(described: dict[str, Any], report: PairReport) -> dict[str, Any]:
    """Return the plan with the time its report would take to write (key ``report``).

    The pairs are those the plan expects above the threshold, as many as ``report`` lists
    (:func:`~simdup.cli.pairs.shown_limit`), in its format; a report expected to take
    minutes is warned of, as a plan's pair work is.
    """
    from simdup.cli.pairs import shown_limit
    from simdup.report.seconds import report_seconds

    fmt = report.output.fmt
    pairs = described["expected_reported"]
    if (limit := shown_limit(report)) is not None:
        pairs = min(pairs, limit)
    seconds = report_seconds(fmt, pairs, described["name_length"])
    warnings = list(described["warnings"])
    if seconds >= LONG_REPORT_SECONDS:
        warnings.append(
            f"writing its report, about {pairs:,} pairs as {fmt}, is expected to take about "
            f"{seconds / 60:.0f} minutes after the pair work; a higher --threshold or "
            "--limit N lists fewer"
        )
    priced = {"format": fmt, "pairs": pairs, "estimated_seconds": round(seconds, 3)}
    return {**described, "report": priced, "warnings": warnings}


def write_plan(described: dict[str, Any], output: Output) -> None:
    """Write the plan: JSON for ``--format json``/``jsonl``, lines for people otherwise."""
    if output.fmt in ("json", "jsonl"):
        write_text(dumps(described) + "\n", output.path)
    else:
        write_text(printable_lines(plan_lines(described)), output.path)


def printable_lines(text: str) -> str:
    """Escape control characters in each line of ``text`` (names in warnings are untrusted)."""
    return "".join(printable(line) + "\n" for line in text.splitlines())
