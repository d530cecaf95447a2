"""Injected inputs carry no mark of their faults: every word in a fixture case's input layers
(prim and property names, tokens, paths, comments, custom data, layer names) is also in its
reference, or is USD's own vocabulary (a schema's type, property or allowed token, a keyword of
the text format): the faulted value itself, such as `collisionEnabled = false` or a list edit."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from pxr import Sdf, Tf, Usd

ROOT = Path(__file__).resolve().parent.parent
CASES = sorted(p.parent for p in (ROOT / "fixtures" / "cases").glob("*/profile.json"))
LAYER_SUFFIXES = (".usd", ".usda", ".usdc")
WORD = re.compile(r"[A-Za-z]{3,}")


# Words of the .usda format itself (list edits, specifiers, value types, metadata keys).
FORMAT_WORDS = {"add", "append", "prepend", "delete", "reorder", "custom", "uniform", "varying", "def", "over",
                "class", "rel", "matrix", "quatf", "quatd", "quath", "double", "float", "half", "token", "bool",
                "int", "string", "asset", "references", "payload", "inherits", "specializes", "variants",
                "variantSet", "instanceable", "kind", "active", "hidden", "doc", "subLayers", "apiSchemas",
                "timeSamples", "connect", "true", "false", "None", "usda"}


def usd_vocabulary() -> set[str]:
    """Every word of the registered schemas: type names, property names, allowed tokens."""
    registry = Usd.SchemaRegistry()
    words = set(FORMAT_WORDS)
    for schema_type in Tf.Type.Find(Usd.SchemaBase).GetAllDerivedTypes():
        name = registry.GetSchemaTypeName(schema_type)
        definition = registry.FindConcretePrimDefinition(name) or registry.FindAppliedAPIPrimDefinition(name)
        words.update(WORD.findall(name))
        if definition is None:
            continue
        for prop in definition.GetPropertyNames():
            words.update(WORD.findall(prop))
            spec = definition.GetSchemaPropertySpec(prop)
            for token in (spec.GetInfo("allowedTokens") or []) if spec else []:
                words.update(WORD.findall(str(token)))
    return words


VOCABULARY = usd_vocabulary()


def package_words(package: Path) -> set[str]:
    words: set[str] = set()
    for path in sorted(package.rglob("*")):
        if not path.is_file():
            continue
        words.update(WORD.findall(path.relative_to(package).as_posix()))
        if path.suffix in LAYER_SUFFIXES:
            layer = Sdf.Layer.FindOrOpen(str(path))
            assert layer is not None, path
            words.update(WORD.findall(layer.ExportToString()))
    return words


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_input_names_nothing_the_reference_does_not(case):
    new = package_words(case / "input") - package_words(case / "reference") - VOCABULARY
    assert not new, f"{case.name}: the input carries words its reference lacks: {sorted(new)}"
