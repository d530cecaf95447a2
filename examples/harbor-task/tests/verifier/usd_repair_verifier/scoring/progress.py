"""Progress bars for commands that work through many items: on a terminal only.

tqdm shows the count, the rate and the time left on stderr; when stderr is not a terminal
(a log, a pipe, CI) nothing is printed, so captured output stays the same run to run."""
from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm import tqdm

T = TypeVar("T")


def on_terminal() -> bool:
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def progress(items: Iterable[T], desc: str, unit: str = "item", total: int | None = None) -> Iterator[T]:
    """`items`, with a bar (count, rate, time left) on a terminal; `total` for an iterator without len."""
    yield from tqdm(items, desc=desc, unit=unit, total=total, disable=not on_terminal(), leave=False, file=sys.stderr)


def labelled(desc: str, unit: str = "item"):
    """A progress function for library code that takes one: `progress=labelled("trying", "try")`."""
    return lambda items: progress(items, desc, unit)
