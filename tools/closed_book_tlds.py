"""Write closed_book/tlds.json: every top-level domain of the Public Suffix List.

The closed-book rule counts a bare `host.tld/path` as an address only when its last label is a
real top-level domain, so that `self.width/2` in an agent's code is not read as a URL. The list
comes from the Public Suffix List (MPL 2.0) that Debian's `publicsuffix` package installs:

    apt-get install publicsuffix && python tools/closed_book_tlds.py [PATH_TO_LIST]

Internationalised labels are written in their ASCII (punycode) form as well as in Unicode.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

DEFAULT_LIST = Path("/usr/share/publicsuffix/public_suffix_list.dat")
OUT = Path(__file__).resolve().parent.parent / "closed_book" / "tlds.json"


def top_level_domains(text: str) -> list[str]:
    found = set()
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("//"):
            continue
        label = line.split(".")[-1].lstrip("!*").lower()
        if label:
            found.add(label)
            if not label.isascii():
                found.add(label.encode("idna").decode("ascii"))
    return sorted(found)


def main(argv: list[str]) -> int:
    source = Path(argv[0]) if argv else DEFAULT_LIST
    tlds = top_level_domains(source.read_text(encoding="utf-8"))
    about = "Top-level domains of the Public Suffix List (MPL 2.0); written by tools/closed_book_tlds.py"
    lines = [json.dumps(t, ensure_ascii=False) for t in tlds]
    OUT.write_text('{"about": ' + json.dumps(about) + ',\n "tlds": [\n' + ",\n".join(lines) + "\n]}\n", encoding="utf-8")
    print(f"wrote {OUT} ({len(tlds)} top-level domains)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
