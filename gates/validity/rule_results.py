"""What the gate returns: one RuleResult per rule, gathered in a ValidityReport."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RuleResult:
    rule: str       # one of RULES
    passed: bool
    reason: str     # always filled
    details: tuple[str, ...] = ()  # individual offences, at most ~50

    def to_json(self) -> dict:
        return {
            "rule": self.rule,
            "passed": self.passed,
            "reason": self.reason,
            "details": list(self.details),
        }


def not_checked(rule: str, earlier: str, extra: str = "") -> RuleResult:
    """A rule that could not run because an earlier one failed."""
    return RuleResult(rule, False, f"not checked: {earlier} failed" + (f"; {extra}" if extra else ""))


@dataclass(frozen=True)
class ValidityReport:
    rules: tuple[RuleResult, ...]  # one per RULES entry, in RULES order
    root_layer: str | None         # absolute path of the root layer when found
    layer_count: int
    infrastructure_error: str | None = None  # verifier fault (worker could not run)

    @property
    def valid(self) -> bool:
        return self.infrastructure_error is None and all(r.passed for r in self.rules)

    def rule(self, name: str) -> RuleResult:
        for r in self.rules:
            if r.rule == name:
                return r
        raise KeyError(name)

    @property
    def failed_rules(self) -> tuple[str, ...]:
        return tuple(r.rule for r in self.rules if not r.passed)

    @property
    def reason(self) -> str:
        """One line: why the submission is (in)valid (first failure)."""
        if self.infrastructure_error:
            return f"infrastructure error: {self.infrastructure_error}"
        for r in self.rules:
            if not r.passed:
                return f"{r.rule}: {r.reason}"
        return "all validity rules passed"

    def to_json(self) -> dict:
        return {
            "valid": self.valid,
            "reason": self.reason,
            "root_layer": self.root_layer,
            "layer_count": self.layer_count,
            "infrastructure_error": self.infrastructure_error,
            "rules": [r.to_json() for r in self.rules],
        }
