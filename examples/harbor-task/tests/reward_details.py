"""grade.json -> reward-details.json, the per-criterion view Harbor's trial viewer shows.

    python -I -B reward_details.py GRADE_JSON OUT_JSON

Shipped in a task's tests/ by `usdgrade task` and run by test.sh after the grade (standard
library only: it runs in the verifier's container beside the grade). The file holds one entry,
`authored_usd`, in the viewer's reward-detail shape: `kind` (the grade's status), `score` (the
reward Harbor records), `criteria` (each targeted check with its semantic progress, each gate
with 1 or 0; `raw` says passed, failed or unmeasured) and `warnings` (the grade's reasons).
An infrastructure error says, first, that its 0.0 is a fallback and not a measurement.
"""
from __future__ import annotations

import json
import math
import os
import sys

FALLBACK_WARNING = ("infrastructure error: the 0.0 in reward.json is the fallback, not a measured repair; "
                    "rerun this trial's verifier (harbor job regrade) once the cause is fixed")


def _number(value) -> float:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else 0.0


def _check(check: dict) -> dict:
    passed = check.get("passed")
    raw = "unmeasured" if check.get("progress") is None else ("passed" if passed else "failed")
    entry = {"name": str(check.get("id", "?")), "value": _number(check.get("progress")), "weight": 1.0, "raw": raw,
             "description": f"{check.get('family', '?')} {check.get('measure', '')} of {check.get('target', '?')}"}
    if check.get("details") and not passed:
        entry["error"] = str(check["details"])
    return entry


def _gates(grade: dict) -> list[dict]:
    entries = []
    for kind, gates in sorted((grade.get("gates") or {}).items()):
        for name, gate in sorted((gates or {}).items()):
            if isinstance(gate, dict) and isinstance(gate.get("passed"), bool):
                entries.append({"name": f"{kind}:{name}", "value": 1.0 if gate["passed"] else 0.0, "weight": 0.0,
                                "raw": "passed" if gate["passed"] else "failed", "description": str(gate.get("reason", ""))})
    return entries


def details(grade: dict) -> dict:
    status = str(grade.get("status", "unknown"))
    warnings = [str(reason) for reason in grade.get("reasons") or []]
    if status == "infrastructure_error":
        warnings = [FALLBACK_WARNING, f"cause: {grade.get('infrastructure_error')}", *warnings]
    for violation in grade.get("network_violations") or []:
        warnings.append(f"closed book: step {violation.get('step_id')} {violation.get('tool')}: "
                        f"{violation.get('url') or violation.get('kind')}")
    criteria = [_check(check) for check in grade.get("checks") or [] if isinstance(check, dict)] + _gates(grade)
    return {"authored_usd": {"kind": status, "score": _number(grade.get("authored_usd")), "criteria": criteria,
                             "warnings": warnings}}


def main(source: str, target: str) -> int:
    try:
        with open(source, encoding="utf-8") as handle:
            grade = json.load(handle)
        if not isinstance(grade, dict):
            raise ValueError("grade.json is not an object")
        text = json.dumps(details(grade), indent=1, sort_keys=True)
    except (OSError, ValueError) as error:
        print(f"reward_details: {error}", file=sys.stderr)
        return 1
    partial = target + ".partial"
    with open(partial, "w", encoding="utf-8") as handle:
        handle.write(text + "\n")
    os.replace(partial, target)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]) if len(sys.argv) == 3 else 2)
