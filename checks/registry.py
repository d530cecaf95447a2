"""The check families by name, and the one way to run a check.

The families are declared in profiles/families.py; each entry names its module here in
checks/ (MEASURES: name -> pure measure function; targets(reference, measure) -> every
target the objective gates cover). Adding a family is that module and that entry.
"""
from __future__ import annotations

from importlib import import_module
from types import ModuleType

from usd_repair_verifier.profiles import families as table

from . import authoring_errors
from .measurement import Comparison, Unmeasured, grade
from .result_record import CheckResult


def _load(family: table.Family) -> ModuleType:
    module = import_module(f"{__package__}.{family.module}")
    declared = tuple(m.name for m in family.measures)
    if tuple(module.MEASURES) != declared:
        raise ImportError(f"checks/{family.module}.py MEASURES {tuple(module.MEASURES)} differ from the "
                          f"{family.name} family's measures {declared} in profiles/families.py")
    return module


FAMILIES: dict[str, ModuleType] = {family.name: _load(family) for family in table.FAMILIES}


def measure(
    cmp: Comparison, family: str, name: str, target: str, check_id: str = "", input_errors: dict | None = None
) -> CheckResult:
    module = FAMILIES[family]
    check_id = check_id or f"{family}.{name}:{target}"
    key = (family, name, target)
    result = cmp.memo.get(key)
    if result is None:
        if target not in module.targets(cmp.reference, name):
            result = Unmeasured(f"the reference has no {family} {target}")
        else:
            result = module.MEASURES[name](cmp, target)
            # A value the candidate authored wrongly (or ambiguously) fails every check that reads it.
            flagged = None if isinstance(result, Unmeasured) else authoring_errors.component(cmp, family, target)
            if flagged is not None:
                result = {**result, "authoring": flagged}
        cmp.memo[key] = result  # measure functions are pure: the result depends on the key alone
    return grade(check_id, family, name, target, result, input_errors)


def every_measurement(reference) -> list[tuple[str, str, str]]:
    """Every (family, measure, target) the reference has: what the objective gates measure."""
    return [
        (family, name, target)
        for family, module in FAMILIES.items()
        for name in module.MEASURES
        for target in module.targets(reference, name)
    ]


def unmeasured(family: str, name: str, target: str, check_id: str, reason: str) -> CheckResult:
    """A check that could not run because the candidate cannot be read (invalid submission)."""
    m = grade(check_id, family, name, target, Unmeasured(reason), None)
    return m.model_copy(update={"passed": False, "progress": 0.0})
