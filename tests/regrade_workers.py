"""Faulty pool workers for tests/test_regrade.py (a module of its own: spawned workers import it).

The worker speaks regrade/pool.py's protocol and grades like the real one, except for items
whose key asks for trouble: `crash*` ends the process on every attempt, `flaky*` on the first
attempt only (a marker file beside the submission remembers it), `hang*` never answers.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

WARM_UP_CASE = "gen_cartpole_1"   # the case the tests' items are of


def faulty_worker(conn, log_path):
    os.setpgrp()
    from usd_repair_verifier.regrade.warm import Item, WarmGrader

    grader = WarmGrader(log_path=log_path)
    # One grade before "ready" (which no time limit counts): the lazy imports and the case's
    # reference are paid here, so the tests' short time limits count grading alone.
    case = Path(__file__).resolve().parent.parent / "fixtures" / "cases" / WARM_UP_CASE
    grader.grade(Item("warm-up", str(case), str(case / "reference")))
    conn.send(("ready", os.getpid()))
    while True:
        item = conn.recv()
        if item is None:
            return
        key = item["key"]
        if key.startswith("crash"):
            os._exit(9)
        if key.startswith("flaky"):
            marker = Path(item["submission"]).parent / f"{key}.crashed"
            if not marker.exists():
                marker.touch()
                os._exit(9)
        if key.startswith("hang"):
            time.sleep(3600)
        conn.send(("done", grader.grade(Item(**item)).to_dict()))


def echo_worker(conn, log_path):
    """Grades nothing: answers each item at once and notes in a file beside the submission
    that it received the item (a consumer can see which items reached a worker)."""
    os.setpgrp()
    from usd_repair_verifier.regrade.warm import ItemResult

    conn.send(("ready", os.getpid()))
    while True:
        item = conn.recv()
        if item is None:
            return
        (Path(item["submission"]) / "received").touch()
        conn.send(("done", ItemResult(item["key"], 0, "{}", "{}", 0.0).to_dict()))
