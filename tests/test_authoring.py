"""The case author's commands: where faults can go, a failed inject writes nothing, and
freeze uses inject's manifest, naming collateral differences as such."""
from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from usd_repair_verifier.profiles.digest import tree_digest
from usd_repair_verifier.authoring.inject import InjectionError, inject
from usd_repair_verifier.authoring.inject_targets import list_targets
from usd_repair_verifier.authoring.manifest import manifest_path, read_manifest
from usd_repair_verifier.commands import cli
from tests.grade_in_process import grade_warm

ROOT = Path(__file__).resolve().parent.parent
CABINET = ROOT / "fixtures" / "assets" / "cabinet_cm"
HINGE = "/Cabinet/Joints/DoorHinge"
BACK = "/Cabinet/Carcass/Visuals/Back"


def usdgrade(*args: str) -> subprocess.CompletedProcess:
    """`usdgrade ARGS`: its entry point called in this process, its output captured (tests/test_cli.py
    runs the command itself). freeze's self-check grades in this process too (tests/grade_in_process.py)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err), pytest.MonkeyPatch.context() as patch:
        patch.setattr("usd_repair_verifier.scoring.run.run_grade",
                      lambda case, submission, grade_out, *more, **options: grade_warm(case, submission, grade_out))
        try:
            code = cli.main(list(args))
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
    return subprocess.CompletedProcess(["usdgrade", *args], code, out.getvalue(), err.getvalue())


def test_targets_lists_where_each_kind_can_go_and_why_not():
    r = usdgrade("inject", "--targets", str(CABINET), "--fault", "joint_drive", "--fault", "joint_limit_units")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "joint_drive (joint): 1 target\n  /Cabinet/Joints/DrawerSlide\n" in out
    assert "not /Cabinet/Joints/CarcassAnchor: /Cabinet/Joints/CarcassAnchor has no drive" in out
    assert "joint_limit_units (joint): 1 target\n  /Cabinet/Joints/DoorHinge\n" in out
    assert "component_moved" not in out   # only the kinds asked for


def test_every_listed_target_injects_and_every_refused_one_does_not(tmp_path):
    before = tree_digest(CABINET)
    listing = {entry.kind: entry for entry in list_targets(CABINET)}
    assert tree_digest(CABINET) == before           # tried in memory on a private copy
    assert set(listing) >= {"joint_drive", "mass_unit_factor", "visual_material", "articulation_root"}
    for kind in ("joint_drive", "mass_unit_factor", "joint_limits"):
        entry = listing[kind]
        assert entry.valid and entry.refused, kind
        inject(CABINET, tmp_path / kind, [(kind, entry.valid[0])], seed=1)
        with pytest.raises(InjectionError):
            inject(CABINET, tmp_path / f"{kind}-refused", [(kind, entry.refused[0][0])], seed=1)
    # Trying every kind in one pass gives what trying one kind alone gives: each try is undone.
    alone = list_targets(CABINET, ["joint_drive"])[0]
    assert alone == listing["joint_drive"]


def test_failed_inject_writes_nothing(tmp_path):
    r = usdgrade("inject", "--reference", str(CABINET), "--fault", "joint_drive:/Cabinet/Joints/CarcassAnchor",
                 "--out", str(tmp_path / "bad"))
    assert r.returncode == 1 and "has no drive" in r.stderr and "nothing written" in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_failed_inject_leaves_an_earlier_package_as_it_was(tmp_path):
    out = tmp_path / "broken"
    inject(CABINET, out, [("joint_frame", HINGE)], seed=2)
    before = tree_digest(out)
    with pytest.raises(InjectionError):
        inject(CABINET, out, [("joint_frame", HINGE), ("joint_drive", "/Cabinet/Joints/CarcassAnchor")], seed=2)
    assert tree_digest(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken"]


def test_inject_writes_a_manifest_beside_the_package_not_inside(tmp_path):
    r = usdgrade("inject", "--reference", str(CABINET), "--fault", f"joint_state:{HINGE}", "--seed", "1",
                 "--out", str(tmp_path / "broken"))
    assert r.returncode == 0, r.stderr
    path = manifest_path(tmp_path / "broken")
    assert path == tmp_path / "broken.inject.json" and path.is_file()
    assert not any(p.name.endswith(".inject.json") for p in (tmp_path / "broken").rglob("*"))
    manifest = read_manifest(tmp_path / "broken")
    assert [(f.kind, f.target) for f in manifest.faults] == [("joint_state", HINGE)]
    assert manifest.package_digest == tree_digest(tmp_path / "broken")
    assert manifest.reference_digest == tree_digest(CABINET)


@pytest.mark.slow
def test_freeze_uses_the_manifest_and_reports_collateral(tmp_path):
    # Seed 0 stretches the carcass's back panel x1.6 through the top and bottom panels it meets:
    # the grade compares touching parts as one surface, so those two are reshaped too. That is
    # collateral (not what a reshaped part alone makes elsewhere), reported and not frozen, and the
    # grade counts it as damage, so freeze refuses the case.
    r = usdgrade("inject", "--reference", str(CABINET), "--fault", f"component_reshaped:{BACK}", "--seed", "0",
                 "--out", str(tmp_path / "broken"))
    assert "scaled by [1.0, 1.0, 1.6]" in r.stdout, r.stdout + r.stderr
    r = usdgrade("freeze", "--reference", str(CABINET), "--input", str(tmp_path / "broken"), "--out", str(tmp_path / "case"))
    assert "faults from" in r.stdout and f"injected f1: component_reshaped on {BACK}" in r.stdout
    assert (f"collateral of f1 (component_reshaped on {BACK}): component_reshaped on /Cabinet/Carcass/Visuals/Bottom"
            in r.stdout), r.stdout
    assert r.returncode != 0 and "refusing to freeze" in r.stderr and not (tmp_path / "case").exists()


@pytest.mark.slow
def test_a_disabled_hinge_moves_the_articulation_as_a_knock_on(tmp_path):
    # Seed 1 disables the hinge: the articulation's roots change with it, the declared knock-on of
    # a joint's state, so it is neither collateral nor a fault of its own.
    r = usdgrade("inject", "--reference", str(CABINET), "--fault", f"joint_state:{HINGE}", "--seed", "1",
                 "--out", str(tmp_path / "broken"))
    assert "jointEnabled set to False" in r.stdout, r.stdout + r.stderr
    r = usdgrade("freeze", "--reference", str(CABINET), "--input", str(tmp_path / "broken"), "--out", str(tmp_path / "case"))
    assert r.returncode == 0 and "collateral" not in r.stdout, r.stdout + r.stderr
    profile = json.loads((tmp_path / "case" / "profile.json").read_text())
    assert [(f["kind"], f["target"]) for f in profile["faults"]] == [("joint_state", HINGE)]


def test_freeze_ignores_a_manifest_that_does_not_describe_the_input(tmp_path):
    inject(CABINET, tmp_path / "broken", [("joint_frame", HINGE)], seed=2)
    other = tmp_path / "other"
    inject(CABINET, other, [("joint_frame", HINGE)], seed=2)
    from usd_repair_verifier.authoring.manifest import write_manifest
    write_manifest(CABINET, other, 2, [])
    shutil.rmtree(other)
    inject(CABINET, other, [("joint_frame", "/Cabinet/Joints/DrawerSlide")], seed=2)   # changed after the manifest
    r = usdgrade("freeze", "--reference", str(CABINET), "--input", str(other), "--out", str(tmp_path / "case"))
    assert "the input was changed after injection" in r.stdout, r.stdout + r.stderr
    assert "found f1: joint_frame on /Cabinet/Joints/DrawerSlide" in r.stdout


class Terminal(__import__("io").StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_a_rate_on_a_terminal_and_nothing_elsewhere(monkeypatch):
    from usd_repair_verifier.scoring.progress import progress

    monkeypatch.setattr(sys, "stderr", Terminal())
    assert list(progress(range(3), "trying", "try")) == [0, 1, 2]
    assert "trying" in sys.stderr.getvalue() and "try/s" in sys.stderr.getvalue()
    monkeypatch.setattr(sys, "stderr", __import__("io").StringIO())
    assert list(progress(range(3), "trying", "try")) == [0, 1, 2]
    assert sys.stderr.getvalue() == ""


def test_targets_prints_no_progress_when_not_on_a_terminal():
    r = usdgrade("inject", "--targets", str(CABINET), "--fault", "joint_drive")
    assert r.returncode == 0 and "try/s" not in r.stderr and "%" not in r.stderr


@pytest.mark.slow
def test_collateral_of_several_faults_is_filed_under_the_fault_that_causes_it(tmp_path):
    from usd_repair_verifier.authoring.freeze import detect_faults
    from usd_repair_verifier.authoring.manifest import collateral, write_manifest

    faults = [("joint_frame", "/Cabinet/Joints/DrawerSlide"), ("component_reshaped", BACK)]
    done = inject(CABINET, tmp_path / "broken", faults, seed=0)
    assert "scaled by [1.0, 1.0, 1.6]" in done[1].note
    write_manifest(CABINET, tmp_path / "broken", 0, done)
    manifest = read_manifest(tmp_path / "broken")
    detected = detect_faults(CABINET, tmp_path / "broken")
    found = collateral(CABINET, manifest, detected, detect_faults)
    assert {cause: [(f.kind, f.target) for f in items] for cause, items in found.items()} == {
        "f2": [("component_reshaped", "/Cabinet/Carcass/Visuals/Bottom"), ("component_reshaped", "/Cabinet/Carcass/Visuals/Top")]}
