"""The grade's tests: which folders are collected, and each test's parameters from the case's profile.

One GradeCollector per grading process, registered by the plugin at configure time. The grade's
tests are the verifier's own checks/ (one `check_spec` per targeted check of the profile) and
gates/ (one `validity_rule`, `preservation_gate` or `objective_gate` per rule or gate): every grade
runs the gate tests, which the report header says. `expected()` is the same set, by kind: what a
complete run has results for (scoring/reward.py's decision compares the two).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from usd_repair_verifier.gates.names import OBJECTIVE_GATES, PRESERVATION_GATES, VALIDITY_RULES

from .reward import Expected
from .run_inputs import RunInputs

GATES_DIR = Path(__file__).resolve().parent.parent / "gates"
CHECKS_DIR = GATES_DIR.parent / "checks"


def grading_requested(config: pytest.Config) -> bool:
    """The command names the grading tests (`pytest checks`, `pytest gates/...`)."""
    for arg in config.args:
        path = Path(config.invocation_params.dir, arg.split("::")[0]).resolve()
        if any(path == folder or folder in path.parents for folder in (CHECKS_DIR, GATES_DIR)):
            return True
    return False


class GradeCollector:
    def __init__(self, inputs: RunInputs):
        self.inputs = inputs

    def name_test_folders(self, config: pytest.Config) -> None:
        """At configure, before collection: the folders the grade collects."""
        if config.args_source != pytest.Config.ArgsSource.ARGS:
            # `pytest --case=...` with no test path (an installed verifier, from any folder): the
            # grade's tests are the verifier's own, never whatever lies in the current folder.
            config.args[:] = [str(CHECKS_DIR)]
        # Every grade runs the gate tests: named here, shown in the report header and the summary.
        if not any(Path(a.split("::")[0]).resolve() == GATES_DIR for a in config.args):
            config.args.append(str(GATES_DIR))

    def parameters(self) -> dict[str, list]:
        """Each grade test's parameter name -> its values (none when the case did not load: the
        run then has no test, and the decision says why)."""
        case = self.inputs.case
        return {
            "check_spec": list(case.profile.checks) if case else [],
            "validity_rule": list(VALIDITY_RULES) if case else [],
            "preservation_gate": list(PRESERVATION_GATES) if case else [],
            "objective_gate": list(OBJECTIVE_GATES) if case else [],
        }

    def expected(self) -> Expected:
        case = self.inputs.case
        if case is None:
            return Expected({})
        return Expected({
            "check": tuple(c.id for c in case.profile.checks),
            "validity": VALIDITY_RULES,
            "preservation": PRESERVATION_GATES,
            "objective": OBJECTIVE_GATES,
        })

    def pytest_report_header(self, config: pytest.Config) -> str:
        i = self.inputs
        return (f"usdgrade: case {i.case_dir}, submission {i.submission}, out {i.out}; "
                f"tests: checks/ and gates/ (every grade runs the gate tests)")

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        for name, values in self.parameters().items():
            if name in metafunc.fixturenames:
                metafunc.parametrize(name, values, ids=[getattr(v, "id", v) for v in values])
