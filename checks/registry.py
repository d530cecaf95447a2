"""The check families by name, and the one way to run a check.

The families are declared in profiles/families.py; each entry names its module here in
checks/ (MEASURES: name -> pure measure function; targets(reference, measure) -> every
target the objective gates cover). Adding a family is that module and that entry.

`Measurements` makes every measurement of one comparison once: a measure sees the comparison
with only the tolerances its entry declares, a value the candidate authored wrongly adds a
failing component to every check that reads it, and the result is kept under (family,
measure, target) for the check, the gates and every later look.
"""
from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from types import ModuleType

from usd_repair_verifier.profiles import families as table

from . import authoring_errors
from .measurement import Comparison, Component, Unmeasured, grade
from usd_repair_verifier.profiles.result_record import CheckResult

Key = tuple[str, str, str]    # (family, measure, target)
Raw = dict[str, Component] | Unmeasured


def _load(family: table.Family) -> ModuleType:
    module = import_module(f"{__package__}.{family.module}")
    declared = tuple(m.name for m in family.measures)
    if tuple(module.MEASURES) != declared:
        raise ImportError(f"checks/{family.module}.py MEASURES {tuple(module.MEASURES)} differ from the "
                          f"{family.name} family's measures {declared} in profiles/families.py")
    return module


FAMILIES: dict[str, ModuleType] = {family.name: _load(family) for family in table.FAMILIES}


class Measurements:
    """Every measurement of one comparison, each made once. A grading session holds one for its
    comparison; measure functions are pure, so a result computed in another process (an xdist
    worker sharing the work) is the one this would compute, and may be added with `update`."""

    def __init__(self, comparison: Comparison):
        self.comparison = comparison
        self.results: dict[Key, Raw] = {}
        self._views: dict[tuple[str, str], Comparison] = {}
        # The gates ask for the same checks again and again (every gate over every family): each
        # record, immutable, is made once per set of arguments.
        self._checks: dict[tuple, CheckResult] = {}

    def view(self, family: str, name: str) -> Comparison:
        """The comparison as this measure sees it: the tolerances its table entry declares."""
        view = self._views.get((family, name))
        if view is None:
            entry = table.measure_entry(family, name)
            view = self._views[(family, name)] = self.comparison.for_measure(f"{family}.{name}", entry.tolerances)
        return view

    def raw(self, family: str, name: str, target: str) -> Raw:
        """The measure function's result on one target (with its authoring component, if any)."""
        key = (family, name, target)
        result = self.results.get(key)
        if result is None:
            result = self.results[key] = self._measure(family, name, target)
        return result

    def _measure(self, family: str, name: str, target: str) -> Raw:
        module, cmp = FAMILIES[family], self.view(family, name)
        if target not in module.targets(cmp.reference, name):
            return Unmeasured(f"the reference has no {family} {target}")
        result = module.MEASURES[name](cmp, target)
        if isinstance(result, Unmeasured):
            return result
        # A value the candidate authored wrongly (or ambiguously) fails every check that reads it.
        flagged = authoring_errors.component(cmp, table.BY_NAME[family], table.measure_entry(family, name), target)
        return result if flagged is None else {**result, "authoring": flagged}

    def check(self, family: str, name: str, target: str, check_id: str = "",
              input_errors: dict | None = None) -> CheckResult:
        key = (family, name, target, check_id, None if input_errors is None else tuple(sorted(input_errors.items())))
        found = self._checks.get(key)
        if found is None:
            ref, cand = self.comparison.reference, self.comparison.candidate
            scales = ((ref.meters_per_unit, ref.kilograms_per_unit), (cand.meters_per_unit, cand.kilograms_per_unit))
            found = self._checks[key] = grade(check_id or f"{family}.{name}:{target}", family, name, target,
                                              self.raw(family, name, target), input_errors, scales)
        return found

    def every(self, family: str, names: tuple[str, ...],
              keep: Callable[[str], bool] = lambda target: True) -> list[CheckResult]:
        """The checks of these measures on every target of the reference that `keep` accepts."""
        module = FAMILIES[family]
        return [self.check(family, name, target) for name in names
                for target in module.targets(self.comparison.reference, name) if keep(target)]

    def update(self, results: dict[Key, Raw]) -> None:
        self.results.update(results)


def measure(cmp: Comparison, family: str, name: str, target: str, check_id: str = "",
            input_errors: dict | None = None) -> CheckResult:
    """One check on a comparison outside a grading session (tests, tools): nothing is kept."""
    return Measurements(cmp).check(family, name, target, check_id, input_errors)


def every_measurement(reference) -> list[Key]:
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
