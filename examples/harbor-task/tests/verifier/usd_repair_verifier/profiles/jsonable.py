"""JSON without NaN/Infinity tokens: non-finite floats become the strings "inf", "-inf", "nan"."""
from __future__ import annotations

import json
import math
from typing import Any


def jsonable(value: Any) -> Any:
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, bool)):
        return value
    if hasattr(value, "item"):  # numpy scalars
        return jsonable(value.item())
    return str(value)


def dumps(value: Any) -> str:
    return json.dumps(jsonable(value), indent=2, sort_keys=True, allow_nan=False) + "\n"
