"""Fault injection for case authoring: copy a reference package and break it.

Each fault is authored in the package's own layers *where it is the effective
opinion*: the strongest existing spec of the property (found through the
composed stage's property stack), so the composed stage really shows the
fault; everything else in the package is left byte for byte. Choices (which
offset, which other body) come from a seeded generator, so the same seed gives
the same bytes.

One module per fault family (joint, body, geometry, collision, mass, material,
composition) holds its injectors; `edits` holds the editing primitives they share. An
injector is `f(stage, target, rng, dirty) -> note`: it edits the open stage's layers, adds
every layer it touched to `dirty`, and raises InjectionError when the target cannot take the
fault. Each fault kind names its injector in the family table (profiles/families.py), beside
the kind itself; this module resolves them into INJECTORS and runs them (`inject`).
"""
from __future__ import annotations

import importlib
import random
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from usd_repair_verifier.profiles.vocabulary import FAULT_KINDS
from usd_repair_verifier.stage_snapshot.variant_selections import open_selected

from usd_repair_verifier.authoring.inject.edits import (
    InjectionError, remove_prim, root_layer_of, set_api_schemas, set_attribute, set_targets,
)

__all__ = ["INJECTORS", "Injected", "InjectionError", "inject", "remove_prim", "root_layer_of",
           "set_api_schemas", "set_attribute", "set_targets"]

def _injector(kind: str) -> Callable:
    """The function the family table names for a fault kind (`module:function`)."""
    module, _, function = FAULT_KINDS[kind].injector.partition(":")
    return getattr(importlib.import_module(module), function)


INJECTORS: dict[str, Callable] = {kind: _injector(kind) for kind in FAULT_KINDS}


@dataclass(frozen=True)
class Injected:
    kind: str
    target: str        # reference prim path, or "*"
    note: str


def inject(reference: Path, out: Path, faults: list[tuple[str, str]], seed: int,
           variant_selections: dict | None = None) -> list[Injected]:
    """Copy `reference` to `out` and inject each (kind, target) fault in order, into the stage
    composed with `variant_selections` (a SimReady package's physics is behind its variant sets:
    the fault goes into the layer the selected variant brings in).

    The work happens in a fresh folder beside `out`, renamed onto it only when every
    fault took: a fault that cannot be injected leaves `out` as it was (nothing written)."""
    reference, out = Path(reference), Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.inject-", dir=out.parent))
    try:
        package = work / "package"
        shutil.copytree(reference, package, symlinks=True)
        done = _inject_in_place(package, faults, seed, variant_selections)
        if out.exists():
            shutil.rmtree(out)
        package.rename(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return done


def _inject_in_place(package: Path, faults: list[tuple[str, str]], seed: int,
                     variant_selections: dict | None = None) -> list[Injected]:
    root = root_layer_of(package)
    done = []
    for kind, target in faults:
        # One generator per fault, seeded by the fault itself: injecting a subset of
        # the faults reproduces each of them exactly (a partial repair is the others).
        rng = random.Random(f"{seed}:{kind}:{target}")
        if kind not in INJECTORS:
            raise InjectionError(f"unknown fault kind {kind} (known: {', '.join(sorted(INJECTORS))})")
        if FAULT_KINDS[kind].target == "asset":
            target = "*"
        stage = open_selected(root, variant_selections)
        dirty: set = set()
        note = INJECTORS[kind](stage, target, rng, dirty)
        for layer in sorted(dirty, key=lambda l: l.identifier):
            layer.Save()
        done.append(Injected(kind, target, note))
        # Layers are cached by the registry: drop our edits' stage so the next fault re-reads.
        del stage
    return done

