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


def ray_ledger_task(item):
    """The Ray engine's task (regrade/ray_engine.py `_grade_task`) with a ledger and two faults, for
    tests/test_regrade_cluster.py. Every run of an item, finished or not, appends `node attempt` to
    `ledger` beside its submission before it grades. `*crash` ends its worker process on every
    attempt. On the node that the cluster started with USDGRADE_TEST_VICTIM=1, the first item that
    comes after one that node graded (the job's `victim-graded` marker) writes the job's `stalled`
    marker (its node id) and waits to be killed with its node, once per job. Every other node waits
    (up to a minute) for that first grade of the victim's before it grades: on a loaded machine the
    victim's first worker starts slowly, and the others would otherwise grade every item first."""
    import ray
    from ray._private.worker import global_worker

    submission = Path(item["submission"])
    node = ray.get_runtime_context().get_node_id()
    attempt = global_worker.core_worker.get_current_task_attempt_number() + 1   # as ray_engine._attempt
    with open(submission.parent / "ledger", "a") as ledger:
        ledger.write(f"{node} {attempt}\n")
    if item["key"].endswith("crash"):
        os._exit(9)   # before the verifier's imports: a worker that dies costs its replacement little
    from usd_repair_verifier.regrade import ray_engine

    job = submission.parents[2]
    victim = os.environ.get("USDGRADE_TEST_VICTIM") == "1"
    if victim and (job / "victim-graded").exists():
        try:
            marker = os.open(job / "stalled", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            marker = None
        if marker is not None:
            os.write(marker, node.encode())
            os.close(marker)
            time.sleep(3600)
    deadline = time.monotonic() + 60
    while not victim and not (job / "victim-graded").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    packed = ray_engine._grade_task(item)
    if victim:
        (job / "victim-graded").touch()
    return packed
