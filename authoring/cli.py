"""`usdgrade inject` and `usdgrade freeze`: the case author's commands.

    usdgrade inject --list                                   the fault kinds
    usdgrade inject --targets REF [--fault KIND ...]         where each kind can go in REF
    usdgrade inject --reference REF --fault KIND[:TARGET] ... --seed S --out DIR
    usdgrade freeze --reference REF --input IN --out CASE [--faults F.json] [--id ID]

`inject` writes DIR and, beside it, DIR.inject.json (what it did); a fault that cannot be
injected writes nothing. `freeze` takes the faults from --faults, else from IN.inject.json
when that describes IN exactly, else finds them by comparing the two stages.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from usd_repair_verifier.scoring.progress import labelled


def print_targets(reference: Path, kinds: list[str]) -> int:
    from usd_repair_verifier.authoring.inject import InjectionError
    from usd_repair_verifier.authoring.inject_targets import list_targets

    try:
        listing = list_targets(reference, kinds or None, progress=labelled("trying targets", "try"))
    except (InjectionError, OSError) as error:
        print(f"cannot list targets: {error}", file=sys.stderr)
        return 2
    for entry in listing:
        count = len(entry.valid)
        print(f"{entry.kind} ({entry.target_kind}): {count} target{'' if count == 1 else 's'}")
        for target in entry.valid:
            print(f"  {target}")
        for target, why in entry.refused:
            print(f"  not {target}: {why}")
    return 0


def parse_faults(specs: list[str]) -> list[tuple[str, str]] | str:
    """(kind, target) pairs from KIND[:TARGET] arguments, or the reason they are wrong."""
    from usd_repair_verifier.profiles.vocabulary import FAULT_KINDS

    faults = []
    for spec in specs:
        kind, _, target = spec.partition(":")
        if kind not in FAULT_KINDS:
            return f"unknown fault kind {kind!r}; see usdgrade inject --list"
        if not target and FAULT_KINDS[kind].target != "asset":
            return f"fault {kind} needs a target: {kind}:/Prim/Path (see usdgrade inject --targets REF --fault {kind})"
        faults.append((kind, target or "*"))
    return faults


def inject_command(args: argparse.Namespace) -> int:
    from usd_repair_verifier.authoring.inject import INJECTORS, InjectionError, inject
    from usd_repair_verifier.authoring.manifest import write_manifest
    from usd_repair_verifier.profiles.vocabulary import FAULT_KINDS

    if args.list:
        for name, kind in sorted(FAULT_KINDS.items()):
            marker = "" if name in INJECTORS else "  (no injector)"
            print(f"{name:<28} {kind.target:<9} {kind.summary}{marker}")
        return 0
    if args.targets:
        unknown = [k for k in args.fault if k not in FAULT_KINDS]
        if unknown:
            print(f"unknown fault kind {unknown[0]!r}; see usdgrade inject --list", file=sys.stderr)
            return 2
        return print_targets(Path(args.targets), args.fault)
    if not (args.reference and args.out and args.fault):
        print("inject needs --reference, --out and at least one --fault (or --list, --targets REF)", file=sys.stderr)
        return 2
    faults = parse_faults(args.fault)
    if isinstance(faults, str):
        print(faults, file=sys.stderr)
        return 2
    try:
        done = inject(Path(args.reference), Path(args.out), faults, args.seed)
    except InjectionError as error:
        print(f"cannot inject: {error} (nothing written)", file=sys.stderr)
        return 1
    for item in done:
        print(f"{item.kind} {item.target}: {item.note}")
    manifest = write_manifest(Path(args.reference), Path(args.out), args.seed, done)
    print(f"wrote {args.out} and {manifest}")
    return 0


def faults_for_freeze(reference: Path, input_: Path, faults_file: str | None):
    """The faults to freeze, and the lines that say where they came from; None: refuse."""
    from usd_repair_verifier.authoring.freeze import detect_faults
    from usd_repair_verifier.authoring.manifest import collateral, mismatch, read_manifest
    from usd_repair_verifier.profiles.schema import Fault

    if faults_file:
        raw = json.loads(Path(faults_file).read_text())
        return [Fault(id=f.get("id", f"f{i + 1}"), kind=f["kind"], target=f.get("target", "*"),
                      note=f.get("note", "")) for i, f in enumerate(raw)], []
    lines = []
    manifest = read_manifest(input_)
    why_not = mismatch(manifest, reference, input_) if manifest else "no injection manifest"
    detected = detect_faults(reference, input_)
    if why_not:
        if manifest:
            lines.append(f"not using {manifest.path}: {why_not}; finding the faults by comparison")
        for f in detected:
            lines.append(f"found {f.id}: {f.kind} on {f.target} ({f.note})")
        return (detected or None), lines
    lines.append(f"faults from {manifest.path}")
    found = {(f.kind, f.target) for f in detected}
    by_id = {f.id: f for f in manifest.faults}
    for f in manifest.faults:
        seen = "" if (f.kind, f.target) in found else "  (not found by comparison as this kind)"
        lines.append(f"injected {f.id}: {f.kind} on {f.target} ({f.note}){seen}")
    extra = collateral(reference, manifest, detected, detect_faults, progress=labelled("attributing collateral", "fault"))
    for cause, items in extra.items():
        source = by_id.get(cause)
        label = f"{cause} ({source.kind} on {source.target})" if source else "the injected faults together"
        for f in items:
            lines.append(f"collateral of {label}: {f.kind} on {f.target} ({f.note}); not frozen as a fault")
    return list(manifest.faults), lines


def freeze_command(args: argparse.Namespace) -> int:
    from usd_repair_verifier.authoring.freeze import FreezeRefused, freeze

    reference, input_ = Path(args.reference), Path(args.input)
    try:
        faults, lines = faults_for_freeze(reference, input_, args.faults)
    except ValueError as error:
        print(str(error), file=sys.stderr)
        return 1
    print("\n".join(lines))
    if not faults:
        print("refusing to freeze: the input does not differ from the reference in anything measured",
              file=sys.stderr)
        return 1
    try:
        profile = freeze(args.id or Path(args.out).name, reference, input_, Path(args.out), faults,
                         progress=labelled("grading reference and input", "grade"),
                         closed_book=getattr(args, "closed_book", False),
                         preserved_namespaces=tuple(getattr(args, "preserve_namespace", None) or ()))
    except FreezeRefused as error:
        print(str(error), file=sys.stderr)
        return 1
    print(f"froze {args.out}: {len(profile.faults)} fault(s), {len(profile.checks)} check(s)")
    return 0
