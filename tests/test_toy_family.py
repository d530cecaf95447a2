"""Adding a check family is its module plus its entry in the family table, nothing else.

In a copy of the repository this adds a toy family, `body_pose` (a rigid body's world
position, to a tolerance far tighter than any other check's), as one new module in
checks/ and one new entry in profiles/families.py, then freezes a case with a fault of the
toy's kind and grades three submissions with the unchanged grader. The family is:
- graded: its check is in the profile and passes on the reference, fails on the input;
- gated: the objective gate the entry names (all_bodies) fails while it fails;
- preserved: the preservation gate the entry names fails when a healthy body breaks it.
The nudges (0.4 mm) stay inside every existing check's tolerance, so only the toy sees them.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CODE = ("usd_repair_verifier", "authoring", "checks", "closed_book", "commands", "gates", "physical", "profiles",
        "records", "regrade", "scoring", "stage_snapshot", "visual")

TOY_MODULE = '''"""Toy family: a rigid body's world position, to a tight tolerance."""
import math

from .measurement import Comparison, Component


def position(cmp: Comparison, target: str):
    ref = cmp.reference.bodies[target]
    cand_path = cmp.match.bodies.get(target)
    if cand_path is None:
        return {"position": Component(math.inf, cmp.tolerances["body_position_m"], ref.pose.position, None)}
    cand = cmp.candidate.bodies[cand_path]
    error = math.dist(ref.pose.position, cand.pose.position)
    return {"position": Component(error, cmp.tolerances["body_position_m"], ref.pose.position, cand.pose.position)}


MEASURES = {"position": position}


def targets(reference, measure=None):
    return list(reference.bodies)
'''

TOY_ENTRY = '''    Family(
        "body_pose", "body_pose",
        (Measure("position", "body", "all_bodies", "healthy_body_properties"),),
        {"body_position_m": 1e-5},
        (FaultKind("body_nudged", "body", (("body_pose", "position"),), "a rigid body moved a little"),),
    ),
'''

SCRIPT = '''
import json, shutil, sys
from pathlib import Path
from pxr import Gf, Usd, UsdGeom
from usd_repair_verifier.authoring.freeze import freeze
from usd_repair_verifier.profiles.schema import Fault
from usd_repair_verifier.regrade.warm import Item, WarmGrader
from usd_repair_verifier.scoring import run

work, asset = Path(sys.argv[1]), Path("fixtures/assets/cabinet_cm")
grader = WarmGrader()   # every grade here (freeze's self-check too) is the sealed session, in this process


def run_grade(case, submission, out, *args, **kwargs):
    done = grader.grade(Item(str(submission), str(Path(case).absolute()), str(Path(submission).absolute())))
    return run.RunResult(done.exit_code, json.loads(done.grade_text) if done.grade_text else None,
                         json.loads(done.reward_text) if done.reward_text else None, "", "")


run.run_grade = run_grade

def nudged(body, out):
    shutil.copytree(asset, out)
    stage = Usd.Stage.Open(str(out / "cabinet.usda"))
    op = UsdGeom.Xformable(stage.GetPrimAtPath(body)).GetOrderedXformOps()[0]
    op.Set(op.Get() + Gf.Vec3d(0.04, 0, 0))   # centimetres: 0.4 mm
    stage.GetRootLayer().Save()
    return out

broken = nudged("/Cabinet/Drawer", work / "input")
freeze("toy", asset, broken, work / "case", [Fault(id="f1", kind="body_nudged", target="/Cabinet/Drawer")])
other = nudged("/Cabinet/Door", work / "door_nudged")
out = {}
for name, submission in (("reference", asset), ("input", broken), ("healthy_broken", other)):
    result = run_grade(work / "case", submission, work / ("out_" + name))
    out[name] = {"reward": result.reward, "grade": result.grade, "stderr": result.stderr[-2000:]}
grader.close()
print(json.dumps(out))
'''


def _copy_repository(dest: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in CODE:
        shutil.copytree(REPO / name, dest / name, ignore=ignore)
    for name in ("conftest.py", "pyproject.toml"):
        shutil.copy2(REPO / name, dest / name)
    shutil.copytree(REPO / "fixtures" / "assets" / "cabinet_cm", dest / "fixtures" / "assets" / "cabinet_cm")


def _gate(grade: dict, kind: str, name: str) -> dict:
    """The gate's full result where grade.json keeps one (validity, preservation), else its summary."""
    return grade.get(kind, {}).get(name) or grade["gates"][kind][name]


@pytest.fixture(scope="module")
def toy_grades(tmp_path_factory) -> dict:
    copy = tmp_path_factory.mktemp("toy_repo")
    _copy_repository(copy)
    (copy / "checks" / "body_pose.py").write_text(TOY_MODULE)
    table = copy / "profiles" / "families.py"
    text = table.read_text()
    anchor = "\n)\n\nBY_NAME"
    assert text.count(anchor) == 1, "the family table ends where the toy entry is appended"
    table.write_text(text.replace(anchor, "\n" + TOY_ENTRY.rstrip("\n") + "\n)\n\nBY_NAME"))
    work = tmp_path_factory.mktemp("toy_work")
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(work)], cwd=copy, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _checks(grade: dict) -> dict:
    return {c["id"]: c for c in grade["checks"]}


def test_the_toy_family_is_graded(toy_grades):
    reference, broken = toy_grades["reference"], toy_grades["input"]
    assert reference["reward"]["authored_usd"] == 1.0, reference["stderr"]
    [(check_id, check)] = _checks(reference["grade"]).items()
    assert (check["family"], check["measure"], check["target"]) == ("body_pose", "position", "/Cabinet/Drawer")
    assert check["passed"] is True
    assert _checks(broken["grade"])[check_id]["passed"] is False
    assert broken["reward"]["authored_usd"] == 0.0


def test_the_toy_family_joins_its_objective_gate(toy_grades):
    assert _gate(toy_grades["reference"]["grade"], "objective", "all_bodies")["passed"] is True
    gate = _gate(toy_grades["input"]["grade"], "objective", "all_bodies")
    assert gate["passed"] is False and "body_pose.position /Cabinet/Drawer" in json.dumps(gate)


def test_the_toy_family_is_preserved_on_healthy_bodies(toy_grades):
    healthy_broken = toy_grades["healthy_broken"]
    check = next(iter(_checks(healthy_broken["grade"]).values()))
    assert check["passed"] is True   # the targeted drawer is where the reference has it
    gate = _gate(healthy_broken["grade"], "preservation", "healthy_body_properties")
    assert gate["passed"] is False and "body_pose.position /Cabinet/Door" in json.dumps(gate)
    assert healthy_broken["reward"]["authored_usd"] == 0.0
    # The reference itself keeps every healthy body where it is.
    assert _gate(toy_grades["reference"]["grade"], "preservation", "healthy_body_properties")["passed"] is True
