"""The README's promises about itself: its first commands are the Quick start's two, and every
link in it (and in docs/) leads somewhere, so moving a section cannot strand a reader."""
from __future__ import annotations

import json

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


def test_the_readme_is_a_front_door():
    assert len(README.read_text().splitlines()) <= 260


def _usdgrade_commands(text: str) -> list[str]:
    """Every `usdgrade ...` the text shows: lines of its code blocks and its inline code spans."""
    commands = []
    for block in re.findall(r"(?ms)^```[a-z]*\n(.*?)^```", text):
        commands += [line.split("  #")[0].strip() for line in block.splitlines() if line.startswith("usdgrade ")]
    commands += [" ".join(span.split()) for span in re.findall(r"`(usdgrade\s[^`]+)`", text)]  # a span may wrap
    return commands


def test_a_command_is_found_in_every_form_the_markdown_shows_it():
    text = "```sh\nusdgrade grade DIR  # a comment\n```\nor `usdgrade\nexplain OUT/grade.json`, not `usdgrader x`"
    assert _usdgrade_commands(text) == ["usdgrade grade DIR", "usdgrade explain OUT/grade.json"]


def test_a_command_or_option_the_parser_lacks_is_named():
    from usd_repair_verifier.commands.cli import build_parser

    parser = build_parser()
    assert _unknown("usdgrade regrade JOB --cases C [--db FILE]", parser) is None
    assert _unknown("usdgrade regrades JOB", parser) == "usdgrade has no command 'regrades'"
    assert _unknown("usdgrade records show X --out D", parser) == "usdgrade records show has no option --out"


def _unknown(command: str, parser) -> str | None:
    import argparse
    import shlex

    words = shlex.split(command.replace("[", " ").replace("]", " ").replace("|", " "))[1:]
    node, path = parser, ["usdgrade"]
    while True:
        sub = next((a for a in node._actions if isinstance(a, argparse._SubParsersAction)), None)
        if sub is None or not words or words[0].startswith("-"):
            break
        if words[0] == "COMMAND":       # a placeholder for any of them
            return None
        if words[0] not in sub.choices:
            return f"{' '.join(path)} has no command {words[0]!r}"
        path.append(words[0])
        node = sub.choices[words.pop(0)]
    known = {flag for action in node._actions for flag in action.option_strings}
    for word in words:
        flag = word.split("=")[0]
        if flag.startswith("-") and flag not in known and flag != "...":
            return f"{' '.join(path)} has no option {flag}"
    return None


@pytest.mark.parametrize("markdown", [README, *sorted((ROOT / "docs").glob("*.md"))], ids=lambda p: p.name)
def test_every_usdgrade_command_shown_exists_in_the_parser(markdown):
    from usd_repair_verifier.commands.cli import build_parser

    parser = build_parser()
    shown = _usdgrade_commands(markdown.read_text())
    problems = [f"{command}: {why}" for command in shown if (why := _unknown(command, parser))]
    assert not problems, problems
    if markdown == README:
        assert len(shown) >= 15


@pytest.mark.slow
def test_the_readme_records_and_regrade_commands_run_as_written(tmp_path):
    """The task author's block, run from a folder that holds the checkout's fixtures, as written."""
    import os
    import shlex
    import subprocess
    import sys

    block = re.search(r"(?ms)^```\n(usdgrade records ingest.*?)^```", README.read_text()).group(1)
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures")
    (tmp_path / "out").mkdir()                                  # as the Quick start's first command left it
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    outputs = []
    for line in block.splitlines():
        r = subprocess.run(shlex.split(line), cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
        assert r.returncode == 0, f"{line}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
        outputs.append(r.stdout + r.stderr)
    assert (tmp_path / "out" / "report" / "report.html").is_file()
    # The hopper task is closed book: its 9 trials recorded the task's own case, not the open-book
    # fixtures/cases/hopper_body_and_com; each is skipped with why (with model-c's environment that
    # never started), so the closed-book violation keeps its 0 and is never re-graded to 1.0.
    assert "17 to grade" in outputs[2] and "10 cannot be graded" in outputs[2] and "rewards moved" in outputs[2]
    assert "graded 17 in" in outputs[2] and "16 graded, 1 invalid" in outputs[2]
    assert "hopper_body_and_com__b5b6239" in outputs[2].split("fixtures/cases/hopper_body_and_com is profile sha256:")[0]
    assert "the trial was graded against sha256:" in outputs[2] and "--accept-profile-change" in outputs[2]
    regraded = {p.parent.name: json.loads(p.read_text()) for p in (tmp_path / "out" / "regrade").rglob("grade.json")}
    assert len(regraded) == 17 and not any(name.startswith("hopper_body_and_com") for name in regraded)
    assert "5 to grade" in outputs[3] and "graded 5 in" in outputs[3]      # model-c: 3 hopper trials, 1 never started


def test_every_extra_has_its_install_size_in_the_readme():
    """The install table gives each extra's venv size in MB, as tools/install_sizes.sh measures it."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    text = README.read_text()
    rows = {m.group(1) or "core": m.group(2)   # `pip install -e .` (the core), then `.[EXTRA]`
            for m in re.finditer(r"(?m)^\| `(?:pip install -e \.|\.\[(\w+)\])` \|.*\| ([\d,]+ MB) \|$", text)}
    assert set(rows) == {"core", *extras}, rows
    script = (ROOT / "tools" / "install_sizes.sh").read_text()
    assert set(re.search(r"for extra in ([\w ]+); do", script).group(1).split()) == {"none", "core", *extras}


@pytest.mark.slow
def test_the_second_command_collects_every_test_module_with_the_pytest_script(tmp_path):
    """`pytest tests`, the console script (not `python -m pytest`, which puts the current folder on
    sys.path), imports the modules that use `tests.*`, `bench.*` and `fixtures.*` helpers."""
    import os
    import subprocess
    import sys

    script = Path(sys.executable).with_name("pytest")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    modules = ["tests/test_authoring.py", "tests/test_physical_grade.py", "tests/test_damaged_partial_repairs.py"]
    done = subprocess.run([str(script), "--collect-only", "-q", "-p", "no:cacheprovider", *modules], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
