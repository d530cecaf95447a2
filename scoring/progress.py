"""Progress for commands that take a while: on a terminal only.

tqdm shows the count, the rate and the time left on stderr; `working` shows one long step
without a count (what runs, and for how long, updated every second). When stderr is not a
terminal (a log, a pipe, CI) nothing is printed, so captured output stays the same run to run."""
from __future__ import annotations

import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from tqdm import tqdm

T = TypeVar("T")
TICK_S = 1.0


def on_terminal() -> bool:
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def progress(items: Iterable[T], desc: str, unit: str = "item", total: int | None = None) -> Iterator[T]:
    """`items`, with a bar (count, rate, time left) on a terminal; `total` for an iterator without len."""
    yield from tqdm(items, desc=desc, unit=unit, total=total, disable=not on_terminal(), leave=False, file=sys.stderr)


def labelled(desc: str, unit: str = "item"):
    """A progress function for library code that takes one: `progress=labelled("trying", "try")`."""
    return lambda items: progress(items, desc, unit)


@contextmanager
def working(desc: str, note: str = "") -> Iterator[None]:
    """One long step at a terminal: `desc: 12s (note)`, the time updated every second, gone when
    the step ends. Nothing at all when stderr is not a terminal."""
    if not on_terminal():
        yield
        return
    tail = f" ({note})" if note else ""
    line = tqdm(total=None, desc=desc, bar_format="{desc}: {elapsed}" + tail.replace("{", "{{").replace("}", "}}"),
                leave=False, file=sys.stderr)
    done = threading.Event()

    def tick() -> None:
        while not done.wait(TICK_S):
            line.refresh()

    ticker = threading.Thread(target=tick, name="usdgrade-working", daemon=True)
    ticker.start()
    try:
        yield
    finally:
        done.set()
        ticker.join()
        line.close()
