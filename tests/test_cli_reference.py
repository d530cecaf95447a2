"""docs/cli.md is the `usdgrade` parser's own account of every command and option."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_docs_cli_md_is_what_the_parser_gives():
    r = subprocess.run([sys.executable, "tools/cli_reference.py", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_docs_cli_md_names_every_command_and_option():
    import argparse

    from usd_repair_verifier.commands.cli import build_parser

    text = (ROOT / "docs" / "cli.md").read_text()
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    for name, sub in commands.items():
        assert f"## `usdgrade {name}`" in text, name
        for action in sub._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"`{flag}" in text, (name, flag)
