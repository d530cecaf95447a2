"""One exit-code table (profiles/errors.py ExitCode) and one place that turns a named error into a
command's exit: no command returns a bare number, and a VerifierError raised anywhere in a
command ends it with one line and the error's own code."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from usd_repair_verifier.commands import cli
from usd_repair_verifier.profiles.errors import ExitCode, InfrastructureFault, Refused, UsageMistake, exit_code_rows

REPO = Path(__file__).resolve().parents[1]
CODE = ("authoring", "checks", "closed_book", "commands", "gates", "physical", "profiles", "records", "regrade",
        "scoring", "stage_snapshot", "visual")


# The tests and tools read exit codes too: they take them from the same table.
READERS = ("tests", "tests_harbor", "tools", "bench", "fixtures", "examples")


def _python_files(packages=CODE):
    for package in packages:
        yield from sorted((REPO / package).rglob("*.py"))


def test_no_command_returns_a_bare_exit_number() -> None:
    """A function that returns an exit code (annotated int or ExitCode) returns an ExitCode member."""
    bare = []
    for path in _python_files():
        if "task_files" in path.parts:   # the task's own scripts run in the task's container, alone
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.FunctionDef) or not node.returns:
                continue
            if ast.unparse(node.returns) not in ("int", "ExitCode") or not _is_command(node):
                continue
            for inner in ast.walk(node):
                if isinstance(inner, ast.Return) and isinstance(inner.value, ast.Constant) \
                        and type(inner.value.value) is int:
                    bare.append(f"{path.relative_to(REPO)}:{inner.lineno} {node.name}")
    assert not bare, "bare exit numbers (use profiles/errors.py ExitCode): " + ", ".join(bare)


def _is_command(node: ast.FunctionDef) -> bool:
    """A command's entry: takes the parsed arguments or an argv list."""
    names = [a.arg for a in node.args.args]
    return bool(names) and names[0] in ("args", "argv")


def test_exit_codes_are_defined_once() -> None:
    """No module but profiles/errors.py gives an exit code a name of its own: neither a number
    (`INFRASTRUCTURE_EXIT = 3`) nor a module-level alias of a member (`GAVE_UP = ExitCode.X`);
    every reader uses the ExitCode member itself."""
    found = []
    for path in _python_files(CODE + READERS):
        if path == REPO / "profiles" / "errors.py":
            continue
        for node in ast.parse(path.read_text(), str(path)).body:
            for name, value in _assignments(node):
                if _names_an_exit_code(value) or (_is_int(value) and "EXIT" in name.upper()):
                    found.append(f"{path.relative_to(REPO)}:{node.lineno} {name}")
    assert not found, "exit codes named outside profiles/errors.py (use ExitCode.X): " + ", ".join(found)


def _assignments(node: ast.stmt):
    """(name, value) of each name a module-level statement binds: `A = x`, `A: int = x`, `A = B = x`,
    `A, B = x, y` (pairwise)."""
    if isinstance(node, ast.Assign):
        targets, value = node.targets, node.value
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        targets, value = [node.target], node.value
    else:
        return
    for target in targets:
        if isinstance(target, ast.Name):
            yield target.id, value
        elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
            yield from ((t.id, v) for t, v in zip(target.elts, value.elts) if isinstance(t, ast.Name))


def _is_int(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


def _names_an_exit_code(node: ast.expr) -> bool:
    """`ExitCode.X`, `errors.ExitCode.X` or `ExitCode(3)`: an alias of one member."""
    if isinstance(node, ast.Call):
        node = node.func
    elif isinstance(node, ast.Attribute):
        node = node.value
    return (isinstance(node, ast.Name) and node.id == "ExitCode") \
        or (isinstance(node, ast.Attribute) and node.attr == "ExitCode")


def test_the_alias_rule_sees_an_alias(tmp_path) -> None:
    """The rule above catches both shapes of a second name (and leaves a use of the member alone)."""
    module = ast.parse("from x import ExitCode\nGAVE_UP = ExitCode.INFRASTRUCTURE_ERROR\n"
                       "TIMED_OUT: int = errors.ExitCode(3)\nUSAGE_EXIT = 2\nOUTCOMES = {1: ExitCode.DONE}\n"
                       "USAGE, LIMIT = ExitCode.USAGE, 5\n")
    flagged = [name for node in module.body[1:] for name, value in _assignments(node)
               if _names_an_exit_code(value) or _is_int(value)]
    assert flagged == ["GAVE_UP", "TIMED_OUT", "USAGE_EXIT", "USAGE", "LIMIT"]


@pytest.mark.parametrize("error,code", [(Refused("nothing to do", site="/a"), ExitCode.REFUSED),
                                        (UsageMistake("no such folder", site="/b"), ExitCode.USAGE),
                                        (InfrastructureFault("disk full"), ExitCode.INFRASTRUCTURE_ERROR)])
def test_a_named_error_ends_a_command_with_one_line_and_its_code(monkeypatch, capsys, error, code) -> None:
    def run(args):
        raise error

    parser = cli.build_parser(core_only=True)
    real_parse = type(parser).parse_args

    def parse_args(self, argv=None, namespace=None):
        args = real_parse(self, argv, namespace)
        args.run = run
        return args

    monkeypatch.setattr(type(parser), "parse_args", parse_args)
    assert cli.main(["explain", "grade.json"]) == code
    err = capsys.readouterr().err
    assert err == f"usdgrade explain: {error}\n"


def test_the_reference_lists_every_exit_code() -> None:
    text = (REPO / "docs" / "cli.md").read_text()
    for number, name, _ in exit_code_rows():
        assert f"| {number} | `{name}` |" in text
    assert [int(c) for c in ExitCode] == sorted(int(c) for c in ExitCode)


def test_the_task_script_takes_its_exit_code_from_the_table() -> None:
    """test.sh (authoring/task_files/test.sh.in) exits with the table's infrastructure-error code,
    filled in when the task is written, and names no exit number of its own."""
    import re

    from usd_repair_verifier.authoring.task import render_test_sh

    template = (REPO / "authoring" / "task_files" / "test.sh.in").read_text()
    assert not re.search(r"\bexit [1-9]|status=[1-9]", template)
    script = render_test_sh()
    assert f"|| exit {int(ExitCode.INFRASTRUCTURE_ERROR)}\n" in script
    assert f"    status={int(ExitCode.INFRASTRUCTURE_ERROR)}\n" in script
