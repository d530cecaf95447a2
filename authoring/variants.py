"""Variant selections for case authoring: the `--variant PRIM:SET=SELECTION` arguments and the
checks freeze makes before anything is measured (docs/simready.md).

A case that grades a SimReady asset names the engine it grades (`--variant /Gripper:PhysX=Enabled`);
the selections go into profile.json and into the session layer of every stage the grade reads.
Freeze refuses, in one line, a selection the reference (or the input) cannot take, and a
reference that composes no physics while its variant sets hold some, naming the flag to add.
"""
from __future__ import annotations

from pathlib import Path

from usd_repair_verifier.profiles.schema import ProfileError, variant_selections_from_json
from usd_repair_verifier.profiles.errors import Refused


class SelectionRefused(Refused):
    """The selections cannot make a case of these packages; nothing was written."""


def parse_variant_args(specs: list[str]) -> dict[str, dict[str, str]]:
    """`PRIM:SET=SELECTION` arguments as prim path -> set -> selection (ValueError: one line)."""
    found: dict[str, dict[str, str]] = {}
    for spec in specs:
        left, equals, choice = spec.partition("=")
        path, colon, name = left.rpartition(":")
        if not (equals and colon and path and name and choice):
            raise ValueError(f"--variant {spec!r}: expected PRIM:SET=SELECTION, e.g. /Gripper:PhysX=Enabled")
        earlier = found.setdefault(path, {}).get(name)
        if earlier is not None and earlier != choice:
            raise ValueError(f"--variant {path}:{name} is given twice, as {earlier} and as {choice}")
        found[path][name] = choice
    try:
        return variant_selections_from_json(found, "--variant")
    except ProfileError as error:
        raise ValueError(str(error)) from None


def check_packages(reference_root: Path, input_root: Path, selections: dict[str, dict[str, str]]) -> None:
    """Both stages take every selection, and the reference composes physics (SelectionRefused).
    Each is composed as the case will compose it (variant_selections.applied_selections)."""
    from usd_repair_verifier.stage_snapshot import variant_selections as selected
    from usd_repair_verifier.stage_snapshot.read import open_stage

    for side, root in (("reference", reference_root), ("input", input_root)):
        # The reference's own selections are what the others are held at: named ones first.
        stage = open_stage(root, selections if side == "reference" else
                           selected.applied_selections(reference_root, selections))
        problems = selected.selection_problems(stage, selections)
        if problems:
            raise SelectionRefused(f"refusing to freeze: the {side} cannot take --variant {problems[0][2]}")
        if side == "reference":
            hint = selected.hidden_physics(stage)
            if hint:
                raise SelectionRefused(f"refusing to freeze: the reference composes no physics: {hint}")
