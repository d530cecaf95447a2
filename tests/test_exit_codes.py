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


def _python_files():
    for package in CODE:
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
    """No module but profiles/errors.py gives an exit code a number of its own."""
    found = []
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) \
                    and type(node.value.value) is int:
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                found += [f"{path.relative_to(REPO)}:{node.lineno} {n}" for n in names if "EXIT" in n.upper()]
    assert not found, found


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
