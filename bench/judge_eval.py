"""How often does the visual judge see what is really there? Pairs with known visual differences.

    python -m bench.judge_eval [--out OUT] [--judge-model ID] [--votes K] [--size PX] [--views V,...]

Builds reference/candidate pairs from the cabinet fixture, each with one known difference: the
drawer handle moved 1, 2 and 5 cm, the door knob missing, an extra box on the top, the drawer
front recoloured, the handle reshaped (1.6x longer), and an identical pair. Every pair is
rendered by the verifier's own renderer; with a key (ANTHROPIC_API_KEY) each pair goes to the
judge and the criterion the difference should fail is compared with the verdict (and, for the
identical pair, every criterion should pass). Without a key it says plainly that the judge did
NOT run, records only the renders (the differing pixels of each pair), and reports no agreement.
Writes OUT/judge_eval.json.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BASE = REPO / "fixtures" / "cases" / "cabinet_drawer_door" / "reference"
ROOT_LAYER = "cabinet.usda"
HANDLE, KNOB, DRAWER_FRONT = "/Cabinet/Drawer/Handle", "/Cabinet/Door/Knob", "/Cabinet/Drawer/Visuals/Front"

# name -> (edit, the rubric criterion the candidate should fail; None: every criterion should pass)
PAIRS = {
    "identical": (("none",), None),
    "handle_moved_1cm": (("move", HANDLE, 0.01), "placement"),
    "handle_moved_2cm": (("move", HANDLE, 0.02), "placement"),
    "handle_moved_5cm": (("move", HANDLE, 0.05), "placement"),
    "knob_missing": (("remove", KNOB), "no_missing_parts"),
    "extra_box": (("add_box", "/Cabinet/Extra"), "no_extra_parts"),
    "drawer_front_recoloured": (("recolour", DRAWER_FRONT), "materials_and_colours"),
    "handle_reshaped": (("stretch", HANDLE, 1.6), "proportions"),
}


def make_candidate(kind: tuple, out: Path) -> Path:
    """A copy of the base package with one edit, authored in its root layer (what an agent could write)."""
    from pxr import Gf, Sdf, Usd, UsdGeom, UsdShade

    shutil.copytree(BASE, out)
    stage = Usd.Stage.Open(str(out / ROOT_LAYER))
    mpu = UsdGeom.GetStageMetersPerUnit(stage) or 0.01
    op = kind[0]
    if op == "move":
        prim = stage.GetPrimAtPath(kind[1])
        xf = UsdGeom.Xformable(prim)
        local = xf.GetLocalTransformation()
        shift = Gf.Matrix4d().SetTranslate(Gf.Vec3d(kind[2] / mpu, 0.0, 0.0))   # sideways, metres -> units
        xf.ClearXformOpOrder()
        xf.AddTransformOp().Set(local * shift)
    elif op == "remove":
        stage.GetPrimAtPath(kind[1]).SetActive(False)
    elif op == "add_box":
        cube = UsdGeom.Cube.Define(stage, kind[1])
        top = stage.GetPrimAtPath("/Cabinet/Carcass/Visuals/Top")
        bounds = UsdGeom.BBoxCache(Usd.TimeCode.Default(), ["default", "render"]).ComputeWorldBound(top).ComputeAlignedRange()
        centre = (bounds.GetMin() + bounds.GetMax()) / 2.0
        cube.AddTranslateOp().Set(Gf.Vec3d(centre[0], centre[1], bounds.GetMax()[2] + 0.05 / mpu))
        cube.CreateSizeAttr(0.1 / mpu)
        cube.CreateDisplayColorAttr([(0.1, 0.3, 0.8)])
    elif op == "recolour":
        material = UsdShade.Material.Define(stage, "/Cabinet/EvalRecolour")
        shader = UsdShade.Shader.Define(stage, "/Cabinet/EvalRecolour/Surface")
        shader.CreateIdAttr("UsdPreviewSurface")
        shader.CreateInput("diffuseColor", Sdf.ValueTypeNames.Color3f).Set((0.1, 0.35, 0.8))
        material.CreateSurfaceOutput().ConnectToSource(shader.ConnectableAPI(), "surface")
        UsdShade.MaterialBindingAPI.Apply(stage.GetPrimAtPath(kind[1])).Bind(
            material, UsdShade.Tokens.strongerThanDescendants)
    elif op == "stretch":
        xf = UsdGeom.Xformable(stage.GetPrimAtPath(kind[1]))
        local = xf.GetLocalTransformation()
        xf.ClearXformOpOrder()
        xf.AddTransformOp().Set(Gf.Matrix4d().SetScale(Gf.Vec3d(kind[2], 1.0, 1.0)) * local)
    stage.GetRootLayer().Save()
    return out


def render_pairs(work: Path, size: int, views: tuple[str, ...] | None = None, names=None) -> dict:
    """{pair: (images for the judge, differing pixels per view)}."""
    from usd_repair_verifier.visual import judge as judges, render

    out = {}
    for name in names or PAIRS:
        edit, _ = PAIRS[name]
        candidate = make_candidate(edit, work / name)
        rendered = render.render_pair(BASE, candidate, size=size, views=views or tuple(render.VIEWS))
        images = [judges.Image(role, view, rendered[role][view]["png"], rendered[role][view]["digest"])
                  for view in rendered["views"] for role in render.ROLES]
        out[name] = (images, {v: rendered["difference"][v]["differing_pixels"] for v in rendered["views"]})
    return out


def agreement(results: dict) -> dict:
    """Share of pairs where the expected criterion got the expected verdict (identical: all pass)."""
    hits, rows = 0, {}
    for name, verdicts in results.items():
        target = PAIRS[name][1]
        if verdicts is None:
            rows[name] = {"agree": None, "why": "the judge's vote failed"}
            continue
        if target is None:
            ok = all(v == "pass" for v in verdicts.values())
        else:
            ok = verdicts.get(target) == "fail"
        hits += ok
        rows[name] = {"expected": "all pass" if target is None else f"{target} fail", "agree": ok, "verdicts": verdicts}
    return {"agreement": hits / len(results) if results else None, "pairs": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out/judge_eval")
    parser.add_argument("--judge-model", default=None)
    parser.add_argument("--votes", type=int, default=1)
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--views", default=None, help="comma-separated views (default: all five)")
    args = parser.parse_args(argv)
    from usd_repair_verifier.visual import judge as judges, rubric as rubrics

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model = judges.resolve_model(args.judge_model)
    report: dict = {"model": model, "pairs": list(PAIRS), "judge_ran": False}
    with tempfile.TemporaryDirectory(prefix="judge-eval-") as tmp:
        rendered = render_pairs(Path(tmp), args.size, tuple(args.views.split(",")) if args.views else None)
    report["differing_pixels"] = {name: diff for name, (_, diff) in rendered.items()}
    if not judges.has_credentials():
        report["status"] = "not_run"
        report["reason"] = "no ANTHROPIC_API_KEY: the judge did NOT run; no agreement was measured"
        (out / "judge_eval.json").write_text(json.dumps(report, indent=2, sort_keys=True))
        print(f"judge_eval: NOT RUN. {report['reason']}. Renders only: differing pixels per pair written to "
              f"{out / 'judge_eval.json'}")
        return 0
    judge = judges.AnthropicJudge(model)
    rubric = rubrics.load()
    results = {}
    for name, (images, _) in rendered.items():
        votes = []
        for _ in range(args.votes):
            try:
                votes.append(judge.vote(rubric, images))
            except judges.JudgeError as error:
                print(f"{name}: vote failed: {error}", file=sys.stderr)
                votes.append(None)
        final = judges.aggregate(rubric, votes)
        results[name] = None if any(v is None for v in votes) else {k: v["verdict"] for k, v in final.items()}
    report.update(status="ran", judge_ran=True, **agreement(results))
    (out / "judge_eval.json").write_text(json.dumps(report, indent=2, sort_keys=True))
    print(f"judge_eval: model {model}, {len(PAIRS)} pairs, agreement {report['agreement']:.2f}")
    for name, row in report["pairs"].items():
        print(f"  {name:<26} expected {row.get('expected', '-'):<28} agree {row['agree']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
