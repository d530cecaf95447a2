"""The typed result of a check and of a gate: one record from the measure to grade.json.

`checks/measurement.py` turns a measure function's components into a `CheckResult`; every gate
returns a `GateResult`, whose failures name the family, measure, target and failing components
they come from. The grade's tests attach the record to pytest-json-report's report
(`as_metadata`), the plugin reads it back on the other side of that hop (`parse`), the reward
is decided from its attributes and grade.json is written from the same models
(scoring/grade_file.py), so `explain`, the HTML page and the records read fields, not text.

pydantic only: the xdist controller reads these records without the measuring code. Non-finite
numbers cross JSON as the strings "inf", "-inf" and "nan" (profiles/jsonable.py) and are read
back as floats.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_serializer

from .jsonable import jsonable

# An error, a tolerance: a float, or an int where a measure counts. Kept as written, so the same
# measurement gives the same bytes in grade.json.
Number = int | float

# What an error and a tolerance are measured in (ComponentResult.unit), and what the values are
# measured in (value_unit). Every quantity is SI; a log-ratio compares two positive magnitudes.
UNITS = {
    "m": "metres",
    "deg": "degrees",
    "m/s": "metres per second",
    "deg/s": "degrees per second",
    "log_ratio": "|ln(candidate / reference)| of two positive magnitudes",
    "share": "a fraction from 0 to 1",
    "count": "a number of things",
    "flag": "0 when the candidate agrees, 1 when it does not",
    "1": "a dimensionless number (a friction coefficient, a colour channel)",
    "kg": "kilograms",
    "kg m^2": "kilogram square metres",
    "m^2": "square metres",
    "kg/m^3": "kilograms per cubic metre",
    "N": "newtons", "N m": "newton metres",
    "N/m": "newtons per metre", "N m/deg": "newton metres per degree",
    "N s/m": "newton seconds per metre", "N m s/deg": "newton metre seconds per degree",
}
# A value unit in the stage's own units: the powers of its metre and kilogram (metersPerUnit,
# kilogramsPerUnit). Degrees and dimensionless numbers are the same in every stage.
STAGE_POWERS = {"m": (1, 0), "m^2": (2, 0), "m/s": (1, 0), "kg": (0, 1), "kg m^2": (2, 1), "kg/m^3": (-3, 1),
                "N": (1, 1), "N m": (2, 1), "N/m": (0, 1), "N s/m": (0, 1), "N m/deg": (2, 1), "N m s/deg": (2, 1)}
MAX_LISTED = 50   # failures a gate result keeps (its reason counts them all)


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _drop_unset(handler, record: BaseModel, optional: tuple[str, ...]) -> dict:
    """The record's fields, without the optional ones that are not set (None): written only when
    they say something, so a grade without them reads as it always did."""
    data = handler(record)
    for name in optional:
        if data.get(name) is None:
            data.pop(name, None)
    return data


class StageUnitValues(_Record):
    """The two values in each stage's own units, where a stage's units are not SI (metersPerUnit or
    kilogramsPerUnit not 1): the numbers its files author, beside the SI ones that were compared."""

    reference: Any = Field(description="the reference's value in its stage's units")
    candidate: Any = Field(description="the candidate's value in its stage's units")
    reference_unit: str = Field(description="one unit of the reference's stage, e.g. `0.01 m` (metersPerUnit 0.01)")
    candidate_unit: str = Field(description="one unit of the candidate's stage")


class ComponentResult(_Record):
    error: Number = Field(description="on the quantity's scale, in `unit`")
    tolerance: Number = Field(description="the strict tolerance, in `unit`")
    input_error: Number | None = Field(description="the frozen error of the broken input (null for a component "
                                                   "the profile did not freeze)")
    passed: bool
    reference: Any = Field(description="the measured value on the reference, in `value_unit`")
    candidate: Any = Field(description="the measured value on the candidate, in `value_unit`")
    unit: str = Field("", description="the unit of error and tolerance: " +
                      "; ".join(f"`{k}` {v}" for k, v in UNITS.items()))
    value_unit: str | None = Field(None, description="the unit of reference and candidate; null when they are "
                                                     "not quantities (paths, types, flags)")
    in_stage_units: StageUnitValues | None = Field(None, description="the values in each stage's own units, "
                                                                     "written when a stage's units are not SI")
    voids_progress: Literal[True] | None = Field(None, description="written (true) for a component whose failure "
                                                                   "makes the check's progress 0")

    @model_serializer(mode="wrap")
    def _serialize(self, handler) -> dict:
        return _drop_unset(handler, self, ("in_stage_units", "voids_progress"))


class CheckResult(_Record):
    """One measure on one target: passed, semantic progress and each component."""

    check: str
    family: str
    measure: str
    target: str
    passed: bool | None = Field(description="every component within tolerance; null when unmeasured")
    progress: float | None = Field(description="semantic progress; null when unmeasured or not a targeted check")
    components: dict[str, ComponentResult] = Field(default_factory=dict)
    details: str = Field("", description="`within tolerance`, the failing components, or `unmeasured: why`")

    def failing(self) -> dict[str, ComponentResult]:
        return {name: c for name, c in self.components.items() if not c.passed}


def _failure_from_text(value: Any) -> Any:
    # Grades written before failures were structured hold their sentences only.
    return {"reason": value} if isinstance(value, str) else value


class GateFailure(_Record):
    """One thing a gate found wrong: a failing measurement (family, measure, target and its
    failing components) or, for what is not a measurement (a file, a count), the sentence alone."""

    reason: str = Field(description="the failure as a sentence")
    family: str | None = None
    measure: str | None = None
    target: str | None = None
    components: dict[str, ComponentResult] = Field(default_factory=dict,
                                                   description="the measurement's failing components")


Failure = Annotated[GateFailure, BeforeValidator(_failure_from_text)]


class GateResult(_Record):
    """One validity rule, preservation gate or objective gate."""

    gate: str
    passed: bool
    reason: str
    failures: tuple[Failure, ...] = Field((), description=f"each offending part, file or measurement (at most "
                                                           f"{MAX_LISTED})")

    @classmethod
    def of(cls, gate: str, passed: bool, reason: str, failures=()) -> GateResult:
        """A gate's result from its failures (GateFailure or sentences), the first MAX_LISTED kept."""
        return cls(gate=gate, passed=passed, reason=reason, failures=tuple(failures)[:MAX_LISTED])

    @classmethod
    def from_failures(cls, gate: str, failures: list, ok_reason: str, what: str) -> GateResult:
        """Passed when nothing failed; else the count and the first three in the reason."""
        if not failures:
            return cls.of(gate, True, ok_reason)
        texts = [f if isinstance(f, str) else f.reason for f in failures]
        shown = "; ".join(texts[:3]) + (f"; and {len(texts) - 3} more" if len(texts) > 3 else "")
        return cls.of(gate, False, f"{len(texts)} {what}: {shown}", failures)


KINDS = ("check", "validity", "preservation", "objective")
RESULT_MODEL = {"check": CheckResult, "validity": GateResult, "preservation": GateResult, "objective": GateResult}


def as_metadata(kind: str, id: str, result: CheckResult | GateResult) -> dict:
    """The record a grade's test attaches to its report (pytest-json-report's json_metadata)."""
    return {"kind": kind, "id": id, "result": jsonable(result.model_dump())}


def parse(kind: str | None, result: Any) -> CheckResult | GateResult | None:
    """The record read back from the report; None when there is none (a test that crashed)."""
    model = RESULT_MODEL.get(kind or "")
    if model is None or not isinstance(result, dict):
        return None
    return model.model_validate(result)
