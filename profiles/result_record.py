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

import math
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


# --- one component in words, with its units ----------------------------------------------------


def number(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return "inf" if value == math.inf else "-inf" if value == -math.inf else f"{value:.6g}"
    if isinstance(value, str) and value in ("inf", "-inf", "nan"):
        return value
    return repr(value) if isinstance(value, str) else str(value)


def _value(value, unit: str | None) -> str:
    """A measured value with its unit: 0.25 m, [0, 0, 0.1] m, 12.3%, 'revolute'."""
    if value is None:
        return "none"
    if unit == "share" and isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return f"{100 * value:.4g}%"
    if isinstance(value, list) and value and all(isinstance(v, (int, float)) for v in value):
        text = "[" + ", ".join(number(v) for v in value) + "]"
    elif isinstance(value, (int, float, str)):
        text = number(value)
    else:
        text = repr(value)
    return f"{text} {unit}" if unit and not isinstance(value, str) else text


def _amount(value, unit: str) -> str:
    """An error or a tolerance in its unit."""
    if unit == "share" and isinstance(value, (int, float)) and math.isfinite(value):
        return f"{100 * value:.4g}%"
    if unit in ("", "1", "count", "log_ratio"):
        return number(value)
    return f"{number(value)} {unit}"


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _ratio(c: ComponentResult) -> str:
    """A log-ratio's meaning: how many times the reference's value the candidate's is."""
    ref, cand = c.reference, c.candidate
    if _positive(ref) and _positive(cand):
        return f"x{cand / ref:.4g}"
    if isinstance(ref, list) and isinstance(cand, list) and len(ref) == len(cand) and ref \
            and all(_positive(v) for v in ref + cand):
        ratios = [b / a for a, b in zip(ref, cand)]
        same = all(math.isclose(r, ratios[0], rel_tol=1e-6) for r in ratios)
        return f"x{ratios[0]:.4g}" if same else "x[" + ", ".join(f"{r:.4g}" for r in ratios) + "]"
    return "not comparable" if c.error >= 50 else f"x{math.exp(c.error):.4g} or x{math.exp(-c.error):.4g}"


def _in_stage_units(c: ComponentResult) -> str:
    """The two values in their stages' own units, when those are not SI."""
    a = c.in_stage_units
    if a is None:
        return ""
    return (f"; in stage units: reference {_value(a.reference, None)} x {a.reference_unit}, "
            f"candidate {_value(a.candidate, None)} x {a.candidate_unit}")


def _short(value) -> bool:
    """A value short enough for a one-line account: a number, a word, a few numbers."""
    return value is None or isinstance(value, (int, float, str)) and len(str(value)) <= 40 or (
        isinstance(value, list) and len(value) <= 4 and all(isinstance(v, (int, float)) for v in value))


def component_text(name: str, c: ComponentResult, input_error: bool = False, compact: bool = False) -> str:
    """One component in words: its error against the tolerance in its unit, and the two values
    (a log-ratio as the values and their ratio, a flag as agrees or differs). `compact` (a check's
    details, a gate's reason): the values only when they are short, no stage units."""
    if name == "authoring":
        return str(c.candidate)
    if (compact and not (_short(c.reference) and _short(c.candidate))) or (c.reference is None and c.candidate is None):
        values = ""
    else:
        values = f"reference {_value(c.reference, c.value_unit)}, candidate {_value(c.candidate, c.value_unit)}"
    before = ""
    if input_error:
        before = f", input {'differs' if c.unit == 'flag' and c.input_error else _amount(c.input_error, c.unit)}" \
            if c.input_error is not None else ", input -"
    stage = "" if compact else _in_stage_units(c)
    if c.unit == "flag":
        verdict = "agrees" if c.passed else "differs"
        return f"{name}: {verdict}{before}" + (f" ({values})" if values else "")
    if c.unit == "log_ratio" and values:
        tolerance = f"{100 * math.expm1(c.tolerance):.3g}%" if math.isfinite(c.tolerance) else number(c.tolerance)
        return (f"{name}: {_value(c.candidate, c.value_unit)} against the reference's "
                f"{_value(c.reference, c.value_unit)} ({_ratio(c)}; |ln ratio| {number(c.error)}, tolerance "
                f"{tolerance}{before}){stage}")
    unit = f" {c.unit}" if c.unit == "count" else ""
    sign = "<=" if c.passed else ">"
    text = f"{name}: {_amount(c.error, c.unit)}{unit} {sign} {_amount(c.tolerance, c.unit)}{unit}{before}"
    return text + (f" ({values})" if values else "") + stage



KINDS = ("check", "validity", "preservation", "objective")
RESULT_MODEL = {"check": CheckResult, "validity": GateResult, "preservation": GateResult, "objective": GateResult}


def as_metadata(kind: str, id: str, result: CheckResult | GateResult) -> dict:
    """The record a grade's test attaches to its report (scoring/recorder.py: a user property)."""
    return {"kind": kind, "id": id, "result": jsonable(result.model_dump())}


def parse(kind: str | None, result: Any) -> CheckResult | GateResult | None:
    """The record read back from the report; None when there is none (a test that crashed)."""
    model = RESULT_MODEL.get(kind or "")
    if model is None or not isinstance(result, dict):
        return None
    return model.model_validate(result)
