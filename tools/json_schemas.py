"""The JSON Schemas of the verifier's files, generated from the pydantic models that describe them.

    python tools/json_schemas.py            # rewrite docs/schemas/*.schema.json
    python tools/json_schemas.py --check    # exit 1, naming the files, when a committed schema differs

tests/test_json_schemas.py runs the check: a model change without its regenerated schema fails.
"""
from __future__ import annotations

import importlib
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_DIR = ROOT / "docs" / "schemas"
DIALECT = "https://json-schema.org/draft/2020-12/schema"

# file name stem -> (module, model): what each schema describes.
MODELS = {
    "profile": ("usd_repair_verifier.profiles.schema", "Profile"),         # CASE/profile.json
    "grade": ("usd_repair_verifier.scoring.grade_file", "Grade"),          # OUT/grade.json
    "visual": ("usd_repair_verifier.visual.record", "VisualRecord"),       # OUT/visual.json
    "physical": ("usd_repair_verifier.physical.record", "PhysicalRecord"),  # OUT/physical.json
    "store": ("usd_repair_verifier.records.models", "StoreRows"),          # the records store's rows
    "results": ("usd_repair_verifier.records.models", "Results"),          # the results report's tables
}


def schemas() -> dict[str, dict]:
    """File name -> the schema generated from its model now."""
    out = {}
    for stem, (module, name) in MODELS.items():
        model = getattr(importlib.import_module(module), name)
        out[f"{stem}.schema.json"] = {"$schema": DIALECT, "$id": f"{stem}.schema.json", **model.model_json_schema()}
    return out


def text(schema: dict) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def stale(folder: Path = SCHEMA_DIR) -> list[str]:
    """The schema files that are missing or differ from what the models generate."""
    return [name for name, schema in schemas().items()
            if not (folder / name).is_file() or (folder / name).read_text(encoding="utf-8") != text(schema)]


def write() -> list[str]:
    """Every schema file written again: their names."""
    SCHEMA_DIR.mkdir(parents=True, exist_ok=True)
    written = []
    for name, schema in schemas().items():
        (SCHEMA_DIR / name).write_text(text(schema), encoding="utf-8")
        written.append(f"docs/schemas/{name}")
    return written


def main(argv: list[str] | None = None) -> int:
    from generated_page import write_or_check_files  # beside this script

    return write_or_check_files(argv, __doc__.splitlines()[0],
                                lambda: [f"docs/schemas/{name} differs from its model" for name in stale()],
                                write, "tools/json_schemas.py")


if __name__ == "__main__":
    raise SystemExit(main())
