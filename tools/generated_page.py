"""The one way a tool that writes a page of docs from code writes it, or checks it is current."""
from __future__ import annotations

import sys
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
