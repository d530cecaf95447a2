"""`usdgrade inject` and `usdgrade freeze`: the case author's commands.

    usdgrade inject --list                                   the fault kinds
    usdgrade inject --targets REF [--fault KIND ...]         where each kind can go in REF
    usdgrade inject --reference REF --fault KIND[:TARGET] ... --seed S --out DIR [--force] [--variant ...]
    usdgrade freeze --reference REF --input IN --out CASE [--faults F.json] [--id ID] [--force]
                    [--variant PRIM:SET=SELECTION ...]

`inject` writes DIR and, beside it, DIR.inject.json (what it did); a fault that cannot be
injected writes nothing. `freeze` takes the faults from --faults (a list of faults, or the
manifest inject wrote), else from IN.inject.json when that describes IN exactly, else finds them
by comparing the two stages. `--variant` composes every stage with a variant selection (a
SimReady asset's engine, docs/simready.md); freeze records it in the profile. Neither replaces a
folder it did not write (scoring/outputs.py), and every mistake of the author's is one line on
stderr with a non-zero exit, never a traceback.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from usd_repair_verifier.scoring.outputs import OutputRefused, check_placement, claim_folder
from usd_repair_verifier.scoring.progress import labelled, working

from usd_repair_verifier.authoring import usd_messages
from usd_repair_verifier.profiles.errors import ExitCode

ROOT_LAYER_SUFFIXES = (".usd", ".usda", ".usdc", ".usdz")


def fail(line: str, code: ExitCode = ExitCode.USAGE) -> ExitCode:
    print(line, file=sys.stderr)
    return code


def first_line(error: BaseException) -> str:
    """An exception as one line: USD's errors span several, the useful one is the last non-empty."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[-1] if lines else type(error).__name__


def package_problem(path: Path, label: str) -> str | None:
    """Why `path` is not a package (one line, naming the folder the author gave), or None."""
    if not path.exists():
        return f"the {label} {path} does not exist"
    if not path.is_dir():
        return f"the {label} {path} is not a folder (a package is a folder with one root layer at its top)"
    layers = sorted(p.name for p in path.iterdir() if p.suffix.lower() in ROOT_LAYER_SUFFIXES and p.is_file())
    if len(layers) == 1:
        return None
    hint = ""
    if (path / "profile.json").is_file() and (path / "reference").is_dir():
        hint = f"; it is a case folder: its intact package is {path / 'reference'}"
    if not layers:
        return f"{path} is not a package: no root layer (.usd, .usda, .usdc, .usdz) at its top{hint}"
    return f"{path} is not a package: it has {len(layers)} root layers at its top ({', '.join(layers)})"


def say_usd(found: usd_messages.Captured, places: dict, heading: str) -> None:
    lines = usd_messages.describe(found, places)
    if lines:
        print(f"{heading}:")
        for line in lines:
            print(f"  {line}")


def print_targets(reference: Path, kinds: list[str], selections: dict | None = None) -> int:
    from usd_repair_verifier.authoring.inject import InjectionError
    from usd_repair_verifier.authoring.inject_targets import list_targets
    from usd_repair_verifier.stage_snapshot.read import StageOpenError, read_snapshot

    problem = package_problem(reference, "package")
    if problem:
        return fail(f"cannot list targets: {problem}")
    places = {reference: str(reference)}
    try:
        with usd_messages.captured() as said:
            read_snapshot(next(p for p in sorted(reference.iterdir()) if p.suffix.lower() in ROOT_LAYER_SUFFIXES), {},
                          variant_selections=selections)
        with usd_messages.captured():  # each try breaks a private copy on purpose: what USD says of it is expected
            listing = list_targets(reference, kinds or None, progress=labelled("trying targets", "try"),
                                   variant_selections=selections)
    except (InjectionError, StageOpenError, OSError) as error:
        return fail(f"cannot list targets in {reference}: {usd_messages.error_text(error)}", ExitCode.REFUSED)
    say_usd(said, places, "USD warned while reading the package")
    for entry in listing:
        count = len(entry.valid)
        print(f"{entry.kind} ({entry.target_kind}): {count} target{'' if count == 1 else 's'}")
        for target in entry.valid:
            print(f"  {target}")
        for target, why in entry.refused:
            print(f"  not {target}: {why}")
    return ExitCode.DONE


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
        if (kind, target or "*") in faults:   # stacked twice, freeze would weight it twice
            return f"fault {spec} is given twice; each KIND:TARGET may be injected once"
        faults.append((kind, target or "*"))
    return faults


def injected_by_inject(folder: Path) -> bool:
    """`usdgrade inject` wrote this folder: its manifest lies beside it and names it."""
    from usd_repair_verifier.authoring.manifest import MANIFEST_FORMAT, manifest_path

    try:
        manifest = json.loads(manifest_path(folder).read_text())
        return manifest.get("format") == MANIFEST_FORMAT and manifest["package"]["name"] == Path(folder).name
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def inject_command(args: argparse.Namespace) -> int:
    from pxr import Tf

    from usd_repair_verifier.authoring.inject import INJECTORS, InjectionError, inject
    from usd_repair_verifier.authoring.manifest import manifest_path, write_manifest
    from usd_repair_verifier.profiles.vocabulary import FAULT_KINDS

    if args.list:
        for name, kind in sorted(FAULT_KINDS.items()):
            marker = "" if name in INJECTORS else "  (no injector)"
            print(f"{name:<28} {kind.target:<9} {kind.summary}{marker}")
        return ExitCode.DONE
    from usd_repair_verifier.authoring.variants import parse_variant_args

    try:
        selections = parse_variant_args(getattr(args, "variant", None) or [])
    except ValueError as error:
        return fail(f"cannot inject: {error}")
    if args.targets:
        unknown = [k for k in args.fault if k not in FAULT_KINDS]
        if unknown:
            return fail(f"unknown fault kind {unknown[0]!r}; see usdgrade inject --list")
        return print_targets(Path(args.targets), args.fault, selections)
    if not (args.reference and args.out and args.fault):
        return fail("inject needs --reference, --out and at least one --fault (or --list, --targets REF)")
    faults = parse_faults(args.fault)
    if isinstance(faults, str):
        return fail(faults)
    reference, out = Path(args.reference), Path(args.out)
    problem = package_problem(reference, "reference")
    if problem:
        return fail(f"cannot inject: {problem}")
    manifest = manifest_path(out)
    try:
        claim_folder(out, "inject", [("reference", reference)], force=args.force, owned=injected_by_inject)
        check_placement(manifest, [("reference", reference)], owns_folder=False, option="the manifest")
    except OutputRefused as error:
        return fail(str(error))
    if manifest.exists() and not (manifest.is_file() and injected_by_inject(out)):
        return fail(f"{manifest} exists and usdgrade inject did not write it for {out}: nothing was written; "
                    f"choose another --out (the manifest goes beside it)")
    staging = re.compile(r"(?:[^\s@]*/)?\." + re.escape(out.name) + r"\.inject-[^/]+/package")
    places = {staging: str(out), reference: str(reference), out: str(out)}   # the copy being broken is OUT
    try:
        with usd_messages.captured() as said:
            done = inject(reference, out, faults, args.seed, variant_selections=selections)
    except InjectionError as error:
        return fail(f"cannot inject: {error} (nothing written)", ExitCode.REFUSED)
    except OSError as error:
        return fail(f"cannot inject: {error}", ExitCode.REFUSED)
    except Tf.ErrorException as error:   # a layer of the reference that USD cannot read
        unread = usd_messages.relabel(usd_messages.error_text(error), {**places, staging: str(reference)})
        return fail(f"cannot inject: {unread} (nothing written)", ExitCode.REFUSED)
    for item in done:
        print(f"{item.kind} {item.target}: {item.note}")
    say_usd(said, places, "USD warned while injecting (a fault that breaks composition is expected to)")
    manifest = write_manifest(reference, out, args.seed, done)
    print(f"wrote {out} and {manifest}")
    return ExitCode.DONE


def faults_from_file(path: Path) -> list:
    """The faults of a --faults file: a JSON list of {id, kind, target, note}, or the manifest
    `usdgrade inject` writes ({"faults": [...]}). ValueError: one line that says what is wrong."""
    from usd_repair_verifier.profiles.schema import Fault
    from usd_repair_verifier.profiles.vocabulary import FAULT_KINDS

    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ValueError(f"cannot read --faults {path}: {error.strerror or error}") from None
    except ValueError as error:
        raise ValueError(f"--faults {path} is not JSON: {error}") from None
    if isinstance(raw, dict) and isinstance(raw.get("faults"), list):
        raw = raw["faults"]
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"--faults {path}: expected a list of faults "
                         '([{"kind": KIND, "target": "/Prim/Path"}, ...]) or the .inject.json that usdgrade inject wrote')
    faults, ids = [], set()
    for i, item in enumerate(raw, 1):
        where = f"--faults {path}: fault {i}"
        if not isinstance(item, dict):
            raise ValueError(f"{where} is {type(item).__name__}, not an object with kind and target")
        kind = item.get("kind")
        if kind not in FAULT_KINDS:
            raise ValueError(f"{where}: unknown kind {kind!r}; see usdgrade inject --list")
        target = item.get("target") or ""
        if FAULT_KINDS[kind].target == "asset":
            target = "*"
        elif not isinstance(target, str) or target in ("", "*"):
            raise ValueError(f"{where} ({kind}) has no target: give \"target\": \"/Prim/Path\" "
                             f"(usdgrade inject --targets REF --fault {kind} lists them)")
        fault_id = item.get("id", f"f{i}")
        if fault_id in ids:
            raise ValueError(f"{where}: id {fault_id!r} is used twice")
        ids.add(fault_id)
        try:
            faults.append(Fault(id=fault_id, kind=kind, target=target, note=str(item.get("note", ""))))
        except ValueError as error:  # pydantic: the first problem, in one line
            raise ValueError(f"{where}: {first_line(error)}") from None
    return faults


def faults_for_freeze(reference: Path, input_: Path, faults_file: str | None, selections: dict | None = None):
    """The faults to freeze, and the lines that say where they came from; a sentence instead of the
    faults: nothing differs, refuse (it says what was compared). Stages are
    compared as the case will grade them: composed with its variant `selections`."""
    import functools

    from usd_repair_verifier.authoring.detect import detect, detect_faults
    from usd_repair_verifier.authoring.manifest import collateral, mismatch, read_manifest

    if faults_file:
        return faults_from_file(Path(faults_file)), [f"faults from {faults_file}"]
    lines = []
    manifest = read_manifest(input_)
    why_not = mismatch(manifest, reference, input_) if manifest else "no injection manifest"
    detection = detect(reference, input_, variant_selections=selections)
    detected = detection.faults
    if why_not:
        if manifest:
            lines.append(f"not using {manifest.path}: {why_not}; finding the faults by comparison")
        for f in detected:
            lines.append(f"found {f.id}: {f.kind} on {f.target} ({f.note})")
        for f in detection.unnamed:
            lines.append(f"differs, but no fault kind names it: {f.reason}")
        # Nothing found, or a difference no fault names (the input would fail the grade's gates
        # whatever was repaired): the refusal says what was compared and found, so it can be checked.
        return (detection.refusal() if detection.unnamed or not detected else detected), lines
    lines.append(f"faults from {manifest.path}")
    found = {(f.kind, f.target) for f in detected}
    by_id = {f.id: f for f in manifest.faults}
    for f in manifest.faults:
        seen = "" if (f.kind, f.target) in found else "  (not found by comparison as this kind)"
        lines.append(f"injected {f.id}: {f.kind} on {f.target} ({f.note}){seen}")
    extra = collateral(reference, manifest, detected, functools.partial(detect_faults, variant_selections=selections),
                       progress=labelled("attributing collateral", "fault"),
                       variant_selections=selections)
    for cause, items in extra.items():
        source = by_id.get(cause)
        label = f"{cause} ({source.kind} on {source.target})" if source else "the injected faults together"
        for f in items:
            lines.append(f"collateral of {label}: {f.kind} on {f.target} ({f.note}); not frozen as a fault")
    return list(manifest.faults), lines


def frozen_by_freeze(folder: Path) -> bool:
    """`usdgrade freeze` wrote this folder: a case (profile.json, reference/, input/) and nothing else."""
    from usd_repair_verifier.profiles.schema import ProfileError, load_profile
    from usd_repair_verifier.scoring.outputs import MARK_FILE

    names = {p.name for p in Path(folder).iterdir()}
    if not names <= {"profile.json", "reference", "input", MARK_FILE} or "profile.json" not in names:
        return False
    try:
        load_profile(Path(folder) / "profile.json")
    except (ProfileError, OSError, ValueError):
        return False
    return True


def freeze_command(args: argparse.Namespace) -> int:
    from pxr import Tf

    from usd_repair_verifier.authoring.freeze import FreezeRefused, freeze
    from usd_repair_verifier.profiles.schema import selection_text
    from usd_repair_verifier.authoring.inject import InjectionError, root_layer_of
    from usd_repair_verifier.authoring.manifest import manifest_path
    from usd_repair_verifier.authoring.variants import SelectionRefused, check_packages, parse_variant_args
    from usd_repair_verifier.stage_snapshot.read import StageOpenError

    reference, input_, out = Path(args.reference), Path(args.input), Path(args.out)
    for path, label in ((reference, "reference"), (input_, "input")):
        problem = package_problem(path, label)
        if problem:
            return fail(f"cannot freeze: {problem}")
    try:
        selections = parse_variant_args(getattr(args, "variant", None) or [])
    except ValueError as error:
        return fail(f"cannot freeze: {error}")
    try:
        claim_folder(out, "freeze", [("reference", reference), ("input", input_), ("faults file", args.faults),
                                     ("input's manifest", manifest_path(input_))], force=args.force, owned=frozen_by_freeze)
    except OutputRefused as error:
        return fail(str(error))
    places = {reference: str(reference), input_: str(input_)}
    said = usd_messages.Captured()
    try:
        with usd_messages.captured() as said:
            # Before anything is compared: a selection the packages cannot take, or physics that
            # only sits behind variants nobody selected, is the author's to fix (one line).
            check_packages(root_layer_of(reference), root_layer_of(input_), selections)
            with working("freeze: comparing the input with the reference"):
                faults, lines = faults_for_freeze(reference, input_, args.faults, selections)
            print("\n".join(lines))
            if isinstance(faults, str):
                return fail(f"refusing to freeze: {faults}", ExitCode.REFUSED)
            with working("freeze: measuring the input's errors, then grading reference and input"):
                profile = freeze(args.id or out.name, reference, input_, out, faults,
                                 progress=labelled("grading reference and input", "grade"),
                                 closed_book=getattr(args, "closed_book", False),
                                 preserved_namespaces=tuple(getattr(args, "preserve_namespace", None) or ()),
                                 variant_selections=selections)
    except ValueError as error:   # a --faults file or a manifest that cannot be used
        return fail(str(error))
    except (FreezeRefused, SelectionRefused) as error:
        return fail(str(error), ExitCode.REFUSED)
    except (InjectionError, StageOpenError, OSError, Tf.ErrorException) as error:
        return fail(f"cannot freeze: {usd_messages.error_text(error)}", ExitCode.REFUSED)
    finally:
        say_usd(said, places, "USD warned while reading the packages (a broken input may well make it)")
    chosen = f", variant selections {selection_text(profile.variant_selections)}" if profile.variant_selections else ""
    print(f"froze {out}: {len(profile.faults)} fault(s), {len(profile.checks)} check(s){chosen}")
    return ExitCode.DONE
