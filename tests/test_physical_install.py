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
