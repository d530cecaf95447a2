"""The engine's pins: one list, in pyproject's `physical` extra (which the `test` extra pulls in) and in
physical/settings.py. Nothing here installs anything: installing is the README's and CI's job."""
import tomllib
from pathlib import Path

from usd_repair_verifier.physical.settings import ENGINE_REQUIREMENTS

ROOT = Path(__file__).resolve().parent.parent


def test_pyproject_extra_matches_the_pins():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extras = project["project"]["optional-dependencies"]
    assert tuple(extras["physical"]) == ENGINE_REQUIREMENTS
    pulled = [r.split("[", 1)[1].rstrip("]").split(",") for r in extras["test"] if "[" in r]
    assert any("physical" in names for names in pulled)          # the test command's extra pulls the engine
    assert "usd_repair_verifier.physical" in project["tool"]["setuptools"]["packages"]


def test_core_usd_is_not_pinned_below_the_engine_importers_bound():
    """newton[importers] would pin usd-core < 26.9: the extra must not pull it in."""
    assert not any("importers" in r for r in ENGINE_REQUIREMENTS)


def test_the_authored_usd_grade_never_registers_the_engine_schemas():
    """newton_usd_schemas registers Newton's USD schemas (NewtonCollisionAPI brings CollisionAPI
    back as a built-in) when imported: the authored-USD grade must compose without them, or the
    same bytes would grade differently with the physical extra installed."""
    import subprocess
    import sys

    code = ("import sys, usd_repair_verifier.scoring.plugin, usd_repair_verifier.scoring.session, usd_repair_verifier.gates.validity, usd_repair_verifier.authoring.freeze; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('newton', 'newton_usd_schemas', 'warp', 'mujoco')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", proc.stdout


def test_no_test_installs_packages():
    """Installing is the README's and CI's job: no test module reaches the provisioning helper or pip."""
    offenders = []
    for path in sorted((ROOT / "tests").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if path.name == "test_physical_pins.py":
            continue
        for needle in ("usd_repair_verifier.physical.provision", "ensure_engine", '"pip", "install"', "'pip', 'install'"):
            if needle in text:
                offenders.append(f"{path.name}: {needle}")
    assert not offenders, offenders
