"""Closed book: whether the agent's trajectory shows it reached for the web.

A closed-book case (profile `closed_book: true`) is graded against the agent's
trajectory as well as its submission. `evaluate` reads the run (usd_repair_verifier.closed_book.trajectory),
applies the rule (usd_repair_verifier.closed_book.rule) and gives one Verdict:
- "clean": every tool call read, none broke the rule;
- "violation": a web tool was called, or a URL appears in a tool call's arguments;
- "unverified": no trajectory, or one that cannot be read completely.
The grade turns the last two into a reward of 0 (usd_repair_verifier.scoring.reward.apply_closed_book).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .allowed import allowed_urls
from .rule import MAX_ARGUMENT_CHARS, Violation, argument_chars, run_violations
from .trajectory import TrajectoryError, read_run

# Where Harbor leaves the trajectory inside the agent's container (the trial's agent/ folder).
HARBOR_TRAJECTORY = Path("/logs/agent/trajectory.json")

CLEAN, VIOLATION, UNVERIFIED = "clean", "violation", "unverified"


@dataclass
class Verdict:
    status: str                      # CLEAN | VIOLATION | UNVERIFIED
    reason: str
    trajectory: str | None           # the root file read, as given
    violations: list[Violation] = field(default_factory=list)
    run: dict = field(default_factory=dict)   # agent, schema versions, files, counts

    def to_json(self) -> dict:
        return {"required": True, "status": self.status, "reason": self.reason, "trajectory": self.trajectory,
                "run": self.run, "violations": [v.to_json() for v in self.violations]}


def trajectory_path(given: str | None) -> Path | None:
    """--trajectory when given, else Harbor's in-container location when a file is there."""
    if given:
        return Path(given)
    return HARBOR_TRAJECTORY if HARBOR_TRAJECTORY.is_file() else None


def evaluate(trajectory: Path | None, input_package: Path, instruction_urls: tuple[str, ...] = ()) -> Verdict:
    if trajectory is None:
        return Verdict(UNVERIFIED, f"no trajectory: none given with --trajectory and none at {HARBOR_TRAJECTORY}", None)
    try:
        run = read_run(trajectory)
    except TrajectoryError as error:
        return Verdict(UNVERIFIED, f"the trajectory cannot be read completely: {error}", str(trajectory))
    summary = {"agent": run.agent, "schema_versions": sorted(set(run.schema_versions)), "files": run.files,
               "trajectories": run.trajectories, "steps": run.steps, "tool_calls": len(run.calls)}
    if not run.calls:
        # A run with no recorded action cannot show what the agent did (e.g. an agent
        # whose commands are kept only as raw model text).
        return Verdict(UNVERIFIED, "the trajectory records no tool call: the agent's actions cannot be checked",
                       str(trajectory), run=summary)
    size = argument_chars(run)
    if size > MAX_ARGUMENT_CHARS:
        return Verdict(UNVERIFIED, f"the tool calls' arguments hold {size} characters, more than the "
                       f"{MAX_ARGUMENT_CHARS} that can be checked", str(trajectory), run=summary)
    violations = run_violations(run, allowed_urls(input_package, instruction_urls))
    if violations:
        first = violations[0]
        what = f"called the web tool {first.tool}" if first.kind == "web_tool" else f"used the URL {first.url} in {first.tool}"
        return Verdict(VIOLATION, f"{len(violations)} network violation(s); first: step {first.step_id} of "
                       f"{first.trajectory} {what}", str(trajectory), violations, summary)
    return Verdict(CLEAN, f"{len(run.calls)} tool call(s) read: no web tool, no URL", str(trajectory), run=summary)
