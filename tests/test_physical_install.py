"""The engine's pins: one list, in pyproject's `physical` extra and in physical/settings.py."""
import tomllib
from pathlib import Path

from physical.settings import ENGINE_REQUIREMENTS

ROOT = Path(__file__).resolve().parent.parent


def test_pyproject_extra_matches_the_provisioned_pins():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert tuple(project["project"]["optional-dependencies"]["physical"]) == ENGINE_REQUIREMENTS
    assert "physical" in project["tool"]["setuptools"]["packages"]


def test_core_usd_is_not_pinned_below_the_engine_importers_bound():
    """newton[importers] would pin usd-core < 26.9: the extra must not pull it in."""
    assert not any("importers" in r for r in ENGINE_REQUIREMENTS)


def test_the_authored_usd_grade_never_registers_the_engine_schemas():
    """newton_usd_schemas registers Newton's USD schemas (NewtonCollisionAPI brings CollisionAPI
    back as a built-in) when imported: the authored-USD grade must compose without them, or the
    same bytes would grade differently with the physical extra installed."""
    import subprocess
    import sys

    code = ("import sys, scoring.plugin, scoring.session, gates.validity, profiles.freeze; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('newton', 'newton_usd_schemas', 'warp', 'mujoco')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", proc.stdout
