#!/usr/bin/env python3
"""Rewrite references to the verifier's packages to their installed, namespaced names.

The repository keeps its packages as top-level folders (checks/, gates/, scoring/, ...) so that
`pytest checks` works in a checkout; installed, they are usd_repair_verifier.checks,
usd_repair_verifier.scoring, ... (pyproject.toml's [tool.setuptools.package-dir], which this
script reads: a package mapped there is a package rewritten here). Every import and every module
path written in a string must use the namespaced name, in a checkout as installed: the checkout's
usd_repair_verifier/__init__.py makes those names import from the repository's folders.

    python tools/namespace_imports.py                 # rewrite every file in place, print the ones changed
    python tools/namespace_imports.py --check         # change nothing: list every old reference, exit 1 if any
    python tools/namespace_imports.py [--check] PATH  # only these files

Deterministic and idempotent: a second run changes nothing. What it rewrites:
- Python import statements (read with ast, so lazy imports inside functions too):
    from scoring.x import y        ->  from usd_repair_verifier.scoring.x import y
    import closed_book [as c]      ->  from usd_repair_verifier import closed_book [as c]   (same bound name)
    import scoring.x as m          ->  import usd_repair_verifier.scoring.x as m
- in Python strings and comments, and in every other text file the repository tracks (docs, README,
  pyproject.toml, shell scripts, Dockerfiles, templates): a dotted module path whose first part
  after the package is one of its modules or a name its __init__.py defines ("scoring.plugin",
  "regrade.warm.x" as a monkeypatch target, "commands.cli:main", `-m commands.cli`, `-p scoring.plugin`),
  and `import X` / `from X import` written as code (code run with -c, examples in docs).
  A word that only looks like a package ("visual.json", "records.sqlite", a folder "checks") is left.

What it cannot rewrite, and reports (in both modes, exit 1): `import scoring.x` with no `as` in
Python code binds the name `scoring`, which the namespaced form would not; and `import a, scoring`.
Write those as `from usd_repair_verifier.scoring import x` or with `as`, by hand.

Not touched: generated or recorded trees (examples/, fixtures' cases, assets, Harbor jobs,
trajectories and submissions; `usdgrade task` and the fixture build scripts regenerate them), this
file and its test (tests/test_packaging.py), which hold old names on purpose.
"""
from __future__ import annotations

import argparse
import ast
import io
import re
import subprocess
import sys
import tokenize
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAMESPACE = "usd_repair_verifier"
SKIPPED = ("examples/", "fixtures/cases/", "fixtures/assets/", "fixtures/harbor_jobs/", "fixtures/trajectories/",
           "fixtures/submissions/",
           "tools/namespace_imports.py", "tests/test_packaging.py",   # these hold old names on purpose:
           "usd_repair_verifier/__init__.py", "tests/test_namespaced_imports.py")   # the names refused
TEXT_SUFFIXES = (".py", ".md", ".toml", ".sh", ".in", ".ini", ".cfg", ".txt", ".yml", ".yaml", ".Dockerfile")
TEXT_NAMES = ("Dockerfile", "run")   # .ci/run


@dataclass(frozen=True)
class Problem:
    path: str
    line: int
    text: str
    why: str


def packages(root: Path) -> dict[str, Path]:
    """Top-level package name -> its folder, from pyproject's package-dir mapping."""
    config = tomllib.loads((root / "pyproject.toml").read_text())
    mapping = config.get("tool", {}).get("setuptools", {}).get("package-dir", {})
    found = {}
    for name, folder in mapping.items():
        head, _, rest = name.partition(".")
        if head == NAMESPACE and rest and "." not in rest:
            found[rest] = root / folder
    if not found:
        raise SystemExit(f"pyproject.toml maps no package under {NAMESPACE} ([tool.setuptools.package-dir])")
    return found


def _defined_names(init: Path, own: set[str]) -> set[str]:
    """Names an __init__.py binds that a dotted path may reach: its own definitions and what it
    imports from the verifier (not a stdlib module it imports, so "visual.json" stays a file name)."""
    if not init.is_file():
        return set()
    names = set()
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] in own):
            names |= {a.asname or a.name for a in node.names}
    return names


def members(pkgs: dict[str, Path]) -> dict[str, set[str]]:
    """What may follow `package.` in a module path: its modules, subpackages and defined names."""
    out = {}
    for name, folder in pkgs.items():
        found = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
        found |= {p.parent.name for p in folder.glob("*/__init__.py")}
        out[name] = found | _defined_names(folder / "__init__.py", set(pkgs))
    return out


class Rewriter:
    def __init__(self, pkgs: dict[str, Path]):
        self.members = members(pkgs)
        names = "|".join(sorted(pkgs, key=lambda n: (-len(n), n)))
        self.names = set(pkgs)
        # package.member, not part of a longer dotted name, a path or a word (but after an escaped
        # newline or tab in a string of code)
        self.dotted = re.compile(rf"(?:(?<![\w.\-/\\])|(?<=\\[nt]))({names})\.([A-Za-z_]\w*)(?!\w)")
        # `import X [as Y]` written as a statement: at a line's start, after `;`, or after an escaped newline
        self.import_line = re.compile(
            rf"((?:^|;|\\n)[ \t]*(?:>>> )?)import[ \t]+({names})(?:[ \t]+as[ \t]+(\w+))?(?=[ \t]*(?:$|;|\\n|[\"'`)]))",
            re.MULTILINE)
        # `from X[.y] import`
        self.from_line = re.compile(rf"(?<![\w.])from[ \t]+({names})((?:\.\w+)*)(?=[ \t]+import\b)")

    # -- text: strings, comments, documents -------------------------------------------------
    def text(self, s: str) -> str:
        s = self.from_line.sub(lambda m: f"from {NAMESPACE}.{m[1]}{m[2]}", s)
        s = self.import_line.sub(
            lambda m: f"{m[1]}from {NAMESPACE} import {m[2]}" + (f" as {m[3]}" if m[3] else ""), s)
        return self.dotted.sub(lambda m: f"{NAMESPACE}.{m[0]}" if m[2] in self.members[m[1]] else m[0], s)

    # -- Python: import statements by ast, strings and comments by token --------------------
    def python(self, source: str, path: str) -> tuple[str, list[Problem]]:
        try:
            tree = ast.parse(source)
            tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
        except (SyntaxError, tokenize.TokenError):
            return self.text(source), []   # not Python (a template): its text is rewritten
        lines = source.splitlines(keepends=True)
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line))

        def offset(lineno: int, col: int, in_bytes: bool) -> int:
            line = lines[lineno - 1]
            return starts[lineno - 1] + (len(line.encode()[:col].decode()) if in_bytes else col)

        edits: list[tuple[int, int, str]] = []
        problems: list[Problem] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and not node.level and node.module.split(".")[0] in self.names:
                start = offset(node.lineno, node.col_offset, True)
                m = re.compile(r"from\s+").match(source, start)
                edits.append((m.end(), m.end(), f"{NAMESPACE}."))
            elif isinstance(node, ast.Import) and any(a.name.split(".")[0] in self.names for a in node.names):
                start = offset(node.lineno, node.col_offset, True)
                end = offset(node.end_lineno, node.end_col_offset, True)
                statement = source[start:end]
                if len(node.names) > 1:
                    problems.append(Problem(path, node.lineno, statement, "several modules in one import: split it"))
                    continue
                alias = node.names[0]
                if "." not in alias.name:
                    new = f"from {NAMESPACE} import {alias.name}" + (f" as {alias.asname}" if alias.asname else "")
                elif alias.asname:
                    new = f"import {NAMESPACE}.{alias.name} as {alias.asname}"
                else:
                    problems.append(Problem(path, node.lineno, statement,
                                            f"binds `{alias.name.split('.')[0]}`: write `from {NAMESPACE}."
                                            f"{alias.name.rpartition('.')[0]} import {alias.name.rpartition('.')[2]}`"))
                    continue
                edits.append((start, end, new))
        # Strings and comments. From Python 3.12 an f-string is several tokens: its whole source,
        # start to end, is taken as one string, as earlier Pythons tokenize it.
        fstring_start, fstring_end = getattr(tokenize, "FSTRING_START", None), getattr(tokenize, "FSTRING_END", None)
        depth, opened = 0, None
        for tok in tokens:
            if fstring_start is not None and tok.type == fstring_start:
                depth += 1
                opened = opened or tok.start
                continue
            if fstring_end is not None and tok.type == fstring_end:
                depth -= 1
                if depth:
                    continue
                span = (offset(*opened, False), offset(*tok.end, False))
                opened = None
            elif depth or tok.type not in (tokenize.STRING, tokenize.COMMENT):
                continue
            else:
                span = (offset(*tok.start, False), offset(*tok.end, False))
            old = source[span[0]:span[1]]
            new = self.text(old)
            if new != old:
                edits.append((*span, new))
        for start, end, new in sorted(edits, reverse=True):
            source = source[:start] + new + source[end:]
        return source, problems

    def file(self, path: Path, rel: str) -> tuple[str, str, list[Problem]]:
        old = path.read_text(encoding="utf-8")
        if path.suffix == ".py":
            new, problems = self.python(old, rel)
        else:
            new, problems = self.text(old), []
        return old, new, problems


def tracked_files(root: Path) -> list[str]:
    """Files git knows of (tracked, or new and not ignored); every file when this is no git checkout."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                             capture_output=True, check=True).stdout.decode()
        names = [n for n in out.split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        names = [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()]
    return sorted(n for n in names if wanted(n) and (root / n).is_file())


def wanted(rel: str) -> bool:
    parts = rel.split("/")
    if any(p.startswith(".") and p != ".ci" for p in parts[:-1]) or "__pycache__" in parts:
        return False
    if rel.startswith(SKIPPED):
        return False
    name = parts[-1]
    return name.endswith(TEXT_SUFFIXES) or name in TEXT_NAMES and (name != "run" or rel == ".ci/run")


def changed_lines(old: str, new: str) -> list[tuple[int, str, str]]:
    a, b = old.splitlines(), new.splitlines()
    if len(a) != len(b):   # an import joined or split: show the whole span once
        return [(1, "", f"({len(a)} -> {len(b)} lines)")]
    return [(i + 1, x, y) for i, (x, y) in enumerate(zip(a, b)) if x != y]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; list old references; exit 1 if any")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (default: this script's)")
    parser.add_argument("paths", nargs="*", type=Path, help="only these files (default: every file the repository tracks)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    rewriter = Rewriter(packages(root))
    if args.paths:
        rels = [p.resolve().relative_to(root).as_posix() for p in args.paths]
    else:
        rels = tracked_files(root)
    left, problems = 0, []
    for rel in rels:
        old, new, found = rewriter.file(root / rel, rel)
        problems += found
        if new == old:
            continue
        left += 1
        if args.check:
            for lineno, before, after in changed_lines(old, new):
                print(f"{rel}:{lineno}: {before.strip()}\n{' ' * (len(rel) + len(str(lineno)) + 2)}-> {after.strip()}")
        else:
            (root / rel).write_text(new, encoding="utf-8")
            print(f"rewrote {rel}")
    for p in problems:
        print(f"{p.path}:{p.line}: cannot rewrite `{p.text}`: {p.why}", file=sys.stderr)
    if args.check and left:
        print(f"{left} file(s) still use un-namespaced names: run python tools/namespace_imports.py", file=sys.stderr)
    return 1 if problems or (args.check and left) else 0


if __name__ == "__main__":
    sys.exit(main())
