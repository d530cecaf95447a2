"""The frozen case profile: its schema, loading and validation.

A profile is JSON. Loading validates every field and raises ProfileError with
the field's name on the first problem, so a malformed case is reported as an
infrastructure error with a reason an author can act on.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import jsonable
from .vocabulary import DEFAULT_CORRESPONDENCE, DEFAULT_SAMPLING, DEFAULT_TOLERANCES, FAULT_KINDS, MEASURES

SCHEMA = "usd-repair-case-profile"
SCHEMA_VERSION = 1
SCORING_VERSION = "4"


class ProfileError(ValueError):
    """The profile is malformed: missing field, wrong type, unknown word."""


@dataclass(frozen=True)
class PackageRecord:
    root_layer: str      # file name of the root layer at the package's top level
    digest: str          # usd_repair_verifier.profiles.digest.tree_digest of the package folder


@dataclass(frozen=True)
class Fault:
    id: str
    kind: str
    target: str          # reference prim path, or "*" for the whole asset
    note: str = ""


@dataclass(frozen=True)
class CheckSpec:
    id: str
    fault: str
    family: str
    measure: str
    target: str
    input_error: dict    # component -> the broken input's error, frozen for semantic progress


@dataclass(frozen=True)
class Profile:
    id: str
    version: str
    scoring_version: str
    reference: PackageRecord
    input: PackageRecord
    faults: tuple[Fault, ...]
    checks: tuple[CheckSpec, ...]
    tolerances: dict = field(default_factory=lambda: dict(DEFAULT_TOLERANCES))
    sampling: dict = field(default_factory=lambda: dict(DEFAULT_SAMPLING))
    limits: dict = field(default_factory=dict)
    correspondence: dict = field(default_factory=lambda: dict(DEFAULT_CORRESPONDENCE))
    input_state: dict = field(default_factory=dict)   # joint_count, composition_errors of the input
    # Closed book: the grade also reads the agent's trajectory (closed_book/). allowed_urls:
    # the instruction's URLs, which the agent was given and may write back.
    closed_book: bool = False
    allowed_urls: tuple[str, ...] = ()
    # Attribute namespaces preserved like the built-in simulator ones (physics:, physx*, mjc:,
    # newton:): an engine's own attributes, e.g. "myengine" for every "myengine:..." attribute.
    preserved_namespaces: tuple[str, ...] = ()

    def to_json(self) -> dict:
        d = asdict(self)
        d = {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, **d}
        d["faults"] = [asdict(f) for f in self.faults]
        d["checks"] = [asdict(c) for c in self.checks]
        d["allowed_urls"] = list(self.allowed_urls)
        # Written only when set: a profile without extra namespaces keeps the bytes (and so the
        # digest) it had before the field existed.
        if self.preserved_namespaces:
            d["preserved_namespaces"] = list(self.preserved_namespaces)
        else:
            del d["preserved_namespaces"]
        return d

    def dumps(self) -> str:
        return jsonable.dumps(self.to_json())

    @property
    def targeted(self) -> set[str]:
        """Reference paths (and "*") that some fault targets: not healthy."""
        return {f.target for f in self.faults}


# A namespace is one or more USD identifiers joined by ':' ("myengine", "myengine:solver").
NAMESPACE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(:[A-Za-z_][A-Za-z0-9_]*)*")


def preserved_namespaces_from_json(value, where: str = "profile.preserved_namespaces") -> tuple[str, ...]:
    """Namespace tokens, sorted and without duplicates; anything else is a ProfileError."""
    if not isinstance(value, list):
        raise ProfileError(f"{where}: expected a list of attribute namespaces, got {type(value).__name__}")
    for i, token in enumerate(value):
        if not isinstance(token, str) or not NAMESPACE.fullmatch(token):
            raise ProfileError(f"{where}[{i}]: expected a namespace such as 'myengine' or 'myengine:solver' "
                               f"(identifiers joined by ':', no trailing ':'), got {token!r}")
    return tuple(sorted(set(value)))


def _require(d: dict, key: str, kind, where: str):
    if key not in d:
        raise ProfileError(f"{where}: missing field '{key}'")
    value = d[key]
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool) and kind in (int, float)):
        raise ProfileError(f"{where}.{key}: expected {getattr(kind, '__name__', kind)}, got {type(value).__name__}")
    return value


def _number_map(d: dict, where: str) -> dict:
    if not isinstance(d, dict):
        raise ProfileError(f"{where}: expected an object")
    for k, v in d.items():
        if isinstance(v, str) and v in ("inf", "-inf"):
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and math.isnan(v)):
            raise ProfileError(f"{where}.{k}: expected a number, got {v!r}")
    return {k: float(v) if isinstance(v, str) else v for k, v in d.items()}


def profile_from_json(d: dict) -> Profile:
    if not isinstance(d, dict):
        raise ProfileError("profile: expected a JSON object")
    if d.get("schema") != SCHEMA:
        raise ProfileError(f"profile.schema: expected '{SCHEMA}', got {d.get('schema')!r}")
    if d.get("schema_version") != SCHEMA_VERSION:
        raise ProfileError(f"profile.schema_version: this verifier reads {SCHEMA_VERSION}, got {d.get('schema_version')!r}")
    packages = {}
    for side in ("reference", "input"):
        rec = _require(d, side, dict, "profile")
        packages[side] = PackageRecord(
            _require(rec, "root_layer", str, f"profile.{side}"), _require(rec, "digest", str, f"profile.{side}")
        )
        if "/" in packages[side].root_layer or "\\" in packages[side].root_layer:
            raise ProfileError(f"profile.{side}.root_layer: must be a file name at the package's top level")
    faults = []
    for i, f in enumerate(_require(d, "faults", list, "profile")):
        where = f"profile.faults[{i}]"
        if not isinstance(f, dict):
            raise ProfileError(f"{where}: expected an object")
        kind = _require(f, "kind", str, where)
        if kind not in FAULT_KINDS:
            raise ProfileError(f"{where}.kind: unknown fault kind '{kind}' (known: {', '.join(sorted(FAULT_KINDS))})")
        faults.append(Fault(_require(f, "id", str, where), kind, _require(f, "target", str, where), f.get("note", "")))
    fault_ids = [f.id for f in faults]
    if len(set(fault_ids)) != len(fault_ids):
        raise ProfileError("profile.faults: fault ids must be unique")
    checks = []
    for i, c in enumerate(_require(d, "checks", list, "profile")):
        where = f"profile.checks[{i}]"
        if not isinstance(c, dict):
            raise ProfileError(f"{where}: expected an object")
        family = _require(c, "family", str, where)
        measure = _require(c, "measure", str, where)
        if measure not in MEASURES.get(family, ()):
            raise ProfileError(f"{where}: unknown check '{family}.{measure}'")
        fault = _require(c, "fault", str, where)
        if fault not in fault_ids:
            raise ProfileError(f"{where}.fault: no fault '{fault}'")
        checks.append(CheckSpec(
            _require(c, "id", str, where), fault, family, measure, _require(c, "target", str, where),
            _number_map(_require(c, "input_error", dict, where), f"{where}.input_error"),
        ))
    check_ids = [c.id for c in checks]
    if len(set(check_ids)) != len(check_ids):
        raise ProfileError("profile.checks: check ids must be unique")
    if not checks:
        raise ProfileError("profile.checks: a case needs at least one targeted check")
    tolerances = {**DEFAULT_TOLERANCES, **_number_map(d.get("tolerances", {}), "profile.tolerances")}
    closed_book = d.get("closed_book", False)
    if not isinstance(closed_book, bool):
        raise ProfileError(f"profile.closed_book: expected true or false, got {closed_book!r}")
    allowed = d.get("allowed_urls", [])
    if not isinstance(allowed, list) or not all(isinstance(u, str) for u in allowed):
        raise ProfileError("profile.allowed_urls: expected a list of strings")
    return Profile(
        id=_require(d, "id", str, "profile"),
        version=str(_require(d, "version", (str, int), "profile")),
        scoring_version=_require(d, "scoring_version", str, "profile"),
        reference=packages["reference"],
        input=packages["input"],
        faults=tuple(faults),
        checks=tuple(checks),
        tolerances=tolerances,
        sampling={**DEFAULT_SAMPLING, **_number_map(d.get("sampling", {}), "profile.sampling")},
        limits=_number_map(d.get("limits", {}), "profile.limits"),
        correspondence={**DEFAULT_CORRESPONDENCE, **_number_map(d.get("correspondence", {}), "profile.correspondence")},
        input_state=_number_map(d.get("input_state", {}), "profile.input_state"),
        closed_book=closed_book,
        allowed_urls=tuple(allowed),
        preserved_namespaces=preserved_namespaces_from_json(d.get("preserved_namespaces", [])),
    )


def load_profile(path: str | Path) -> Profile:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ProfileError(f"cannot read profile {path}: {error}") from error
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except ValueError as error:
        raise ProfileError(f"profile {path} is not valid JSON: {error}") from error
    return profile_from_json(data)


def _reject_constant(name: str):
    raise ValueError(f"non-standard JSON constant {name}")
