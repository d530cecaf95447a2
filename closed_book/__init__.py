"""Closed book: whether the agent's trajectory shows it reached for the web.

A closed-book case (profile `closed_book: true`) is graded against the agent's
trajectory as well as its submission. `evaluate` reads the run (usd_repair_verifier.closed_book.trajectory),
applies the rule (usd_repair_verifier.closed_book.rule) and gives one Verdict:
- "clean": every tool call read, none broke the rule;
- "violation": a web tool was called, an address appears in a tool call, a network client was run
  without a local address, or a connection was redirected (usd_repair_verifier.closed_book.rule);
- "unverified": no trajectory, or one that cannot be read completely.
The grade turns the last two into a reward of 0 (usd_repair_verifier.scoring.reward.apply_closed_book).
"""

from __future__ import annotations

from usd_repair_verifier import only_namespaced

only_namespaced(__name__)   # first: the imports below would load this package's modules under a refused name

from dataclasses import dataclass, field
from pathlib import Path

from .allowed import allowed_urls
from .rule import MAX_ARGUMENT_CHARS, MAX_CALL_CHARS, MAX_LISTED, Violation, Violations
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
    found = Violations(allowed_urls(input_package, instruction_urls))
    try:
        run = read_run(trajectory, on_call=found.add_call)   # each call judged as it is read, none kept
    except TrajectoryError as error:
        return Verdict(UNVERIFIED, f"the trajectory cannot be read completely: {error}", str(trajectory))
    except OverflowError:
        return Verdict(UNVERIFIED, f"the tool calls' arguments hold more than the {MAX_ARGUMENT_CHARS} characters "
                       f"(or one call more than the {MAX_CALL_CHARS}) that can be checked", str(trajectory))
    summary = {"agent": run.agent, "schema_versions": sorted(set(run.schema_versions)), "files": run.files,
               "trajectories": run.trajectories, "steps": run.steps, "tool_calls": run.tool_calls}
    if not run.tool_calls:
        # A run with no recorded action cannot show what the agent did (e.g. an agent
        # whose commands are kept only as raw model text).
        return Verdict(UNVERIFIED, "the trajectory records no tool call: the agent's actions cannot be checked",
                       str(trajectory), run=summary)
    if found.total:
        first = found.listed[0]
        what = {"web_tool": f"called the web tool {first.tool}",
                "url": f"used the address {first.url} in {first.tool}",
                "network_command": f"ran a network client in {first.tool}"}[first.kind]
        shown = "" if found.total <= MAX_LISTED else f" ({MAX_LISTED} listed)"
        return Verdict(VIOLATION, f"{found.total} network violation(s){shown}; first: step {first.step_id} of "
                       f"{first.trajectory} {what}", str(trajectory), found.listed, summary)
    return Verdict(CLEAN, f"{run.tool_calls} tool call(s) read: no web tool, no address, no network client",
                   str(trajectory), run=summary)
