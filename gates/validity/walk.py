"""The file-level rules, in pure Python (no file is ever opened): local_package,
single_root_layer, and the file walk of resource_limits."""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import Any

from .limits import ResourceLimits
from .paths import SCHEME_RE
from .rule_results import RuleResult
from .rules import TEXT_LAYER_EXTENSIONS, USD_EXTENSIONS, has_usd_ext
from .text import MAX_DETAILS, cap, clean, human_bytes, inside, show


def check_local_package(submission: Any) -> tuple[RuleResult, str | None]:
    """The rule and the package's real path (None when it failed)."""
    rule = "local_package"
    if submission is None:
        return RuleResult(rule, False, "no submission path given"), None
    try:
        raw = os.fspath(submission)
    except TypeError:
        return RuleResult(rule, False, f"submission is not a path: {type(submission).__name__}"), None
    if isinstance(raw, bytes):
        raw = os.fsdecode(raw)
    problem = _path_text_problem(raw)
    if problem:
        return RuleResult(rule, False, problem), None
    path = os.path.abspath(raw)
    problem = _folder_problem(path, clean(path))
    if problem:
        return RuleResult(rule, False, problem), None
    real = os.path.realpath(path)
    return RuleResult(rule, True, f"{clean(path)} is a readable local folder"), real


def _path_text_problem(raw: str) -> str | None:
    if not raw:
        return "submission path is empty"
    if "\x00" in raw:
        return f"submission path contains a NUL byte: {clean(raw)!r}"
    if "://" in raw or (SCHEME_RE.match(raw) and len(raw.split(":", 1)[0]) > 1):
        return f"submission {clean(raw)!r} looks like a URL; a local folder is required"
    return None


def _folder_problem(path: str, shown: str) -> str | None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return f"{shown} does not exist"
    except OSError as exc:
        return f"{shown} cannot be inspected: {clean(exc.strerror or exc)}"
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        return f"{shown} is a symlink (to {clean(target)}), not a local folder; pass the real directory"
    if not stat.S_ISDIR(st.st_mode):
        kind = "a regular file" if stat.S_ISREG(st.st_mode) else "not a directory"
        return f"{shown} is {kind}; a package must be a folder"
    if not os.access(path, os.R_OK | os.X_OK):
        return f"{shown} is not readable"
    try:
        with os.scandir(path) as it:
            next(it, None)
    except OSError as exc:
        return f"{shown} cannot be listed: {clean(exc.strerror or exc)}"
    return None


def check_single_root(root: str) -> tuple[RuleResult, str | None]:
    """The rule and the root layer's path (None when there is not exactly one)."""
    rule = "single_root_layer"
    candidates: list[str] = []
    entries = 0
    try:
        with os.scandir(root) as it:
            for entry in it:
                entries += 1
                if entries > 1_000_000:
                    break
                if not has_usd_ext(entry.name):
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):
                        continue
                except OSError:
                    pass
                candidates.append(entry.name)
    except OSError as exc:
        return RuleResult(rule, False, f"cannot list the package: {clean(exc)}"), None
    candidates.sort()
    exts = "/".join(USD_EXTENSIONS)
    if not candidates:
        if entries == 0:
            return RuleResult(rule, False, f"the package folder is empty: no root layer ({exts})"), None
        return RuleResult(
            rule, False,
            f"no root layer: no {exts} file at the top level of the package ({entries} other entries)",
        ), None
    if len(candidates) > 1:
        names = ", ".join(clean(c) for c in candidates[:10])
        more = f" and {len(candidates) - 10} more" if len(candidates) > 10 else ""
        return RuleResult(
            rule, False,
            f"{len(candidates)} candidate root layers at the top level, exactly one is required: {names}{more}",
            cap(candidates),
        ), None
    name = candidates[0]
    return RuleResult(rule, True, f"root layer {clean(name)}"), os.path.join(root, name)


@dataclass
class WalkResult:
    files: int = 0
    dirs: int = 0
    total_bytes: int = 0
    text_bytes: int = 0
    binary_bytes: int = 0
    symlinks: int = 0
    offences: list[str] = field(default_factory=list)
    stopped: str | None = None   # why the walk ended early: "files", "directories", "offences"


def walk_package(root: str, limits: ResourceLimits) -> WalkResult:
    """Count and size every entry below root without following symlinks or opening a file.

    Stops at the first count limit crossed, so a million entries cost milliseconds."""
    return _PackageWalk(root, limits).run()


class _PackageWalk:
    def __init__(self, root: str, limits: ResourceLimits):
        self.root = root
        self.limits = limits
        self.res = WalkResult()
        self.stack = [root]
        self.total_reported = False
        self.max_entries = 2 * limits.max_files + 1000  # hard bound on work
        self.seen_entries = 0

    def offence(self, msg: str) -> None:
        self.res.offences.append(msg)

    def run(self) -> WalkResult:
        while self.stack and self.res.stopped is None:
            directory = self.stack.pop()
            try:
                it = os.scandir(directory)
            except OSError as exc:
                self.offence(f"{show(directory, self.root)}/: cannot list directory ({clean(exc.strerror or exc)})")
                continue
            with it:
                for entry in it:
                    self.visit(entry)
                    if self.res.stopped is not None:
                        break
            if len(self.res.offences) > 10 * MAX_DETAILS:
                self.res.stopped = "offences"
        return self.res

    def visit(self, entry: os.DirEntry) -> None:
        """Count one entry; sets res.stopped when a count limit is crossed."""
        res, limits = self.res, self.limits
        self.seen_entries += 1
        path = entry.path
        shown = show(path, self.root)
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError as exc:
            self.offence(f"{shown}: cannot stat ({clean(exc.strerror or exc)})")
            return
        mode = st.st_mode
        if stat.S_ISDIR(mode):
            res.dirs += 1
            if res.dirs > limits.max_files:
                self.offence(f"more than {limits.max_files} directories (stopped walking at {shown})")
                res.stopped = "directories"
                return
            self.stack.append(path)
            return
        res.files += 1
        if res.files > limits.max_files:
            self.offence(
                f"more than {limits.max_files} files (limit max_files={limits.max_files}; "
                f"stopped counting at {shown})"
            )
            res.stopped = "files"
        elif self.seen_entries > self.max_entries:  # pragma: no cover - covered by the two above
            res.stopped = "entries"
        elif stat.S_ISLNK(mode):
            res.symlinks += 1
            self.symlink(path, shown)
        elif not stat.S_ISREG(mode):
            self.offence(f"{shown}: is {_special_kind(mode)}; only regular files and directories are allowed")
        else:
            self.regular_file(entry, st.st_size, shown)

    def symlink(self, path: str, shown: str) -> None:
        """Allowed only when it resolves to a regular file or directory inside the package."""
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        real = os.path.realpath(path)
        if not inside(real, self.root):
            via = "" if os.path.normpath(target) == real else f" ({clean(real)})"
            self.offence(f"{shown}: symlink to {clean(target)} resolves outside the package{via}")
            return
        try:
            tst = os.stat(real)
        except OSError:
            self.offence(f"{shown}: dangling or looping symlink (to {clean(target)})")
            return
        if not (stat.S_ISREG(tst.st_mode) or stat.S_ISDIR(tst.st_mode)):
            self.offence(f"{shown}: symlink to {clean(target)} is not a regular file or directory")

    def regular_file(self, entry: os.DirEntry, size: int, shown: str) -> None:
        res, limits = self.res, self.limits
        if size > limits.max_file_bytes:
            self.offence(
                f"{shown}: {human_bytes(size)} ({size} bytes) exceeds max_file_bytes="
                f"{limits.max_file_bytes}"
            )
        res.total_bytes += size
        if entry.name.lower().endswith(TEXT_LAYER_EXTENSIONS):
            res.text_bytes += size
        else:
            res.binary_bytes += size
        if res.total_bytes > limits.max_total_bytes and not self.total_reported:
            self.total_reported = True
            self.offence(
                f"package exceeds max_total_bytes={limits.max_total_bytes} "
                f"(reached {res.total_bytes} bytes at {shown})"
            )
        if not os.access(entry.path, os.R_OK):
            self.offence(f"{shown}: not readable")


def _special_kind(mode: int) -> str:
    return (
        "a FIFO" if stat.S_ISFIFO(mode) else
        "a socket" if stat.S_ISSOCK(mode) else
        "a device" if (stat.S_ISCHR(mode) or stat.S_ISBLK(mode)) else
        "not a regular file"
    )
