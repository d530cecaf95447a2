"""The injection manifest: what `usdgrade inject` did, written beside the package it made.

`OUT.inject.json` (a sibling of the package folder, never inside it: the agent must not
read which faults were injected) records the reference's and the broken package's
digests, the seed and each fault with its note. `usdgrade freeze` uses it instead of
guessing the faults, when it describes exactly the input being frozen; differences the
comparison finds beyond the injected faults are reported as their collateral (a disabled
hinge also breaks the articulation), never frozen as faults of their own.
"""
from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from usd_repair_verifier.profiles.digest import tree_digest
from usd_repair_verifier.authoring.inject import Injected, inject
from usd_repair_verifier.authoring.usd_messages import muted
from usd_repair_verifier.profiles.schema import Fault

MANIFEST_SUFFIX = ".inject.json"
MANIFEST_FORMAT = "usdgrade-inject-manifest/1"


def manifest_path(package: Path) -> Path:
    package = Path(package).absolute()
    return package.parent / (package.name + MANIFEST_SUFFIX)


def write_manifest(reference: Path, package: Path, seed: int, done: list[Injected]) -> Path:
    path = manifest_path(package)
    value = {
        "format": MANIFEST_FORMAT,
        "reference": {"path": str(Path(reference).absolute()), "digest": tree_digest(reference)},
        "package": {"name": Path(package).name, "digest": tree_digest(package)},
        "seed": seed,
        "faults": [{"id": f"f{i + 1}", "kind": d.kind, "target": d.target, "note": d.note} for i, d in enumerate(done)],
    }
    path.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n")
    return path


@dataclass(frozen=True)
class Manifest:
    path: Path
    reference_digest: str
    package_digest: str
    seed: int
    faults: tuple[Fault, ...]


def read_manifest(package: Path) -> Manifest | None:
    """The manifest beside `package`, or None when there is none. ValueError when it is unreadable."""
    path = manifest_path(package)
    if not path.is_file():
        return None
    try:
        raw = json.loads(path.read_text())
        if raw.get("format") != MANIFEST_FORMAT:
            raise ValueError(f"format {raw.get('format')!r}, expected {MANIFEST_FORMAT}")
        faults = tuple(Fault(id=f["id"], kind=f["kind"], target=f["target"], note=f.get("note", "")) for f in raw["faults"])
        return Manifest(path, raw["reference"]["digest"], raw["package"]["digest"], int(raw["seed"]), faults)
    except (OSError, KeyError, TypeError, ValueError) as error:
        raise ValueError(f"cannot read the injection manifest {path}: {error}") from error


def mismatch(manifest: Manifest, reference: Path, input_: Path) -> str | None:
    """Why the manifest does not describe this reference and input (None: it does)."""
    if tree_digest(reference) != manifest.reference_digest:
        return "the reference differs from the one the faults were injected into"
    if tree_digest(input_) != manifest.package_digest:
        return "the input was changed after injection"
    return None


def _key(fault: Fault) -> tuple[str, str]:
    return fault.kind, fault.target


def collateral(reference: Path, manifest: Manifest, detected: list[Fault],
               detect: Callable[[Path, Path], list[Fault]],
               progress: Callable[[Iterable], Iterable] = lambda items: items,
               variant_selections: dict | None = None) -> dict[str, list[Fault]]:
    """Detected differences that are not injected faults, by the injected fault that causes them
    (`detect` compares with the case's `variant_selections`; each fault is injected with them).

    With one injected fault it is the cause. With several, each is injected alone again
    (same seed, so the same bytes) and compared; a difference none of them causes alone
    comes from their combination and is filed under "combined"."""
    injected = {_key(f) for f in manifest.faults}
    extra = [f for f in detected if _key(f) not in injected]
    if not extra:
        return {}
    if len(manifest.faults) == 1:
        return {manifest.faults[0].id: extra}
    found: dict[str, list[Fault]] = {}
    left = list(extra)
    with tempfile.TemporaryDirectory(prefix="usdgrade-collateral-") as tmp:
        for fault in progress(manifest.faults):
            alone = Path(tmp) / fault.id
            with muted():   # a private copy with one of the faults: USD's complaints of it are expected
                inject(reference, alone, [(fault.kind, fault.target)], manifest.seed, variant_selections)
                caused = {_key(f) for f in detect(reference, alone)}
            found[fault.id] = [f for f in left if _key(f) in caused]
            left = [f for f in left if _key(f) not in caused]
    if left:
        found["combined"] = left
    return {k: v for k, v in found.items() if v}
