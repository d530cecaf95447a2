"""The frozen case profile: its schema, loading and validation.

A profile is JSON. The pydantic models below are its schema (docs/schemas/profile.schema.json is
generated from them). Loading validates every field and raises ProfileError with the field's name
on the first problem, so a malformed case is reported as an infrastructure error with a reason an
author can act on.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, PlainValidator, StrictBool,
                      StrictStr, TypeAdapter, ValidationError, ValidationInfo, WithJsonSchema, field_validator,
                      model_validator)
from pydantic_core import PydanticCustomError

from . import jsonable
from .vocabulary import DEFAULT_CORRESPONDENCE, DEFAULT_SAMPLING, DEFAULT_TOLERANCES, FAULT_KINDS, MEASURES
from .errors import Refused

SCHEMA = "usd-repair-case-profile"
SCHEMA_VERSION = 1
SCORING_VERSION = "7"


class ProfileError(Refused, ValueError):
    """The profile is malformed: missing field, wrong type, unknown word."""


def _problem(message: str, *at: str | int) -> PydanticCustomError:
    """A validation problem; `at` continues the field's location (an item, a key) in the message."""
    return PydanticCustomError("profile", "{message}", {"message": message, "at": at})


def _number(value: Any) -> int | float:
    """A JSON number (ints stay ints, so a profile writes back the bytes it was read from), or
    "inf"/"-inf", the strings jsonable writes for non-finite errors. NaN and booleans are not numbers."""
    if isinstance(value, str) and value in ("inf", "-inf"):
        return float(value)
    if not isinstance(value, (bool, str)) and hasattr(value, "item"):  # a numpy scalar, from a measurement
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (isinstance(value, float) and math.isnan(value)):
        raise _problem(f"expected a number, got {value!r}")
    return value


Number = Annotated[int | float, PlainValidator(_number),
                   WithJsonSchema({"anyOf": [{"type": "number"}, {"enum": ["inf", "-inf"]}]})]
NumberMap = dict[str, Number]

# A namespace is one or more USD identifiers joined by ':' ("myengine", "myengine:solver").
NAMESPACE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(:[A-Za-z_][A-Za-z0-9_]*)*")


def _namespace(token: str) -> str:
    if not NAMESPACE.fullmatch(token):
        raise _problem("expected a namespace such as 'myengine' or 'myengine:solver' "
                       f"(identifiers joined by ':', no trailing ':'), got {token!r}")
    return token


Namespace = Annotated[StrictStr, AfterValidator(_namespace),
                      WithJsonSchema({"type": "string", "pattern": f"^{NAMESPACE.pattern}$"})]
# Sorted and without duplicates: the same set of namespaces is the same profile.
Namespaces = Annotated[tuple[Namespace, ...], AfterValidator(lambda tokens: tuple(sorted(set(tokens))))]


# Variant selections (the SimReady layout keeps each engine's physics behind a variant set):
# prim path -> variant set -> selection. An absolute prim path without variant selections or
# properties; a set name is a USD identifier; a selection a variant name ('-' and '|' allowed,
# a leading digit or '.' too).
PRIM_PATH = re.compile(r"(/[^/\s{}\[\]<>:.=@\"'`]+)+")
VARIANT_SET = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
VARIANT_NAME = re.compile(r"\.?[A-Za-z0-9_|\-]+")


def _variant_selections(given: dict) -> dict[str, dict[str, str]]:
    for path, sets in given.items():
        if not PRIM_PATH.fullmatch(path):
            raise _problem(f"expected an absolute prim path such as '/Gripper', got {path!r}", path)
        if not sets:
            raise _problem("names no variant set", path)
        for name, selection in sets.items():
            if not VARIANT_SET.fullmatch(name):
                raise _problem(f"expected a variant set name (an identifier), got {name!r}", path)
            if not VARIANT_NAME.fullmatch(selection):
                raise _problem(f"expected a variant name, got {selection!r}", path, name)
    # Sorted: the same selections are the same profile.
    return {path: dict(sorted(sets.items())) for path, sets in sorted(given.items())}


VariantSelections = Annotated[dict[StrictStr, dict[StrictStr, StrictStr]], AfterValidator(_variant_selections),
                              WithJsonSchema({
                                  "type": "object",
                                  "description": "prim path -> variant set -> selection, applied in the stage's "
                                                 "session layer to reference, input and candidate",
                                  "propertyNames": {"pattern": f"^{PRIM_PATH.pattern}$"},
                                  "additionalProperties": {
                                      "type": "object", "minProperties": 1,
                                      "propertyNames": {"pattern": f"^{VARIANT_SET.pattern}$"},
                                      "additionalProperties": {"type": "string",
                                                               "pattern": f"^{VARIANT_NAME.pattern}$"}}})]


def _with_defaults(defaults: dict):
    """A map given in part keeps the defaults of the keys it leaves out."""
    return AfterValidator(lambda given: {**defaults, **given})


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class PackageRecord(_Model):
    root_layer: StrictStr = Field(description="file name of the root layer at the package's top level",
                                  json_schema_extra={"pattern": r"^[^/\\]+$"})
    digest: StrictStr = Field(description="usd_repair_verifier.profiles.digest.tree_digest of the package folder")

    @field_validator("root_layer")
    @classmethod
    def _top_level(cls, name: str) -> str:
        if "/" in name or "\\" in name:
            raise _problem("must be a file name at the package's top level")
        return name


class Fault(_Model):
    id: StrictStr
    # Not enumerated in the published schema: the kinds are the family table's, and a new family
    # changes nothing but its module and its entry. Loading refuses an unknown kind.
    kind: StrictStr = Field(description="a fault kind of the family table (profiles/families.py; "
                                        "`usdgrade inject --list` lists them)")
    target: StrictStr = Field(description='reference prim path, or "*" for the whole asset')
    note: StrictStr = ""

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, kind: str) -> str:
        if kind not in FAULT_KINDS:
            raise _problem(f"unknown fault kind '{kind}' (known: {', '.join(sorted(FAULT_KINDS))})")
        return kind


class CheckSpec(_Model):
    id: StrictStr
    fault: StrictStr = Field(description="the id of the fault this check measures the repair of")
    family: StrictStr
    measure: StrictStr
    target: StrictStr
    input_error: NumberMap = Field(description="component -> the broken input's error, frozen for semantic progress")

    @model_validator(mode="after")
    def _known_check(self) -> CheckSpec:
        if self.measure not in MEASURES.get(self.family, ()):
            raise _problem(f"unknown check '{self.family}.{self.measure}'")
        return self


class Profile(_Model):
    model_config = ConfigDict(json_schema_extra=lambda schema: _envelope(schema))

    id: StrictStr
    version: Annotated[StrictStr, BeforeValidator(lambda v: str(v) if type(v) is int else v),
                       WithJsonSchema({"type": ["string", "integer"], "description": "an integer is read as its text"})]
    scoring_version: StrictStr
    reference: PackageRecord
    input: PackageRecord
    faults: tuple[Fault, ...]
    checks: tuple[CheckSpec, ...]
    tolerances: Annotated[NumberMap, _with_defaults(DEFAULT_TOLERANCES)] = Field(
        default_factory=lambda: dict(DEFAULT_TOLERANCES))
    sampling: Annotated[NumberMap, _with_defaults(DEFAULT_SAMPLING)] = Field(
        default_factory=lambda: dict(DEFAULT_SAMPLING))
    limits: NumberMap = Field(default_factory=dict)
    correspondence: Annotated[NumberMap, _with_defaults(DEFAULT_CORRESPONDENCE)] = Field(
        default_factory=lambda: dict(DEFAULT_CORRESPONDENCE))
    input_state: NumberMap = Field(default_factory=dict, description="joint_count, composition_errors of the input")
    # Closed book: the grade also reads the agent's trajectory (closed_book/). allowed_urls:
    # the instruction's URLs, which the agent was given and may write back.
    closed_book: StrictBool = False
    allowed_urls: tuple[StrictStr, ...] = ()
    # Attribute namespaces preserved like the built-in simulator ones (physics:, physx*, mjc:,
    # newton:): an engine's own attributes, e.g. "myengine" for every "myengine:..." attribute.
    preserved_namespaces: Namespaces = ()
    # Composed into every stage the grade reads (reference, input, candidate) through the stage's
    # session layer, stronger than anything in the package: the agent cannot change what is graded
    # by editing these selections (docs/simready.md).
    variant_selections: VariantSelections = Field(default_factory=dict)

    @field_validator("faults")
    @classmethod
    def _unique_faults(cls, faults: tuple[Fault, ...]) -> tuple[Fault, ...]:
        ids = [f.id for f in faults]
        if len(set(ids)) != len(ids):
            raise _problem("fault ids must be unique")
        return faults

    @field_validator("checks")
    @classmethod
    def _checks_of_known_faults(cls, checks: tuple[CheckSpec, ...], info: ValidationInfo) -> tuple[CheckSpec, ...]:
        if not checks:
            raise _problem("a case needs at least one targeted check")
        ids = [c.id for c in checks]
        if len(set(ids)) != len(ids):
            raise _problem("check ids must be unique")
        fault_ids = {f.id for f in info.data.get("faults", ())}
        for i, check in enumerate(checks):
            if "faults" in info.data and check.fault not in fault_ids:
                raise _problem(f"no fault '{check.fault}'", i, "fault")
        return checks

    def to_json(self) -> dict:
        d = {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, **self.model_dump()}
        d["faults"] = [f.model_dump() for f in self.faults]
        d["checks"] = [c.model_dump() for c in self.checks]
        d["allowed_urls"] = list(self.allowed_urls)
        # Written only when set: a profile without extra namespaces keeps the bytes (and so the
        # digest) it had before the field existed.
        if self.preserved_namespaces:
            d["preserved_namespaces"] = list(self.preserved_namespaces)
        else:
            del d["preserved_namespaces"]
        # The same for variant selections: a profile without them keeps its bytes and digest.
        if not self.variant_selections:
            del d["variant_selections"]
        return d

    def dumps(self) -> str:
        return jsonable.dumps(self.to_json())

    @property
    def targeted(self) -> set[str]:
        """Reference paths (and "*") that some fault targets: not healthy."""
        return {f.target for f in self.faults}


def _envelope(schema: dict) -> None:
    """profile.json's first two fields name its format; loading checks them before the profile's own."""
    schema["properties"] = {"schema": {"const": SCHEMA}, "schema_version": {"const": SCHEMA_VERSION},
                            **schema["properties"]}
    schema["required"] = ["schema", "schema_version", *schema["required"]]


# How a type error reads: what the field expects.
EXPECTED = {
    "string_type": "str", "int_type": "int", "bool_type": "true or false", "list_type": "a list",
    "tuple_type": "a list", "dict_type": "an object", "model_type": "an object", "model_attributes_type": "an object",
}


def problem_text(error: ValidationError, root: str) -> str:
    """The first problem of a validation, as `root.field[i].key: what is wrong`."""
    first = error.errors(include_url=False)[0]
    ctx = first.get("ctx") or {}
    loc = (*first["loc"], *ctx.get("at", ()))
    if first["type"] == "missing":
        return f"{_where(root, loc[:-1])}: missing field '{loc[-1]}'"
    where = _where(root, loc)
    if first["type"] in EXPECTED:
        return f"{where}: expected {EXPECTED[first['type']]}, got {type(first['input']).__name__}"
    return f"{where}: {ctx.get('message', first['msg'])}"


def _where(root: str, loc: tuple) -> str:
    return root + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)


_NAMESPACES = TypeAdapter(Namespaces)


def preserved_namespaces_from_json(value, where: str = "profile.preserved_namespaces") -> tuple[str, ...]:
    """Namespace tokens, sorted and without duplicates; anything else is a ProfileError."""
    try:
        return _NAMESPACES.validate_python(value)
    except ValidationError as error:
        raise ProfileError(problem_text(error, where)) from None


def profile_from_json(d: dict) -> Profile:
    if not isinstance(d, dict):
        raise ProfileError("profile: expected a JSON object")
    if d.get("schema") != SCHEMA:
        raise ProfileError(f"profile.schema: expected '{SCHEMA}', got {d.get('schema')!r}")
    if d.get("schema_version") != SCHEMA_VERSION:
        raise ProfileError(f"profile.schema_version: this verifier reads {SCHEMA_VERSION}, got {d.get('schema_version')!r}")
    try:
        return Profile.model_validate(d)
    except ValidationError as error:
        raise ProfileError(problem_text(error, "profile")) from None


_SELECTIONS = TypeAdapter(VariantSelections)


def variant_selections_from_json(value, where: str = "profile.variant_selections") -> dict[str, dict[str, str]]:
    """Variant selections, sorted; anything else is a ProfileError."""
    try:
        return _SELECTIONS.validate_python(value)
    except ValidationError as error:
        raise ProfileError(problem_text(error, where)) from None


def selection_text(selections: dict[str, dict[str, str]]) -> str:
    """`/Gripper:PhysX=Enabled, ...` (the --variant spelling), or "none"."""
    return ", ".join(f"{path}:{name}={choice}" for path, sets in sorted(selections.items())
                     for name, choice in sorted(sets.items())) or "none"


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
