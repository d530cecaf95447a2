"""The committed real-robot packages (fixtures/robots): packages the verifier accepts, and what the
fixtures/README.md table says of them (their bytes; `python -m fixtures.build_robots --table`
writes the other columns from the packages)."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from pxr import Usd, UsdUtils

from fixtures.build_robots import ROBOTS, SOURCES
from usd_repair_verifier.authoring.inject import root_layer_of

README = Path(__file__).resolve().parent.parent / "fixtures" / "README.md"


def test_every_robot_is_built_by_the_script():
    assert sorted(p.name for p in ROBOTS.iterdir() if p.is_dir()) == sorted(SOURCES)


@pytest.mark.parametrize("robot", sorted(SOURCES))
def test_a_package_the_verifier_accepts(robot):
    package = ROBOTS / robot
    root = root_layer_of(package)
    assert root.name == f"{robot}.usda"
    layers, assets, unresolved = UsdUtils.ComputeAllDependencies(str(root))
    assert not unresolved
    inside = os.path.realpath(package) + os.sep
    assert all(os.path.realpath(p).startswith(inside) for p in [layer.realPath for layer in layers] + list(assets))
    assert not Usd.Stage.Open(str(root)).GetCompositionErrors()


def test_the_readme_table_gives_each_package_its_bytes():
    rows = dict(re.findall(r"^\| `(\w+)` \| (?:example-robot-data|gymnasium-robotics) .*\| ([\d,]+) \|$",
                           README.read_text(), re.M))
    assert set(rows) == set(SOURCES)
    for robot, size in rows.items():
        assert int(size.replace(",", "")) == sum(p.stat().st_size for p in (ROBOTS / robot).rglob("*") if p.is_file())


def test_a_case_reference_is_its_robot_with_the_case_layer():
    """The joint_drive case's reference is xArm7 as converted plus the committed layer of drives
    (fixtures/robot_layers), the root layer's strongest sublayer: nothing else differs."""
    from fixtures.build_robot_cases import CASES, LAYERS, REFERENCE_LAYERS, ROBOT_CASES
    from pxr import UsdPhysics

    assert REFERENCE_LAYERS
    for case, layer in REFERENCE_LAYERS.items():
        robot, _ = ROBOT_CASES[case]
        reference = CASES / case / "reference"
        ours = {p.relative_to(reference) for p in reference.rglob("*") if p.is_file()}
        theirs = {p.relative_to(ROBOTS / robot) for p in (ROBOTS / robot).rglob("*") if p.is_file()}
        root = root_layer_of(ROBOTS / robot).relative_to(ROBOTS / robot)
        assert ours == theirs | {Path("Layers") / layer}
        for name in theirs - {root}:
            assert (reference / name).read_bytes() == (ROBOTS / robot / name).read_bytes(), name
        assert (reference / "Layers" / layer).read_bytes() == (LAYERS / layer).read_bytes()
        stage = Usd.Stage.Open(str(reference / root))
        assert stage.GetRootLayer().subLayerPaths[0] == f"./Layers/{layer}"
        drives = [p for p in stage.Traverse() if any(s.startswith("PhysicsDriveAPI") for s in p.GetAppliedSchemas())]
        assert drives and all(p.IsA(UsdPhysics.Joint) for p in drives)
