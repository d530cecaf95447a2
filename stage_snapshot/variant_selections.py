"""Variant selections composed into a stage through its session layer, and where physics hides.

The SimReady layout keeps each engine's physics behind a variant set of the default prim
(`PhysX`, `Newton`, `MuJoCo`: `Disabled`, or `Enabled` = a payload of that engine's physics), all
`Disabled` by default. A case names the selections it grades (profile `variant_selections`,
prim path -> set -> selection); every stage the grade reads is opened with them authored in an
anonymous session layer, the strongest layer of the stage, so no opinion in the package (the
agent's own selection edits included) changes what they select.

`hidden_physics` says, for a stage that composes no physics, which variant sets hold some: the
hint freeze and the grade give when an operator forgot to select an engine.
"""
from __future__ import annotations

import os
from pathlib import Path

from pxr import Sdf, Tf, Usd

# The hint's scan of layers behind unselected variants stops here (a hint, never a measurement).
MAX_SCANNED_LAYERS = 64


def session_layer(selections: dict[str, dict[str, str]]) -> Sdf.Layer:
    """An anonymous layer holding only `over` prims with the variant selections."""
    layer = Sdf.Layer.CreateAnonymous("usdgrade-variant-selections")
    for path, sets in sorted(selections.items()):
        spec = Sdf.CreatePrimInLayer(layer, Sdf.Path(path))
        spec.specifier = Sdf.SpecifierOver
        for name, choice in sorted(sets.items()):
            spec.variantSelections[name] = choice
    return layer


def open_selected(root_layer: str | Path, selections: dict[str, dict[str, str]] | None,
                  load=Usd.Stage.LoadAll) -> Usd.Stage | None:
    """The composed stage of `root_layer`, with `selections` in its session layer when there are any.
    Raises Tf.ErrorException for a layer USD cannot read; None when USD opens nothing."""
    if not selections:
        return Usd.Stage.Open(str(root_layer), load)
    layer = Sdf.Layer.FindOrOpen(str(root_layer))
    if layer is None:
        return None
    return Usd.Stage.Open(layer, session_layer(selections), load)


def applied_selections(reference_root: str | Path, selections: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """What every stage of a case is composed with: the case's selections and, for each prim they
    name, every other variant set of that prim held at the reference's own selection. So a
    candidate that enables another engine on that prim (or flips any of its sets) is still read
    as the case reads the reference; a set the case names is its own choice."""
    if not selections:
        return {}
    layer = Sdf.Layer.FindOrOpen(str(reference_root))
    stage = Usd.Stage.Open(layer, session_layer(selections), Usd.Stage.LoadNone)
    applied = {}
    for path, sets in sorted(selections.items()):
        held = {}
        prim = stage.GetPrimAtPath(path)
        if prim and prim.IsDefined():
            stage.Load(path, Usd.LoadWithoutDescendants)   # the prim's own payloads may author sets
            prim = stage.GetPrimAtPath(path)
            for name in prim.GetVariantSets().GetNames():
                choice = prim.GetVariantSet(name).GetVariantSelection()
                if choice:
                    held[name] = choice
        applied[path] = dict(sorted({**held, **sets}.items()))
    return applied


def held_selections(applied: dict[str, dict[str, str]], named: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """The selections `applied_selections` added to the case's (`named`)."""
    held = {path: {n: c for n, c in sets.items() if n not in named.get(path, {})} for path, sets in applied.items()}
    return {path: sets for path, sets in held.items() if sets}


def selection_problems(stage: Usd.Stage, selections: dict[str, dict[str, str]]) -> tuple[tuple[str, str, str], ...]:
    """Each selection the stage cannot take, as (prim path, set, `PRIM:SET=SELECTION: why`); empty: all apply."""
    problems = []
    for path, sets in sorted(selections.items()):
        prim = stage.GetPrimAtPath(path)
        for name, choice in sorted(sets.items()):
            problem = _why_not(prim, path, name, choice)
            if problem:
                problems.append((path, name, f"{path}:{name}={choice}: {problem}"))
    return tuple(problems)


def _why_not(prim: Usd.Prim, path: str, name: str, choice: str) -> str | None:
    # The session layer's `over` makes a prim at any path: only a defined one is the package's.
    if not prim or not prim.IsDefined():
        return f"no prim {path}"
    if prim.IsInstanceProxy():
        return f"{path} is inside an instance: its variant selections are its prototype's"
    names = prim.GetVariantSets().GetNames()
    if name not in names:
        return f"{path} has no variant set {name} (its variant sets: {', '.join(names) or 'none'})"
    variant_set = prim.GetVariantSet(name)
    variants = variant_set.GetVariantNames()
    if choice not in variants:
        return f"variant set {name} of {path} has no variant {choice} (its variants: {', '.join(variants) or 'none'})"
    if variant_set.GetVariantSelection() != choice:
        return f"the selection does not take (variant set {name} of {path} selects {variant_set.GetVariantSelection()!r})"
    return None


# -- where the physics hides ---------------------------------------------------------------

def _is_physics_spec(spec: Sdf.PrimSpec) -> bool:
    """A prim spec that makes physics: a UsdPhysics type (scene, joint...) or an applied Physics API."""
    if spec.typeName.startswith("Physics"):
        return True
    op = spec.GetInfo("apiSchemas") if spec.HasInfo("apiSchemas") else None
    if op is None:
        return False
    items = [*op.explicitItems, *op.prependedItems, *op.appendedItems, *op.addedItems]
    return any(str(item).startswith("Physics") for item in items)


def composes_physics(stage: Usd.Stage) -> bool:
    """Any composed prim with a UsdPhysics type or API (rigid body, collider, joint, scene...)."""
    for prim in Usd.PrimRange.Stage(stage, Usd.TraverseInstanceProxies()):
        type_name = str(prim.GetTypeName())
        if type_name.startswith("Physics") or any(s.startswith("Physics") for s in prim.GetAppliedSchemas()):
            return True
    return False


class _Scan:
    """Physics in prim specs and in the layers their arcs bring in, each layer once."""

    def __init__(self):
        self.seen: dict[str, bool] = {}   # layer -> holds physics (False while it is being scanned)

    def spec(self, spec: Sdf.PrimSpec) -> bool:
        stack = [spec]
        while stack:
            current = stack.pop()
            if _is_physics_spec(current):
                return True
            if any(self.layer(asset, current.layer) for asset in _arc_assets(current)):
                return True
            stack.extend(current.nameChildren)
            for variant_set in current.variantSets:
                stack.extend(variant.primSpec for variant in variant_set.variants.values())
        return False

    def layer(self, asset: str, anchor: Sdf.Layer) -> bool:
        if len(self.seen) >= MAX_SCANNED_LAYERS:
            return False
        identifier = anchor.ComputeAbsolutePath(asset) if asset else ""
        if not identifier or identifier in self.seen:
            return self.seen.get(identifier, False)   # another variant bringing in the same layer
        self.seen[identifier] = False
        try:
            layer = Sdf.Layer.FindOrOpen(identifier)
        except Tf.ErrorException:
            return False
        if layer is None:
            return False
        found = (any(self.layer(sub, layer) for sub in layer.subLayerPaths)
                 or any(self.spec(root) for root in layer.rootPrims))
        self.seen[identifier] = found
        return found


def _arc_assets(spec: Sdf.PrimSpec) -> list[str]:
    assets = []
    for arcs in (spec.referenceList, spec.payloadList):
        for item in [*arcs.explicitItems, *arcs.prependedItems, *arcs.appendedItems, *arcs.addedItems]:
            if item.assetPath:
                assets.append(item.assetPath)
    return assets


def _variants_with_physics(prim: Usd.Prim, set_name: str, scan: _Scan) -> list[str]:
    found = []
    for variant in prim.GetVariantSet(set_name).GetVariantNames():
        for spec in prim.GetPrimStack():
            variant_set = spec.variantSets.get(set_name)
            variant_spec = variant_set.variants.get(variant) if variant_set else None
            if variant_spec is not None and scan.spec(variant_spec.primSpec):
                found.append(variant)
                break
    return found


def hidden_physics(stage: Usd.Stage) -> str | None:
    """For a stage that composes no physics: which variant sets hold some, and the selection to
    add; None when the stage composes physics or no variant holds any."""
    if composes_physics(stage):
        return None
    scan, found = _Scan(), []
    for prim in Usd.PrimRange.Stage(stage):
        sets = []
        for name in prim.GetVariantSets().GetNames():
            selection = prim.GetVariantSet(name).GetVariantSelection()
            holding = [v for v in _variants_with_physics(prim, name, scan) if v != selection]
            if holding:
                sets.append((name, selection or "nothing", holding[0]))
        if sets:
            found.append((str(prim.GetPath()), sets))
    if not found:
        return None
    parts = []
    for path, sets in found:
        selected = {s for _, s, _ in sets}
        how = (f"{'all ' if len(sets) > 1 else ''}selected {selected.pop()}" if len(selected) == 1
               else ", ".join(f"{name} selected {s}" for name, s, _ in sets))
        parts.append(f"{path} variant set{'s' if len(sets) > 1 else ''} {', '.join(n for n, _, _ in sets)}, {how}")
    path, sets = found[0]
    name, _, variant = sets[0]
    return (f"physics found only behind {'; '.join(parts)}: freeze with --variant {path}:{name}={variant}")


def used_layer_paths(stage: Usd.Stage) -> list[str]:
    """The files (or package members) the composed stage uses, sorted; anonymous layers left out."""
    return sorted({os.path.normpath(layer.realPath) if layer.realPath else layer.identifier
                   for layer in stage.GetUsedLayers() if not layer.anonymous})
