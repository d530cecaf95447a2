"""Where each fault kind can go in a package: the targets its injector accepts.

A target is valid when the kind's injector succeeds on it. Each candidate (every joint,
body or visible component of the composed stage, by the kind's target kind) is tried on a
private copy of the package, in memory: the edits are never saved and every layer they
dirtied is reloaded from disk before the next try. So the list is exactly what
`usdgrade inject` would accept, and the package itself is never touched.
"""
from __future__ import annotations

import random
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from pxr import Usd

from usd_repair_verifier.stage_snapshot.read import read_snapshot
from usd_repair_verifier.stage_snapshot.variant_selections import open_selected

from usd_repair_verifier.authoring.inject import INJECTORS, InjectionError, root_layer_of
from usd_repair_verifier.profiles.vocabulary import FAULT_KINDS


@dataclass(frozen=True)
class KindTargets:
    kind: str
    target_kind: str          # "joint" | "body" | "component" | "asset"
    valid: tuple[str, ...]    # reference prim paths ("*" for the whole asset)
    refused: tuple[tuple[str, str], ...]   # (target, why the injector refused it)


def candidates(snapshot, target_kind: str) -> list[str]:
    """Every element of the composed stage a fault of this target kind could name, sorted."""
    if target_kind == "asset":
        return ["*"]
    table = {"joint": snapshot.joints, "body": snapshot.bodies, "component": snapshot.components}[target_kind]
    return sorted(table)


def _revert(stage: Usd.Stage) -> None:
    """Drop the unsaved edits of a try: every dirty layer is read from disk again."""
    for layer in stage.GetUsedLayers():
        if layer.dirty and not layer.anonymous:
            layer.Reload(force=True)


def try_inject(root: Path, kind: str, target: str, variant_selections: dict | None = None) -> str | None:
    """None when the injector accepts the target (in the stage composed with `variant_selections`),
    else its reason; nothing is saved."""
    stage = open_selected(root, variant_selections)
    try:
        INJECTORS[kind](stage, target, random.Random(f"targets:{kind}:{target}"), set())
        return None
    except InjectionError as error:
        return str(error)
    finally:
        _revert(stage)


def list_targets(reference: Path, kinds: Iterable[str] | None = None,
                 progress: Callable[[Iterable], Iterable] = lambda items: items,
                 variant_selections: dict | None = None) -> list[KindTargets]:
    """The valid targets of each kind (all kinds by default) in the package `reference`.

    `progress` wraps the list of tries (a progress bar on a terminal)."""
    kinds = sorted(kinds or FAULT_KINDS)
    unknown = [k for k in kinds if k not in INJECTORS]
    if unknown:
        raise InjectionError(f"unknown fault kind {', '.join(unknown)} (known: {', '.join(sorted(INJECTORS))})")
    with tempfile.TemporaryDirectory(prefix="usdgrade-targets-") as tmp:
        package = Path(tmp) / "package"
        shutil.copytree(reference, package, symlinks=True)
        root = root_layer_of(package)
        snapshot = read_snapshot(root, {}, variant_selections=variant_selections)
        tries = [(kind, target) for kind in kinds for target in candidates(snapshot, FAULT_KINDS[kind].target)]
        outcome = {(kind, target): try_inject(root, kind, target, variant_selections)
                   for kind, target in progress(tries)}
    return [KindTargets(
        kind, FAULT_KINDS[kind].target,
        tuple(t for (k, t), why in outcome.items() if k == kind and why is None),
        tuple((t, why) for (k, t), why in outcome.items() if k == kind and why is not None),
    ) for kind in kinds]
