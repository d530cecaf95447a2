"""Grade a submission in this process, two ways, so tests need no child process per grade.

- `grade()`: the session and the reward rule, without pytest. The operator's command runs each
  check and gate as a pytest test and `decide()` reads their records; this builds the same
  records straight from a GradingSession (for tests that grade hundreds of submissions and read
  only the decision).
- `grade_warm()`: the operator's very session (`pytest checks --case ... --submission ... --out
  ...` with the sealed arguments: the same plugin, checks, gates and grade.json) run by the warm
  grader (usd_repair_verifier.regrade.warm) in this process, with the imports and each case's
  reference paid once per test worker. Its grade.json is the child process's apart from
  "timings" (tests/test_regrade.py proves it on several cases).

Tests of the command itself (exit codes, arguments such as -n/-k/-p, the CLI, the sealed and
Harbor contract) still use usd_repair_verifier.scoring.run.run_grade.
"""
from __future__ import annotations

import atexit
import json
import os
import tempfile
from concurrent.futures import Future
from pathlib import Path

from usd_repair_verifier.gates.names import OBJECTIVE_GATES, PRESERVATION_GATES, VALIDITY_RULES
from usd_repair_verifier.profiles.case import Case, load_case
from usd_repair_verifier.profiles.result_record import as_metadata, parse
from usd_repair_verifier.scoring.reward import Decision, Expected, TestRecord, TestResults, decide
from usd_repair_verifier.scoring.run import RunResult, run_grade
from usd_repair_verifier.scoring.session import GradingSession
from usd_repair_verifier.scoring.work_share import LocalWork

_REFERENCES: dict[str, tuple] = {}   # case folder -> (reference snapshot, seconds): read once per process


class _ReferenceOnce(LocalWork):
    """Serial work that reads each case's reference once (snapshots are only read afterwards)."""

    def __init__(self, key: str):
        super().__init__()
        self.key = key
        if key in _REFERENCES:
            self.mine["reference"] = _REFERENCES[key]

    def claim(self, unit: str) -> bool:
        return unit not in self.mine

    def run(self, unit, compute):
        if unit != "reference":
            return super().run(unit, compute)
        # As the warm grader's reference cache does: the reference's free-space samples (the
        # same function on the same inputs) computed once, not again for every submission.
        from usd_repair_verifier.stage_snapshot.parts import with_free_space

        snapshot, seconds = compute()
        value = _REFERENCES[self.key] = self.mine[unit] = (with_free_space(snapshot), seconds)
        return value


def _record(kind: str, ident: str, result) -> TestRecord:
    """The record the test of this check or gate would have left, read back as the plugin reads it."""
    metadata = as_metadata(kind, ident, result)
    return TestRecord(f"{kind}::{ident}", "passed" if result.passed else "failed", kind, ident,
                      parse(kind, metadata["result"]))


def grading_session(case: Case, submission: Path, validity: Future | None = None) -> GradingSession:
    """The plugin's session for one submission, with this process's reference of the case (read
    once) and, unless `validity` is given, a validity worker forked from the server."""
    if validity is None:
        start_validity_server()
    return GradingSession(case, Path(submission), _ReferenceOnce(str(case.paths.root)), validity)


def grade(case: Case | Path, submission: Path, validity: Future | None = None) -> Decision:
    """`validity`: the validity gate's (report, seconds) already computed, or None to run it (in a
    capped worker forked from this process's validity server, as in the warm grader)."""
    case = case if isinstance(case, Case) else load_case(case)
    session = grading_session(case, submission, validity)
    records = [_record("check", spec.id, session.measure_check(spec)) for spec in case.profile.checks]
    records += [_record("validity", r, session.validity_rule(r)) for r in VALIDITY_RULES]
    records += [_record("preservation", g, session.preservation_gate(g)) for g in PRESERVATION_GATES]
    records += [_record("objective", g, session.objective_gate(g)) for g in OBJECTIVE_GATES]
    expected = Expected({
        "check": tuple(c.id for c in case.profile.checks),
        "validity": VALIDITY_RULES,
        "preservation": PRESERVATION_GATES,
        "objective": OBJECTIVE_GATES,
    })
    return decide(TestResults.of(records), expected)


class _Warm:
    """The test worker's one warm grader and the log its sessions' terminal output goes to."""
    grader = None
    log: Path | None = None


def start_validity_server() -> None:
    """Validity workers fork from a server that imported pxr once (gates/validity/fork.py) instead
    of each starting an interpreter. The server is process-wide and keeps the environment it was
    started with: it is started again when a test has changed the workers' environment (a fault
    variable of tests/test_validity_rules.py), and a worker never forks from a server whose
    environment is not the current one (it starts fresh)."""
    from usd_repair_verifier.gates import validity

    validity.start_fork_server()   # a no-op while it is alive and current


def warm_grader():
    """This process's warm grader, created on first use (with the validity server)."""
    from usd_repair_verifier.regrade.warm import WarmGrader

    if _Warm.grader is None:
        handle, name = tempfile.mkstemp(prefix="usdgrade-warm-", suffix=".log")
        os.close(handle)
        _Warm.log = Path(name)
        _Warm.grader = WarmGrader(log_path=name)
        atexit.register(_Warm.log.unlink, missing_ok=True)
    else:
        start_validity_server()
    return _Warm.grader


def grade_warm(case: Path, submission: Path, out: Path, trajectory: Path | None = None) -> RunResult:
    """`pytest checks --case CASE --submission SUBMISSION --out OUT` in this process: OUT receives
    grade.json and reward.json as the session wrote them (reward.json only when it wrote one);
    stdout is the session's terminal output (pytest's and the summary), stderr is empty (the
    warm grader sends both streams to one log). A submission that is not a folder goes to the
    command in a child: the warm grader refuses it as a store's fault, the command grades it."""
    from usd_repair_verifier.regrade.warm import Item

    if not Path(submission).is_dir():
        return run_grade(Path(case), Path(submission), Path(out), ("--trajectory", str(trajectory)) if trajectory else ())
    grader = warm_grader()
    _Warm.log.write_bytes(b"")
    item = Item(str(submission), str(Path(case).absolute()), str(Path(submission).absolute()),
                str(Path(trajectory).absolute()) if trajectory else None)
    result = grader.grade(item)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for name, text in (("grade.json", result.grade_text), ("reward.json", result.reward_text)):
        if text is not None:
            (out / name).write_text(text, encoding="utf-8")
    stdout = _Warm.log.read_text(encoding="utf-8", errors="replace")
    return RunResult(result.exit_code, _parsed(result.grade_text), _parsed(result.reward_text), stdout, "")


def _parsed(text: str | None) -> dict | None:
    try:
        return json.loads(text) if text is not None else None
    except ValueError:
        return None
