"""A malformed profile is refused with the field that is wrong."""
import copy
import json
import re
from pathlib import Path

import pytest

from usd_repair_verifier.profiles.schema import ProfileError, load_profile, profile_from_json

GOOD = {
    "schema": "usd-repair-case-profile",
    "schema_version": 1,
    "id": "demo",
    "version": "1",
    "scoring_version": "1",
    "reference": {"root_layer": "a.usda", "digest": "sha256:00"},
    "input": {"root_layer": "a.usda", "digest": "sha256:11"},
    "faults": [{"id": "f1", "kind": "joint_frame", "target": "/a/j"}],
    "checks": [{"id": "f1-joint.frame", "fault": "f1", "family": "joint", "measure": "frame", "target": "/a/j",
                "input_error": {"position_m": 0.1, "axis_deg": "inf"}}],
}


def broken(path, value):
    d = copy.deepcopy(GOOD)
    node = d
    for key in path[:-1]:
        node = node[key]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return d


def test_good_profile_loads_with_defaults():
    p = profile_from_json(GOOD)
    assert p.checks[0].input_error["axis_deg"] == float("inf")
    assert p.tolerances["joint_position_m"] > 0
    assert p.targeted == {"/a/j"}


def test_round_trip_through_json():
    p = profile_from_json(GOOD)
    assert profile_from_json(json.loads(p.dumps())) == p


def test_preserved_namespaces_default_to_none_and_round_trip():
    assert profile_from_json(GOOD).preserved_namespaces == ()
    p = profile_from_json({**GOOD, "preserved_namespaces": ["myengine:solver", "myengine", "myengine"]})
    assert p.preserved_namespaces == ("myengine", "myengine:solver")
    assert json.loads(p.dumps())["preserved_namespaces"] == ["myengine", "myengine:solver"]
    assert profile_from_json(json.loads(p.dumps())) == p


CASES = Path(__file__).resolve().parent.parent / "fixtures" / "cases"


@pytest.mark.parametrize("case_id", sorted(p.name for p in CASES.iterdir() if (p / "profile.json").is_file()))
def test_a_frozen_profile_without_the_new_field_writes_back_byte_for_byte(case_id):
    """An absent optional field is its default and is not written: re-writing a frozen
    profile gives the same bytes, so its digest (and every grade) is unchanged."""
    text = (CASES / case_id / "profile.json").read_text(encoding="utf-8")
    assert "preserved_namespaces" not in json.loads(text)
    profile = load_profile(CASES / case_id / "profile.json")
    assert profile.preserved_namespaces == ()
    assert profile.dumps() == text


@pytest.mark.parametrize("path, value, words", [
    (("schema",), "other", "profile.schema"),
    (("schema_version",), 99, "schema_version"),
    (("id",), KeyError, "missing field 'id'"),
    (("reference", "digest"), 5, "profile.reference.digest"),
    (("reference", "root_layer"), "sub/a.usda", "top level"),
    (("faults", 0, "kind"), "melted", "unknown fault kind"),
    (("checks", 0, "measure"), "vibes", "unknown check"),
    (("checks", 0, "fault"), "f9", "no fault 'f9'"),
    (("checks", 0, "input_error", "position_m"), "far", "expected a number"),
    (("checks",), [], "at least one"),
    (("tolerances",), {"joint_position_m": True}, "expected a number"),
    (("preserved_namespaces",), "myengine", "profile.preserved_namespaces: expected a list"),
    (("preserved_namespaces",), ["myengine:"], "preserved_namespaces[0]"),
    (("preserved_namespaces",), ["ok", ""], "preserved_namespaces[1]"),
    (("preserved_namespaces",), ["my engine"], "preserved_namespaces[0]"),
    (("preserved_namespaces",), ["a::b"], "preserved_namespaces[0]"),
    (("preserved_namespaces",), ["1engine"], "preserved_namespaces[0]"),
    (("preserved_namespaces",), [7], "preserved_namespaces[0]"),
])
def test_malformed_profile_names_the_field(path, value, words):
    with pytest.raises(ProfileError, match=re.escape(words)):
        profile_from_json(broken(path, value))


def test_unreadable_and_non_json_profiles(tmp_path):
    with pytest.raises(ProfileError, match="cannot read"):
        load_profile(tmp_path / "missing.json")
    (tmp_path / "p.json").write_text("{not json")
    with pytest.raises(ProfileError, match="not valid JSON"):
        load_profile(tmp_path / "p.json")
    (tmp_path / "n.json").write_text('{"x": NaN}')
    with pytest.raises(ProfileError, match="not valid JSON"):
        load_profile(tmp_path / "n.json")


def test_the_vocabulary_names_exactly_the_registered_measures():
    """profiles/vocabulary.py MEASURES validates profiles without importing the checks: it must
    list what checks/registry.py runs, no more, no less, in the same order."""
    from usd_repair_verifier.checks.registry import FAMILIES
    from usd_repair_verifier.profiles.vocabulary import MEASURES

    assert MEASURES == {family: tuple(module.MEASURES) for family, module in FAMILIES.items()}


def test_reading_a_case_imports_no_measuring_code():
    """The xdist controller reads the case and never measures: it must not pay for pxr and scipy."""
    import subprocess
    import sys

    code = ("import sys; from usd_repair_verifier.profiles.case import load_case; load_case(sys.argv[1]); "
            "import usd_repair_verifier.scoring.plugin; "
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('pxr', 'scipy') or m.split('.')[:2] in "
            "(['usd_repair_verifier', 'checks'], ['usd_repair_verifier', 'stage_snapshot'])); "
            "print(heavy)")
    case = Path(__file__).resolve().parent.parent / "fixtures" / "cases" / "ant_two_joint_faults"
    proc = subprocess.run([sys.executable, "-c", code, str(case)], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parent.parent)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", proc.stdout


def test_freeze_writes_the_namespaces_it_is_given_and_refuses_a_bad_one():
    from usd_repair_verifier.authoring.freeze import FreezeRefused, build_profile
    from usd_repair_verifier.profiles.schema import Fault

    case = CASES / "hopper_body_and_com"
    faults = list(load_profile(case / "profile.json").faults)
    profile = build_profile("ns", case / "reference", case / "input", faults,
                            preserved_namespaces=("myengine", "other:solver"))
    assert profile.preserved_namespaces == ("myengine", "other:solver")
    assert json.loads(profile.dumps())["preserved_namespaces"] == ["myengine", "other:solver"]
    with pytest.raises(FreezeRefused, match="preserved namespaces"):
        build_profile("ns", case / "reference", case / "input", faults, preserved_namespaces=("my engine",))
    assert isinstance(faults[0], Fault)


def test_the_freeze_command_refuses_a_bad_namespace_and_writes_nothing(tmp_path, capsys):
    from usd_repair_verifier.commands.cli import main

    case = CASES / "hopper_body_and_com"
    faults = tmp_path / "faults.json"
    faults.write_text(json.dumps([{"id": f.id, "kind": f.kind, "target": f.target}
                                  for f in load_profile(case / "profile.json").faults]))
    out = tmp_path / "case"
    code = main(["freeze", "--reference", str(case / "reference"), "--input", str(case / "input"),
                 "--out", str(out), "--faults", str(faults), "--preserve-namespace", "my engine"])
    assert code == 1 and not out.exists()
    assert "my engine" in capsys.readouterr().err
