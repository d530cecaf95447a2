"""The README's promises about itself: its first commands are the Quick start's two, and every
link in it (and in docs/) leads somewhere, so moving a section cannot strand a reader."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
QUICK_START = (
    "pip install -e . && pytest checks --case fixtures/cases/ant_two_joint_faults "
    "--submission fixtures/submissions/ant_two_joint_faults_one_repair --out out/demo",
    "pip install -e '.[test]' && pytest tests -n 2 -q",
)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(markdown: Path) -> set[str]:
    text = re.sub(r"(?ms)^```.*?^```", "", markdown.read_text())   # a '#' inside a code block is no heading
    return {slug(m.group(1)) for m in re.finditer(r"(?m)^#{1,6} (.+)$", text)}


def test_the_first_commands_are_the_quick_starts_two():
    first_block = re.search(r"(?ms)^```\n(.*?)^```", README.read_text()).group(1)
    assert tuple(first_block.splitlines()) == QUICK_START


def test_the_slug_is_githubs():
    assert slug("The `usdgrade` command") == "the-usdgrade-command"
    assert slug("grade.json") == "gradejson"
    assert slug("Checking an installation: `usdgrade doctor`") == "checking-an-installation-usdgrade-doctor"


@pytest.mark.parametrize("markdown", [README, *sorted((ROOT / "docs").glob("*.md"))], ids=lambda p: p.name)
def test_every_relative_link_leads_somewhere(markdown):
    broken = []
    for target in LINK.findall(markdown.read_text()):
        if re.match(r"[a-z]+:", target):
            continue   # an outside address: not this repository's to check
        path, _, anchor = target.partition("#")
        file = (markdown.parent / path).resolve() if path else markdown
        if not file.exists():
            broken.append(f"{target}: no {file}")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading #{anchor} in {file.name}")
    assert not broken, broken
