"""What the physical grade corrects before the MuJoCo solver (physical/corrections.py), on the two
hand-authored robots of fixtures/physical_robots and on hyq's planar colliders: the engine loads
each, and every change is the recorded one. Loads the engine in this process (a few seconds each)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
ROBOTS = ROOT / "fixtures" / "physical_robots"


def _load(root: Path):
    from usd_repair_verifier.physical import engine
    from usd_repair_verifier.physical.settings import SETTINGS

    return engine.load(root, SETTINGS)


def test_the_committed_robots_are_what_the_script_builds():
    done = subprocess.run([sys.executable, "-m", "fixtures.build_physical_robots", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_unbalanced_inertia_is_raised_to_the_least_moments_mujoco_accepts():
    loaded = _load(ROBOTS / "unbalanced_inertia_arm" / "robot.usda")
    [correction] = loaded.corrections
    assert correction["kind"] == "inertia_balanced" and correction["target"] == "/Robot/Base/Upper/Fore"
    before, after = correction["details"]["principal_moments"], correction["details"]["corrected_moments"]
    assert before == pytest.approx([0.0002, 0.0002, 0.001], rel=1e-5)
    assert after[1:] == before[1:]                             # only the smallest moment moves
    assert after[0] + after[1] >= after[2] and after[0] == pytest.approx(after[2] - after[1], rel=1e-4)
    body = loaded.body_labels.index("/Robot/Base/Upper/Fore")
    moments = np.linalg.eigvalsh(np.asarray(loaded.model.body_inertia.numpy()[body], dtype=float))
    assert moments[0] + moments[1] >= moments[2]                # what the engine holds


@pytest.mark.slow
def test_a_massless_link_between_two_hinges_gets_the_stand_in():
    loaded = _load(ROBOTS / "massless_link_arm" / "robot.usda")
    [correction] = loaded.corrections
    assert correction["kind"] == "mass_stand_in" and correction["target"] == "/Robot/Base/Yaw"
    assert loaded.body_mass_kg[loaded.body_labels.index("/Robot/Base/Yaw")] == pytest.approx(0.001)
    # the authored links keep their authored masses
    assert loaded.body_mass_kg[loaded.body_labels.index("/Robot/Base/Yaw/Upper")] == pytest.approx(0.4)


def test_planar_mesh_colliders_become_thin_slabs_never_dropped():
    loaded = _load(ROOT / "fixtures" / "robot_cases" / "hyq_shape_and_mass" / "reference" / "hyq.usda")
    slabs = [c for c in loaded.corrections if c["kind"] == "planar_mesh_thickened"]
    assert [c["target"].rsplit("/", 1)[-1] for c in slabs] == ["tn__Frame001_lC", "tn__Frame002_lC"]
    assert all(c["details"]["thickness_m"] == pytest.approx(0.001) for c in slabs)
    assert all(c["target"] in loaded.collision_shapes for c in slabs)   # still colliders


def test_a_moving_assembly_without_mass_takes_its_colliders_volume_at_the_default_density():
    """Built in Newton directly: a free body whose only collider has no density (no mass) gets the
    collider's volume at 1000 kg/m^3; a massless body welded to the world stays as it is."""
    import newton
    import warp as wp

    from usd_repair_verifier.physical import corrections

    builder = newton.ModelBuilder()
    free = builder.add_body(xform=wp.transform(wp.vec3(0.0, 0.0, 1.0), wp.quat_identity()), label="/free")
    builder.add_shape_box(free, hx=0.1, hy=0.2, hz=0.05, cfg=newton.ModelBuilder.ShapeConfig(density=0.0),
                          label="/free/box")
    anchored = builder.add_link(label="/anchored")
    builder.add_shape_box(anchored, hx=0.1, hy=0.1, hz=0.1, cfg=newton.ModelBuilder.ShapeConfig(density=0.0))
    builder.add_articulation([builder.add_joint_fixed(-1, anchored)])
    records = corrections.masses_from_colliders(builder, 1.0)
    assert [(r["kind"], r["target"]) for r in records] == [("mass_from_colliders", "/free")]
    assert records[0]["details"]["mass_kg"] == pytest.approx(1000.0 * 0.2 * 0.4 * 0.1, rel=1e-5)   # 8 kg
    assert float(builder.body_mass[anchored]) == 0.0             # welded to the world: not moving
    inertia = np.asarray(builder.body_inertia[free], dtype=float).reshape(3, 3)
    assert inertia[2, 2] == pytest.approx(8.0 * (0.2 ** 2 + 0.4 ** 2) / 12.0, rel=1e-4)
