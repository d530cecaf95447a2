"""How a Harbor task with a separate verifier carries the trajectory to the grade.

Harbor leaves the trajectory in the agent's `/logs/agent`, which a separate verifier's
container does not get, and `harbor lint` refuses `/logs/agent` as an artifact. After the
agent's run, a `[[verifier.collect]]` hook (run as root in the agent's container) copies the
trajectory files into a root-owned folder; that folder is declared as an artifact, so Harbor
re-creates it at the same path in the verifier's container, where the grade reads it.
The task generator writes these; docs/closed-book.md explains them.
"""
from __future__ import annotations

TRAJECTORY_FOLDER = "/var/lib/usdgrade-trajectory"
# The root trajectory with its continuations (trajectory.cont-N.json) and subagent files
# (trajectory.summarization-...json), which Harbor writes next to it.
# Regular files only (a planted link is not followed); none found leaves the folder empty, which
# the grade reads as no trajectory (closed_book_unverified), and the hook still succeeds.
COLLECT_COMMAND = (f"rm -rf {TRAJECTORY_FOLDER} && mkdir -m 755 {TRAJECTORY_FOLDER} && "
                   f"find /logs/agent -maxdepth 1 -type f -name 'trajectory*.json' -exec cp -t {TRAJECTORY_FOLDER} -- {{}} +")
COLLECT_USER = "root"
GRADE_ARGUMENT = f"--trajectory={TRAJECTORY_FOLDER}/trajectory.json"


def collect_block() -> str:
    """The task.toml block; add TRAJECTORY_FOLDER to the task's `artifacts` as well."""
    return (
        "# Closed book: after the agent's run, copy Harbor's ATIF trajectory (with its continuation and\n"
        "# subagent files) into a root-owned folder the agent's user cannot write; it is collected as an\n"
        "# artifact and re-created at the same path in the verifier's container.\n"
        "[[verifier.collect]]\n"
        f'command = "{COLLECT_COMMAND}"\n'
        f'user = "{COLLECT_USER}"\n'
    )
