"""Freezing a case: reference + broken input + faults -> CASE/ with a profile.

The profile records, for each targeted check, the input's measured error
(semantic progress starts there), the digests of both packages, tolerances,
sampling and limits, and the input's joint and composition-error counts for the
preservation bounds. `verify_case` grades the reference and the input and
refuses a case where the reference is not a perfect repair or the input earns
anything.
"""
from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from usd_repair_verifier.checks.measurement import Comparison
from usd_repair_verifier.checks.registry import Measurements
from usd_repair_verifier.stage_snapshot.correspondence import correspond
from usd_repair_verifier.stage_snapshot.read import read_snapshot
from usd_repair_verifier.stage_snapshot.variant_selections import applied_selections

from usd_repair_verifier.profiles.digest import tree_digest
from usd_repair_verifier.authoring.inject import root_layer_of
from usd_repair_verifier.profiles.schema import (SCORING_VERSION, Fault, PackageRecord, Profile, ProfileError,
                     preserved_namespaces_from_json, variant_selections_from_json)
from usd_repair_verifier.authoring.variants import SelectionRefused, check_packages
from usd_repair_verifier.profiles.vocabulary import DEFAULT_CORRESPONDENCE, DEFAULT_SAMPLING, DEFAULT_TOLERANCES, FAULT_KINDS

from usd_repair_verifier.authoring.detect import detect_faults  # noqa: F401  (finding faults by comparison)
from usd_repair_verifier.authoring.detect import CheckUnmeasurable, input_state, measured_checks, target_kind
from usd_repair_verifier.profiles.errors import Refused


class FreezeRefused(Refused):
    """The case would not grade sensibly; nothing was written."""


def build_profile(case_id: str, reference: Path, input_: Path, faults: list[Fault], tolerances: dict | None = None,
                  sampling: dict | None = None, limits: dict | None = None, version: str = "1",
                  closed_book: bool = False, allowed_urls: tuple[str, ...] = (),
                  preserved_namespaces: tuple[str, ...] = (),
                  variant_selections: dict[str, dict[str, str]] | None = None) -> Profile:
    tolerances = {**DEFAULT_TOLERANCES, **(tolerances or {})}
    sampling = {**DEFAULT_SAMPLING, **(sampling or {})}
    ref_root, in_root = root_layer_of(reference), root_layer_of(input_)
    selections = _selections(variant_selections, ref_root, in_root)
    applied = applied_selections(ref_root, selections)   # and the named prims' other sets held
    ref_snap, in_snap = (read_snapshot(ref_root, sampling, variant_selections=applied),
                         read_snapshot(in_root, sampling, variant_selections=applied))
    for fault in faults:
        _check_target(ref_snap, fault)
    match = correspond(ref_snap, in_snap, DEFAULT_CORRESPONDENCE["max_body_cost"], DEFAULT_CORRESPONDENCE["max_joint_cost"])
    measurements = Measurements(Comparison(ref_snap, in_snap, match, tolerances))
    try:
        specs = measured_checks(measurements, faults)
    except CheckUnmeasurable as error:
        raise FreezeRefused(str(error)) from None
    return Profile(
        id=case_id, version=version, scoring_version=SCORING_VERSION,
        reference=_record(reference, ref_root), input=_record(input_, in_root),
        faults=tuple(faults), checks=tuple(specs), tolerances=tolerances,
        sampling=sampling, limits=dict(limits or {}),
        correspondence=dict(DEFAULT_CORRESPONDENCE),
        input_state=input_state(in_snap),
        closed_book=closed_book, allowed_urls=tuple(allowed_urls),
        preserved_namespaces=_namespaces(preserved_namespaces),
        variant_selections=selections,
    )


def _check_target(reference, fault: Fault) -> None:
    """A fault names an element of the reference of the kind its checks measure (FreezeRefused)."""
    wanted = FAULT_KINDS[fault.kind].target
    tables = {"joint": reference.joints, "body": reference.bodies, "component": reference.components}
    if wanted == "asset" or fault.target in tables.get(wanted, ()):
        return
    found = target_kind(reference, fault.target)
    where = f"the reference has no {wanted} {fault.target}" if found is None else \
        f"{fault.target} is a {found} of the reference, not a {wanted}"
    raise FreezeRefused(f"refusing to freeze: fault {fault.id} ({fault.kind}): {where} "
                        f"(usdgrade inject --targets REFERENCE --fault {fault.kind} lists its targets)")


def _namespaces(tokens) -> tuple[str, ...]:
    try:
        return preserved_namespaces_from_json(list(tokens), "preserved namespaces")
    except ProfileError as error:
        raise FreezeRefused(str(error)) from None


def _selections(given, ref_root: Path, in_root: Path) -> dict[str, dict[str, str]]:
    """The selections, validated, that both packages take (FreezeRefused: one line)."""
    try:
        selections = variant_selections_from_json(dict(given or {}), "variant selections")
        check_packages(ref_root, in_root, selections)
    except (ProfileError, SelectionRefused) as error:
        raise FreezeRefused(str(error)) from None
    return selections


def _record(package: Path, root: Path):
    return PackageRecord(root_layer=root.name, digest=tree_digest(package))


def write_case(out: Path, reference: Path, input_: Path, profile: Profile) -> None:
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    shutil.copytree(reference, out / "reference", symlinks=True)
    shutil.copytree(input_, out / "input", symlinks=True)
    (out / "profile.json").write_text(profile.dumps())


def verify_case(case: Path, progress: Callable[[Iterable], Iterable] = lambda items: items) -> list[str]:
    """Grade the reference and the input against the case; return the reasons to refuse it.

    `progress` wraps the two grades (a progress bar on a terminal)."""
    from usd_repair_verifier.profiles.errors import NotAGrade
    from usd_repair_verifier.scoring.run import run_grade

    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        grades = {}
        for name in progress(["reference", "input"]):
            run = run_grade(case, case / name, Path(tmp) / name)
            try:
                grades[name] = run.typed_grade
            except NotAGrade as error:
                grades[name] = None
                problems.append(f"the {name}'s grade.json: {error}")
                continue
            if grades[name] is None:
                problems.append(f"the {name} left no grade.json (exit {run.exit_code})")
        g = grades["reference"]
        if g is not None and (g.authored_usd != 1.0 or not g.objective_success):
            problems.append(f"the reference scores {g.authored_usd} (status {g.status.value}, "
                            f"objective {g.objective_success}): {_why(g)}")
        g = grades["input"]
        if g is not None:
            if g.authored_usd != 0.0:
                problems.append(f"the unchanged input scores {g.authored_usd} (status {g.status.value}), not 0")
            if g.status != "graded":
                # A targeted element left broken costs fault credit, never validity or preservation:
                # an input that fails a gate would zero every partial repair too.
                problems.append(f"the unchanged input is {g.status.value}, not graded: {_why(g)}")
            for check in g.checks:
                if check.passed is not False:
                    problems.append(f"targeted check {check.id} does not fail on the input ({check.details})")
    return problems


def _why(grade, shown: int = 3) -> str:
    """A `Grade`'s reasons (or its infrastructure error) as text: the first few, then how many more."""
    reasons = grade.reasons
    if not reasons:
        return grade.infrastructure_error or "no reason recorded"
    more = f"; and {len(reasons) - shown} more" if len(reasons) > shown else ""
    return "; ".join(reasons[:shown]) + more


def freeze(case_id: str, reference: Path, input_: Path, out: Path, faults: list[Fault],
           progress: Callable[[Iterable], Iterable] = lambda items: items, **settings) -> Profile:
    profile = build_profile(case_id, Path(reference), Path(input_), faults, **settings)
    with tempfile.TemporaryDirectory() as tmp:
        staging = Path(tmp) / "case"
        # The self-check grades packages, not agents: it runs without the closed-book rule,
        # then the profile as frozen replaces the one it used.
        write_case(staging, Path(reference), Path(input_), profile.model_copy(update={"closed_book": False}))
        problems = verify_case(staging, progress)
        if problems:
            raise FreezeRefused("refusing to freeze " + case_id + ":\n  " + "\n  ".join(problems))
        (staging / "profile.json").write_text(profile.dumps())
        if Path(out).exists():
            shutil.rmtree(out)
        shutil.copytree(staging, out, symlinks=True)
    return profile
