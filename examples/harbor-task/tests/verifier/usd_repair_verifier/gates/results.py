"""The plain result of one gate (validity rule, preservation gate or objective gate)."""
from __future__ import annotations

from dataclasses import dataclass, field

MAX_LISTED = 50


@dataclass(frozen=True)
class GateResult:
    gate: str
    passed: bool
    reason: str
    failures: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict:
        return {"gate": self.gate, "passed": self.passed, "reason": self.reason, "failures": list(self.failures[:MAX_LISTED])}


def from_failures(gate: str, failures: list[str], ok_reason: str, what: str) -> GateResult:
    if not failures:
        return GateResult(gate, True, ok_reason)
    shown = "; ".join(failures[:3]) + (f"; and {len(failures) - 3} more" if len(failures) > 3 else "")
    return GateResult(gate, False, f"{len(failures)} {what}: {shown}", tuple(failures))
