"""`usdgrade explain --html`: an offline page whose pictures highlight the failing check's parts,
drawn only from the graded bytes."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from usd_repair_verifier.profiles.case import load_case
from usd_repair_verifier.commands import cli
from usd_repair_verifier.commands.explain_html import write_page
from usd_repair_verifier.scoring.outputs import MARK_FILE
from usd_repair_verifier.commands.explain_pictures import PRIMARY, Highlight, Pictures, highlighted_scene, primary_mask
from usd_repair_verifier.scoring import grade_file
from usd_repair_verifier.visual import raster, render
from tests.grade_in_process import grade_warm

ROOT = Path(__file__).resolve().parent.parent
CASE = ROOT / "fixtures" / "cases" / "ant_two_joint_faults"
DEMO = ROOT / "fixtures" / "submissions" / "ant_two_joint_faults_one_repair"
UNREPAIRED_JOINT = "/ant/Geometry/torso/front_right_leg/aux_2/Body/ankle_2"
ITS_CHILD_PART = "/ant/Geometry/torso/front_right_leg/aux_2/Body/right_ankle_geom"


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("grade")
    r = grade_warm(CASE, DEMO, out)   # the grading session in this process; explain below is the command
    assert r.exit_code == 0, r.stdout[-2000:]
    grade = grade_file.read((out / "grade.json").read_text())
    page_dir = tmp_path_factory.mktemp("page")
    # `usdgrade explain --html`, its entry point called in this process
    assert cli.main(["explain", str(out / "grade.json"), "--html", "--out", str(page_dir),
                     "--case", str(CASE), "--submission", str(DEMO)]) == 0
    return {"grade": grade, "dir": page_dir, "html": (page_dir / "index.html").read_text()}


def test_page_shows_status_arithmetic_gates_and_the_failing_check(demo):
    text = demo["html"]
    assert "R = 0.5 F + 0.5 S = 0.5 x 0.5000 + 0.5 x 0.5000 = 0.5000" in text
    for kind in ("validity", "preservation", "objective"):
        for name in getattr(demo["grade"].gates, kind):
            assert f"<code>{name}</code>" in text
    assert '<span class="fail">FAIL</span></td><td><code>all_joints</code>' in text
    assert "f2-joint.range" in text and "travel.lower" in text and "travel.upper" in text
    # the candidate's error bar: no progress on this check, so it is as long as the input's
    assert re.search(r'class="fill bad" style="width:100.00%"', text)
    assert "f1-joint.frame" in text.split("Passing checks")[1]


def test_page_is_offline(demo):
    text = demo["html"].lower()
    assert "<script" not in text and "http://" not in text and "https://" not in text
    for src in re.findall(r'src="([^"]+)"', demo["html"]):
        assert "/" not in src and (demo["dir"] / src).is_file()


def test_the_unrepaired_joint_is_highlighted_on_its_part(demo):
    """The demo's failing check (a revolute limit in radians) changes nothing a picture shows: the
    page draws the part concerned once, on the reference, in the asset's own views."""
    pictures = Pictures(CASE / "reference", DEMO, dict(load_case(CASE).profile.sampling),
                        dict(load_case(CASE).profile.correspondence))
    scenes = pictures.scenes(UNREPAIRED_JOINT)
    for role in ("reference", "candidate"):
        assert scenes[role][1].primary == frozenset([ITS_CHILD_PART])   # same path here: the demo keeps names
    assert not pictures.draw(UNREPAIRED_JOINT).differs
    # The part alone, drawn with the page's camera: its footprint.
    bounds = render.union_bounds(*(scene for scene, _ in scenes.values()))
    files = sorted(demo["dir"].glob("check-0-*.png"))
    assert len(files) == 2 and all(png.stem.split("-")[2] == "reference" for png in files)
    assert "look the same from every view" in demo["html"] and "where: " in demo["html"]
    for png in files:
        role, view = png.stem.split("-")[2], png.stem.split("-")[3]
        image = render.decode_png(png.read_bytes())
        highlighted = primary_mask(image)
        scene = scenes[role][0]
        alone = np.all(scene.colors == np.array(PRIMARY), axis=1)
        part = render.Scene(scene.triangles[alone], scene.colors[alone], scene.part_ids[alone], 1)
        footprint = np.any(render.rasterize(part, render.camera(view, bounds, image.shape[0], pictures.directions))
                           != np.round(np.array(raster.BACKGROUND) * 255).astype(np.uint8), axis=2)
        assert highlighted.sum() > 200, (png.name, int(highlighted.sum()))
        assert not (highlighted & ~footprint).any(), png.name      # every orange pixel is on the joint's part
        assert highlighted.sum() >= 0.8 * footprint.sum(), png.name  # and the part is visible, not hidden


CABINET_CASE = ROOT / "fixtures" / "cases" / "cabinet_handle_and_collider"


@pytest.fixture(scope="module")
def cabinet_pictures() -> Pictures:
    profile = load_case(CABINET_CASE).profile
    return Pictures(CABINET_CASE / "reference", CABINET_CASE / "input", dict(profile.sampling),
                    dict(profile.correspondence))


def test_a_visible_fault_gets_a_pair_and_an_invisible_one_only_where_it_is(cabinet_pictures):
    """The handle moved (geometry.placement): reference and candidate differ; the door's collider
    shrunk (collision.coverage): the door looks the same, though the moved handle changes pixels
    elsewhere in the picture."""
    moved = cabinet_pictures.draw("/Cabinet/Drawer/Handle")
    assert moved.differs and all(set(roles) == {"reference", "candidate"} for roles in moved.views.values())
    shrunk = cabinet_pictures.draw("/Cabinet/Door")
    assert not shrunk.differs and all(set(roles) == {"reference"} for roles in shrunk.views.values())
    assert cabinet_pictures.singled_out("/Cabinet/Door") and not cabinet_pictures.singled_out("*")


def test_each_view_is_named_for_where_it_stands_around_the_assets_front(cabinet_pictures):
    """The cabinet's door and drawer face its front: seen from the front and the front three-quarter
    they show, from the rear three-quarter the carcass hides them (its front faces +Y, so views fixed
    to the world's axes, a front camera at -Y, called this side the rear)."""
    scene, _ = cabinet_pictures.scenes("/Cabinet/Door")["reference"]
    bounds = render.union_bounds(scene)
    door = {view: int(primary_mask(render.rasterize(scene, render.camera(view, bounds, 192, cabinet_pictures.directions))).sum())
            for view in render.VIEWS}
    assert door["front"] > 1000 and door["three_quarter"] > 1000, door
    assert door["three_quarter_rear"] == 0, door
    assert door["front"] > door["side"], door


def test_context_is_not_highlighted():
    pictures = Pictures(CASE / "reference", DEMO, {}, {})
    nothing = highlighted_scene(pictures.reference, Highlight(frozenset(), frozenset(), (), ""))
    image = render.rasterize(nothing, render.camera("top", render.union_bounds(nothing)))
    assert not primary_mask(image).any()


def test_page_is_the_same_for_the_same_bytes(demo, tmp_path):
    write_page(demo["grade"], tmp_path / "again", CASE, DEMO)
    for path in demo["dir"].iterdir():
        if path.name != MARK_FILE:   # the command's mark of its own folder (scoring/outputs.py)
            assert (tmp_path / "again" / path.name).read_bytes() == path.read_bytes(), path.name


def test_no_pictures_from_other_bytes_than_the_graded_ones(demo, tmp_path):
    index = write_page(demo["grade"], tmp_path / "other", CASE, CASE / "input")
    text = index.read_text()
    assert "No pictures: the submission&#x27;s bytes differ from the graded ones" in text
    assert not list((tmp_path / "other").glob("*.png"))
    text = write_page(demo["grade"], tmp_path / "none").read_text()
    assert "No pictures: give --case CASE and --submission DIR" in text


def test_hostile_names_are_escaped(demo, tmp_path):
    grade = demo["grade"].to_json()
    grade["checks"][1]["target"] = "<script>alert(1)</script>"
    grade["gates"]["objective"]["all_joints"]["reason"] = '<img src="http://x/">'
    text = write_page(grade_file.read(grade), tmp_path / "hostile").read_text()
    assert "<script>alert" not in text and '<img src="http' not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def test_partial_grade_page_says_what_did_not_run(demo, tmp_path):
    grade = demo["grade"].to_json()
    grade.update({"status": "partial", "authored_usd": None, "targeted_repair_fraction": 1.0,
                  "targeted_semantic_score": 1.0, "objective_success": None, "reasons": [],
                  "missing_tests": ["check:c2", "validity:local_package"],
                  "gates": {"validity": {}, "preservation": {}, "objective": {}}})
    first, second = grade["checks"]
    grade["checks"] = [{**first, "id": "c1", "passed": True, "progress": 1.0, "details": "ok"},
                       {**second, "id": "c2", "passed": None, "progress": None, "details": "not run", "components": {}}]
    text = write_page(grade_file.read(grade), tmp_path / "partial").read_text()
    assert "R = " not in text and "no F, S or reward was computed" in text
    assert '<span class="notrun">not run</span></td><td><code>local_package</code>' in text
    assert "Checks not run</h2><p><code>c2</code>" in text


def test_the_page_shows_failing_checks_before_gates_and_labels_its_number(demo):
    text = demo["html"]
    assert text.index("<h2>Failing checks</h2>") < text.index("<h2>Gates</h2>")
    # Failing gates first among the gates.
    gates = text[text.index("<h2>Gates</h2>"):]
    assert gates.index('<span class="fail">FAIL</span>') < gates.index('<span class="pass">pass</span>')
    assert '<p class="reward">0.5 <small>authored_usd (the reward, 0 to 1)</small></p>' in text
    assert "kind <code>joint_limit_units</code>" in text
    assert "68.7783 deg &gt; 0.5 deg" in text and "(error in deg)" in text


def test_a_page_made_again_without_the_case_keeps_its_pictures(demo, tmp_path):
    page = tmp_path / "page"
    write_page(demo["grade"], page, CASE, DEMO)
    drawn = sorted(p.name for p in page.glob("check-*.png"))
    (page / "check-99-mine.png").write_bytes(b"not the command's")   # a file the command did not write
    text = write_page(demo["grade"], page).read_text()               # no --case, no --submission
    assert sorted(p.name for p in page.glob("check-*.png")) == sorted(drawn + ["check-99-mine.png"])
    assert "No pictures" not in text and all(f'src="{name}"' in text for name in drawn)
    # Another grade's page in the same folder: its pictures are not this grade's, so none are shown,
    # and the command still deletes nothing it did not write.
    other = demo["grade"].model_copy(update={"digests": demo["grade"].digests.model_copy(
        update={"candidate": demo["grade"].digests.candidate.model_copy(update={"digest": "0" * 64})})})
    text = write_page(other, page).read_text()
    assert "No pictures: give --case CASE and --submission DIR" in text
    assert (page / "check-99-mine.png").exists() and all((page / name).exists() for name in drawn)
