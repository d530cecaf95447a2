"""`--engine local`: a pool of warm graders (regrade/warm.py), one process each.

The driver hands one item at a time to each idle worker over a pipe and streams results
back as they finish. What a pytest session cannot contain is handled here:
- a per-item time limit: past it the worker's whole process group (the worker and its
  validity child) is killed, the item is recorded as the plugin records its own time limit
  (an infrastructure error) and a new worker takes the slot;
- a worker that dies (a crash in native code, the kernel's OOM killer): it is replaced and
  its item retried once in a fresh worker, then recorded as an infrastructure error;
- a worker that asks to be replaced (regrade/warm.py: pxr still holds a graded layer).
An idle worker is given an item of the case it was given last when one is waiting, else one of a
case no other worker is on: each worker reads fewer references (its cache keeps those it read).
Workers start with `spawn` (nothing inherited from the driver but its arguments) and each
leads its own process group.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Iterable, Iterator

from usd_repair_verifier.regrade.warm import Item, ItemResult, infrastructure_result, time_limit_reason

START_TIMEOUT_S = 300.0   # imports on a cold, busy machine; a worker that never says "ready" is a fault


def worker_main(conn: Connection, log_path: str | None) -> None:
    """A worker process: warm up, then grade items until told to stop."""
    os.setpgrp()  # the driver kills the group: this worker and the validity child it started
    null = os.open(log_path or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)  # as the umask allows
    os.dup2(null, 1)
    os.dup2(null, 2)
    from usd_repair_verifier.regrade.warm import WarmGrader

    grader = WarmGrader(log_path=log_path)
    conn.send(("ready", os.getpid()))
    try:
        while True:
            try:
                item = conn.recv()
            except EOFError:
                return
            if item is None:
                return
            result = grader.grade(Item(**item))
            conn.send(("done", result.to_dict()))
            if result.recycle:
                return
    finally:
        grader.close()


@dataclass
class _Slot:
    process: mp.Process
    conn: Connection
    ready: bool = False
    item: Item | None = None
    started: float = 0.0
    spawned: float = field(default_factory=time.monotonic)
    case: str | None = None             # the case of the last item this worker was given


class _Pending:
    """The items no worker has yet. A worker keeps the reference snapshots of the cases it graded
    (scoring/reference_cache.py), so an idle worker takes, in this order: an item to retry, the
    oldest item of the case it was given last, the oldest item of the first case no other worker
    was given last, the oldest item of the first case. Cases keep the order in which their first
    item came, so a choice looks at no more cases than there are workers."""

    def __init__(self, items: Iterable[Item]):
        self.retries: deque[Item] = deque()
        self.by_case: dict[str, deque[Item]] = {}
        self.size = 0
        for item in items:
            self.by_case.setdefault(item.case, deque()).append(item)
            self.size += 1

    def __len__(self) -> int:
        return self.size

    def retry(self, item: Item) -> None:
        self.retries.append(item)
        self.size += 1

    def take(self, last: str | None, others: set[str | None]) -> Item:
        self.size -= 1
        if self.retries:
            return self.retries.popleft()
        case = last if last in self.by_case else next((c for c in self.by_case if c not in others),
                                                      next(iter(self.by_case)))
        queue = self.by_case[case]
        item = queue.popleft()
        if not queue:
            del self.by_case[case]
        return item


class LocalPool:
    worker = staticmethod(worker_main)  # the process's entry point (tests substitute a faulty one)

    def __init__(self, jobs: int, time_limit: float, retries: int = 1, log_dir: str | None = None):
        if jobs < 1:
            raise ValueError("jobs must be at least 1")
        self.jobs, self.time_limit, self.retries = jobs, time_limit, retries
        self.log_dir = log_dir
        self._context = mp.get_context("spawn")
        self._spawned = 0

    def _spawn(self) -> _Slot:
        parent, child = self._context.Pipe()
        log = os.path.join(self.log_dir, f"worker-{self._spawned}.log") if self.log_dir else None
        self._spawned += 1
        process = self._context.Process(target=self.worker, args=(child, log), daemon=True)
        process.start()
        child.close()
        return _Slot(process, parent)

    @staticmethod
    def _kill(slot: _Slot) -> None:
        try:
            os.killpg(slot.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        slot.process.join(5)
        slot.conn.close()

    def run(self, items: Iterable[Item]) -> Iterator[ItemResult]:
        """Grade every item; yield each result as it arrives (not in input order)."""
        pending = _Pending(items)
        attempts: dict[str, int] = {}
        if not pending:
            return
        slots = [self._spawn() for _ in range(min(self.jobs, len(pending)))]
        try:
            while pending or any(s.item is not None for s in slots):
                self._dispatch(slots, pending, attempts)
                wait([s.conn for s in slots] + [s.process.sentinel for s in slots], timeout=self._next_deadline(slots))
                finished = []
                for index, slot in enumerate(slots):
                    result, replace = self._check(slot, attempts, pending)
                    if result is not None:
                        finished.append(result)
                    if replace:
                        self._kill(slot)
                        slots[index] = self._spawn()
                # Idle workers get their next item before the results go to the caller: whatever
                # the caller does with a result (write it, compare it, draw progress) must not
                # leave a worker waiting.
                self._dispatch(slots, pending, attempts)
                yield from finished
        finally:
            for slot in slots:
                try:
                    slot.conn.send(None)
                except (OSError, ValueError):
                    pass
            for slot in slots:
                slot.process.join(2)
                if slot.process.is_alive():
                    self._kill(slot)

    @staticmethod
    def _dispatch(slots: list[_Slot], pending: _Pending, attempts: dict) -> None:
        for slot in slots:
            if slot.ready and slot.item is None and pending:
                others = {s.case for s in slots if s is not slot}
                slot.item, slot.started = pending.take(slot.case, others), time.monotonic()
                slot.case = slot.item.case
                attempts[slot.item.key] = attempts.get(slot.item.key, 0) + 1
                slot.conn.send(vars(slot.item))

    def _next_deadline(self, slots: list[_Slot]) -> float:
        now = time.monotonic()
        ends = [s.started + self.time_limit - now for s in slots if s.item is not None]
        ends += [s.spawned + START_TIMEOUT_S - now for s in slots if not s.ready]
        return max(0.0, min(ends, default=1.0)) + 0.01

    def _check(self, slot: _Slot, attempts: dict, pending: _Pending) -> tuple[ItemResult | None, bool]:
        """What happened to this slot: (a result to yield or None, whether to replace the worker)."""
        try:
            message = slot.conn.recv() if slot.conn.poll() else None
        except (EOFError, OSError):
            message = None
        if message is not None:
            kind, payload = message
            if kind == "ready":
                slot.ready = True
                return None, False
            result = ItemResult(**payload)
            result.attempts = attempts.get(result.key, 1)
            slot.item = None
            return result, result.recycle
        now = time.monotonic()
        if slot.item is None:
            if not slot.ready and (not slot.process.is_alive() or now - slot.spawned > START_TIMEOUT_S):
                raise RuntimeError(f"a grading worker could not start (exit code {slot.process.exitcode}); "
                                   f"see its log in {self.log_dir or 'a --log-dir'}")
            return None, False
        item = slot.item
        if not slot.process.is_alive():
            slot.item = None
            if attempts[item.key] <= self.retries:
                pending.retry(item)  # once more, in a fresh worker
                return None, True
            reason = (f"the grading worker died (exit code {slot.process.exitcode}) on this item "
                      f"{attempts[item.key]} times")
            return self._failed(item, reason, now - slot.started, attempts), True
        if now - slot.started > self.time_limit:
            slot.item = None
            return self._failed(item, time_limit_reason(self.time_limit), now - slot.started, attempts), True
        return None, False

    @staticmethod
    def _failed(item: Item, reason: str, elapsed: float, attempts: dict) -> ItemResult:
        result = infrastructure_result(item, reason, elapsed)
        result.attempts = attempts.get(item.key, 1)
        return result
