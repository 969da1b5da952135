"""End-to-end speed of ``simdup scan`` on real text trees, against a one-process floor.

For each corpus, every run measures the floor and then ``simdup scan`` with default
settings, back to back, each in a process of its own:

* **floor**: walk the tree (regular files, no hidden names, no symbolic links: the files
  ``simdup scan`` reads), read every file (gunzip ``.gz``), decode UTF-8, NFKC, case fold,
  ``re.findall(r"\\w+")``, ``collections.Counter``, in ONE process;
* **simdup**: the installed ``simdup scan ROOT`` console script, default settings, the
  report written to /dev/null.

The table gives medians over the runs and the median of the per-run ratios simdup/floor
(the ratio within one run is the stable figure on a shared machine), and peak RSS of
each (the largest process). A second table gives tokenising throughput per core
(characters per second, one process) of the corpus' non-ASCII and ASCII documents, through
:func:`simdup.text.tokens.text_words` and through :func:`simdup.text.counting.count_chunk` (what a
worker does), next to the floor's NFKC + case fold + ``\\w+`` + ``Counter``.

Corpora: the machine's documentation tree (``/usr/share/doc``, without ``linux-doc``),
German and French manual pages (Debian packages ``manpages-de`` and ``manpages-fr``) and
the Linux kernel's documentation (``linux-doc``). Missing packages are named with the
``apt-get`` command that installs them; ``--install`` runs it.

Usage: ``python benchmarks/realtext.py [--runs 3] [--install]``.

With ``--files N`` it measures instead peak RSS (and time) of ``simdup scan`` over N files
written from ``benchmarks/generate.py``'s corpus (to ``/tmp/simdup-files-N`` unless
``--files-dir``). In both modes, options it does not know are passed to ``simdup scan``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Corpus:
    """A tree to scan, the Debian package that provides it and what to leave out."""

    name: str
    root: str
    package: str | None
    exclude: tuple[str, ...] = ()


CORPORA = (
    Corpus("documentation tree", "/usr/share/doc", None, ("linux-doc",)),
    Corpus("German manual pages", "/usr/share/man/de", "manpages-de"),
    Corpus("French manual pages", "/usr/share/man/fr", "manpages-fr"),
    Corpus("kernel documentation", "/usr/share/doc/linux-doc/Documentation", "linux-doc"),
)

#: Bytes of files (compressed size) whose texts the throughput table tokenises, at most
#: about: larger corpora are sampled, every k-th file.
THROUGHPUT_BYTES = 40_000_000

#: Runs of each throughput measurement (the median is shown).
THROUGHPUT_RUNS = 3

#: Files of a manual-page package that mark it as installed.
_MARKERS = {
    "manpages-de": "/usr/share/man/de/man1/ls.1.gz",
    "manpages-fr": "/usr/share/man/fr/man1/ls.1.gz",
    "linux-doc": "/usr/share/doc/linux-doc/Documentation",
}


def files(root: str, exclude: tuple[str, ...]) -> Iterator[str]:
    """Yield the regular files under ``root`` that ``simdup scan`` reads by default."""
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith(".") and d not in exclude)
        for name in sorted(names):
            path = os.path.join(directory, name)
            if name.startswith(".") or name in exclude or os.path.islink(path):
                continue
            if os.path.isfile(path):
                yield path


def read_text(path: str) -> str:
    """Return a file's text: gunzipped if ``.gz``, UTF-8 with replacement characters."""
    with open(path, "rb") as handle:
        data = handle.read()
    if path.endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError):
            return ""
    return data.decode("utf-8", errors="replace")


def floor(root: str, exclude: tuple[str, ...]) -> dict[str, int]:
    """Run the floor over a tree; return files, characters and distinct words."""
    word = re.compile(r"\w+")
    count = characters = 0
    vocabulary: Counter[str] = Counter()
    for path in files(root, exclude):
        text = read_text(path)
        count += 1
        characters += len(text)
        counts = Counter(word.findall(unicodedata.normalize("NFKC", text).casefold()))
        vocabulary.update(counts.keys())
    return {"files": count, "characters": characters, "words": len(vocabulary)}


def timed(command: list[str], *, keep_output: bool = True) -> tuple[float, float, str]:
    """Run a command; return wall seconds, peak RSS in MiB and stdout.

    Peak RSS is that of the largest process: the command or any worker process it waited
    for (``wait4`` reports the maximum over the child and its reaped descendants).
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        clock = time.perf_counter()
        child = subprocess.Popen(
            command, stdout=out if keep_output else subprocess.DEVNULL, stderr=err
        )
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - clock
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if child.returncode != 0:
            message = err.read().decode(errors="replace")[-2000:]
            raise SystemExit(f"{' '.join(command)} failed ({child.returncode}):\n{message}")
        return seconds, usage.ru_maxrss / 1024, out.read().decode()


def simdup_command(corpus: Corpus, extra: list[str]) -> list[str]:
    """Return the installed ``simdup scan`` command line for a corpus (default settings).

    ``extra`` holds options to add (those of the benchmark's command line it does not know).
    """
    script = Path(sys.executable).parent / "simdup"
    command = [str(script), "scan", corpus.root, "--quiet", *extra]
    for pattern in corpus.exclude:
        command += ["--exclude", pattern]
    return command


def throughput(corpus: Corpus) -> dict[str, float]:
    """Return tokenising throughput in characters per second of one process, by kind."""
    from simdup.text.counting import count_chunk
    from simdup.text.tokens import text_words

    paths = list(files(corpus.root, corpus.exclude))
    step = max(1, -(-sum(os.path.getsize(p) for p in paths) // THROUGHPUT_BYTES))
    texts = [read_text(p) for p in paths[::step]]  # every step-th file: about the budget
    kinds = {
        "non-ASCII": [t for t in texts if not t.isascii()],
        "ASCII": [t for t in texts if t.isascii()],
    }
    text_words("é")  # build the tokenizer's tables outside the timings
    out: dict[str, float] = {}
    for kind, group in kinds.items():
        size = sum(map(len, group))
        if not size:
            continue
        for label, run in (
            ("text_words", lambda g: [text_words(t) for t in g]),
            ("count_chunk", lambda g: count_chunk(g, True, 1)),
            (
                "floor",
                lambda g: [
                    Counter(re.findall(r"\w+", unicodedata.normalize("NFKC", t).casefold()))
                    for t in g
                ],
            ),
        ):
            seconds = []
            for _ in range(THROUGHPUT_RUNS):
                clock = time.perf_counter()
                run(group)
                seconds.append(time.perf_counter() - clock)
            out[f"{kind} {label}"] = size / statistics.median(seconds)
        out[f"{kind} characters"] = size
    return out


def materialise(docs: int, directory: Path) -> Path:
    """Write the generated corpus of ``docs`` documents as files, 1,000 per directory.

    The corpus is ``benchmarks/generate.py``'s (its JSON Lines file is made or reused);
    the files are written once and reused while ``directory`` holds them all.
    """
    sys.path.insert(0, str(Path(__file__).parent))
    from generate import write

    done = directory / "complete"
    if done.exists():
        return directory
    corpus, _ = write(docs, Path(__file__).parent / "data")
    with corpus.open(encoding="utf-8") as lines:
        for k, line in enumerate(lines):
            record = json.loads(line)
            folder = directory / f"{k // 1000:04d}"
            if k % 1000 == 0:
                folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{record['id']}.txt").write_text(record["text"], encoding="utf-8")
    done.write_text("")
    return directory


def memory(docs: int, directory: Path, runs: int, extra: list[str]) -> None:
    """Print peak RSS and time of ``simdup scan`` over ``docs`` generated files."""
    root = materialise(docs, directory)
    script = Path(sys.executable).parent / "simdup"
    command = [str(script), "scan", str(root), "--quiet", "--exclude", "complete", *extra]
    print(f"{docs:,} files under {root}: {' '.join(command)}")
    for _ in range(runs):
        seconds, peak, _ = timed(command, keep_output=False)
        print(f"  {seconds:.1f} s, peak RSS {peak:,.0f} MiB (largest process)", flush=True)


def missing(corpora: tuple[Corpus, ...]) -> list[str]:
    """Return the packages whose corpus is not on this machine."""
    return sorted(
        {c.package for c in corpora if c.package and not os.path.exists(_MARKERS[c.package])}
    )


def main() -> None:
    """Measure every corpus present and print the tables."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per corpus (median)")
    parser.add_argument("--install", action="store_true", help="apt-get install the corpora")
    parser.add_argument("--corpus", action="append", help="only corpora whose name has this")
    parser.add_argument("--json", type=Path, help="also write every figure as JSON")
    parser.add_argument(
        "--files", type=int, help="instead: peak RSS of simdup scan over N generated files"
    )
    parser.add_argument("--files-dir", type=Path, help="where the files go (default /tmp)")
    parser.add_argument("--floor", nargs="+", help=argparse.SUPPRESS)  # ROOT EXCLUDE...
    args, extra = parser.parse_known_args()
    if args.floor:
        print(json.dumps(floor(args.floor[0], tuple(args.floor[1:]))))
        return
    if args.files:
        directory = args.files_dir or Path(tempfile.gettempdir()) / f"simdup-files-{args.files}"
        memory(args.files, directory, args.runs, extra)
        return
    corpora = tuple(c for c in CORPORA if not args.corpus or any(k in c.name for k in args.corpus))
    absent = missing(corpora)
    if absent:
        command = ["apt-get", "install", "--yes", *absent]
        if args.install:
            subprocess.run(["apt-get", "update", "-qq"], check=True)
            subprocess.run(
                command, check=True, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
            )
        else:
            print(f"missing corpora; install them with: {' '.join(command)} (or --install)")
    rows = []
    speeds = []
    for corpus in corpora:
        if not os.path.isdir(corpus.root) or (
            corpus.package and not os.path.exists(_MARKERS[corpus.package])
        ):
            print(f"skipped {corpus.name}: {corpus.root} not present")
            continue
        for path in files(corpus.root, corpus.exclude):  # warm the page cache for both
            read_text(path)
        floor_command = [sys.executable, __file__, "--floor", corpus.root, *corpus.exclude]
        runs = []
        for _ in range(args.runs):
            floor_s, floor_rss, out = timed(floor_command)
            simdup_s, simdup_rss, _ = timed(simdup_command(corpus, extra), keep_output=False)
            runs.append((floor_s, simdup_s, simdup_s / floor_s, floor_rss, simdup_rss))
            print(f"  {corpus.name}: floor {floor_s:.2f} s, simdup {simdup_s:.2f} s", flush=True)
        sizes = json.loads(out)
        row = {
            "corpus": corpus.name,
            "root": corpus.root,
            "files": sizes["files"],
            "characters": sizes["characters"],
            "floor_s": statistics.median(r[0] for r in runs),
            "simdup_s": statistics.median(r[1] for r in runs),
            "ratio": statistics.median(r[2] for r in runs),
            "ratios": [round(r[2], 2) for r in runs],
            "floor_rss_mib": max(r[3] for r in runs),
            "simdup_rss_mib": max(r[4] for r in runs),
        }
        rows.append(row)
    # After every end-to-end run: this process then holds texts, and a child started from
    # it would inherit its peak RSS as a starting point.
    for corpus in corpora:
        if any(r["corpus"] == corpus.name for r in rows):
            speeds.append({"corpus": corpus.name, **throughput(corpus)})
    print(f"\nEnd to end, medians of {args.runs} runs (ratio: median of the per-run ratios)\n")
    print(
        "| corpus | files | characters | floor s | simdup s | simdup/floor | per run "
        "| peak RSS MiB floor / simdup |\n|---|---|---|---|---|---|---|---|"
    )
    for r in rows:
        cells = [
            r["corpus"],
            f"{r['files']:,}",
            f"{r['characters'] / 1e6:.1f} M",
            f"{r['floor_s']:.2f}",
            f"{r['simdup_s']:.2f}",
            f"{r['ratio']:.2f}",
            ", ".join(map(str, r["ratios"])),
            f"{r['floor_rss_mib']:.0f} / {r['simdup_rss_mib']:.0f}",
        ]
        print("| " + " | ".join(cells) + " |")
    print("\nTokenising throughput of one process, million characters per second\n")
    print(
        "| corpus | kind | characters | text_words | count_chunk | floor |\n"
        "|---|---|---|---|---|---|"
    )
    for speed in speeds:
        for kind in ("non-ASCII", "ASCII"):
            if f"{kind} characters" not in speed:
                continue
            figures = [speed[f"{kind} {k}"] / 1e6 for k in ("text_words", "count_chunk", "floor")]
            print(
                f"| {speed['corpus']} | {kind} | {speed[f'{kind} characters'] / 1e6:.1f} M | "
                + " | ".join(f"{f:.1f}" for f in figures)
                + " |"
            )
    if args.json:
        args.json.write_text(json.dumps({"end_to_end": rows, "throughput": speeds}, indent=1))


if __name__ == "__main__":
    main()
