"""The one way a tool that writes files from code (a page of docs, schemas, an example) writes them,
or checks they are current."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def write_or_check(page: Path, text: str, tool: str, check: bool) -> int:
    """Write `text` to `page`; with `check`, write nothing and return 1 (saying so on stderr) when
    the page is not `text`. `tool` is the command that rewrites the page."""
    shown = page.relative_to(page.parent.parent)
    if check:
        if not page.is_file() or page.read_text(encoding="utf-8") != text:
            print(f"{shown} is stale: run python {tool}", file=sys.stderr)
            return 1
        return 0
    page.write_text(text, encoding="utf-8")
    print(f"wrote {shown}")
    return 0


def write_or_check_files(argv: list[str] | None, description: str, stale: Callable[[], list[str]],
                         write: Callable[[], list[str]], tool: str) -> int:
    """The command line of a tool that writes several files: with `--check`, write nothing and
    return 1 when `stale()` says what differs (each on stderr, with the command that rewrites
    it); otherwise `write()` and name what it wrote."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args(argv)
    if args.check:
        found = stale()
        for line in found:
            print(f"{line}: run python {tool}", file=sys.stderr)
        return 1 if found else 0
    for written in write():
        print(f"wrote {written}")
    return 0
