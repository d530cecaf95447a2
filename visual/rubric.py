"""Visual rubric: criteria with an importance (High 3, Medium 2, Low 1) and the score rule."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

DEFAULT_RUBRIC = Path(__file__).with_name("default_rubric.json")
WEIGHTS = {"High": 3, "Medium": 2, "Low": 1}
VERDICTS = ("pass", "fail", "unclear")


class RubricError(Exception):
    """The rubric file is unreadable or malformed."""


def validate(rubric: dict) -> dict:
    if not isinstance(rubric, dict):
        raise RubricError("a rubric is a JSON object")
    criteria = rubric.get("criteria")
    if not isinstance(criteria, list) or not criteria:
        raise RubricError("a rubric needs a non-empty 'criteria' list")
    seen = set()
    for i, c in enumerate(criteria):
        if not isinstance(c, dict):
            raise RubricError(f"criterion {i} is not an object")
        cid, text, importance = c.get("id"), c.get("text"), c.get("importance")
        if not isinstance(cid, str) or not cid.strip():
            raise RubricError(f"criterion {i}: 'id' must be a non-empty string")
        if cid in seen:
            raise RubricError(f"criterion {cid!r} appears twice")
        seen.add(cid)
        if not isinstance(text, str) or not text.strip():
            raise RubricError(f"criterion {cid!r}: 'text' must be a non-empty string")
        if importance not in WEIGHTS:
            raise RubricError(f"criterion {cid!r}: 'importance' must be one of {sorted(WEIGHTS)}")
    return rubric


def load(path: str | Path | None = None) -> dict:
    path = Path(path) if path else DEFAULT_RUBRIC
    try:
        rubric = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise RubricError(f"cannot read rubric {path}: {error}") from error
    return validate(rubric)


def digest(rubric: dict) -> str:
    canonical = json.dumps(rubric, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def weight(criterion: dict) -> int:
    return WEIGHTS[criterion["importance"]]


def score(rubric: dict, verdicts: dict[str, str]) -> float:
    """sum(weights of passed criteria) / sum(all weights); unclear, error and absent earn 0 and count."""
    total = sum(weight(c) for c in rubric["criteria"])
    passed = sum(weight(c) for c in rubric["criteria"] if verdicts.get(c["id"]) == "pass")
    return passed / total
