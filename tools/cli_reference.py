"""Write docs/cli.md, the `usdgrade` command-line reference, from the parser itself.

    python tools/cli_reference.py           # rewrite docs/cli.md
    python tools/cli_reference.py --check   # exit 1 if docs/cli.md is not what the parser gives

Every command and option comes from `usd_repair_verifier.commands.cli.build_parser()`, so the
reference cannot drift from the command; tests/test_cli_reference.py runs the check.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "cli.md"
WIDTH = 100


def _subparsers(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser, str]]:
    """(name, parser, one-line help) of each subcommand, in the order the parser lists them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            return [(name, sub, helps.get(name) or "") for name, sub in action.choices.items()]
    return []


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _option_rows(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        if action.option_strings:
            name = ", ".join(action.option_strings)
            if action.nargs != 0:
                choices = "{" + ",".join(map(str, action.choices)) + "}" if action.choices else None
                name += " " + (action.metavar or choices or action.dest.upper())
        else:
            name = action.metavar or action.dest
        default = action.default
        said = "default" in (action.help or "")      # a computed default (-j: the machine's cores) is said in words
        shown = "" if said or default in (None, False, [], argparse.SUPPRESS) or action.nargs == 0 \
            else f" (default: `{default}`)"
        required = " **required**" if getattr(action, "required", False) and action.option_strings else ""
        rows.append(f"| `{_cell(name)}` | {_cell(action.help or '')}{shown}{required} |")
    return rows


def _section(path: str, parser: argparse.ArgumentParser, summary: str, level: int) -> list[str]:
    parser.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=WIDTH)
    lines = [f"{'#' * level} `{path}`", ""]
    if summary:
        lines += [summary[0].upper() + summary[1:] + ("" if summary.endswith(".") else "."), ""]
    usage = parser.format_usage().strip().removeprefix("usage: ").splitlines()
    lines += ["```", usage[0], *(line.removeprefix(" " * len("usage: ")) for line in usage[1:]), "```", ""]
    rows = _option_rows(parser)
    if rows:
        lines += ["| argument | what it does |", "| --- | --- |", *rows, ""]
    for name, sub, help_text in _subparsers(parser):
        lines += _section(f"{path} {name}", sub, help_text, level + 1)
    return lines


def _exit_code_section() -> list[str]:
    """The exit-code table, from profiles/errors.py's ExitCode: every command and the sealed
    session exit with one of these."""
    from usd_repair_verifier.profiles.errors import exit_code_rows

    rows = [f"| {code} | `{name}` | {_cell(meaning)} |" for code, name, meaning in exit_code_rows()]
    return ["## Exit codes", "", "Every command exits with one of these (`ExitCode` in profiles/errors.py).", "",
            "| code | name | meaning |", "| --- | --- | --- |", *rows, ""]


def render() -> str:
    from usd_repair_verifier.commands.cli import build_parser

    parser = build_parser()
    lines = ["# The `usdgrade` command", "",
             "Generated from the parser by `python tools/cli_reference.py` (do not edit by hand; "
             "`tests/test_cli_reference.py` checks it is current).", "",
             "```", parser.description.strip(), "```", ""]
    lines += ["| argument | what it does |", "| --- | --- |", *_option_rows(parser), ""]
    lines += _exit_code_section()
    for name, sub, help_text in _subparsers(parser):
        lines += _section(f"usdgrade {name}", sub, help_text, 2)
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str]) -> int:
    from generated_page import write_or_check   # beside this script

    return write_or_check(DOC, render(), "tools/cli_reference.py", check=argv == ["--check"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
