"""Equivalent variants of each fixture asset's reference against that reference: the figures the
thresholds are calibrated on (every property must pass, with margin).

    python -m bench.calibrate_physical OUTDIR [-j 2]

Variants: flattened layers; a renamed namespace (root prim and Geometry scope); for the cabinet,
another collision decomposition (the door panel's box collider as two half boxes).
"""
from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from usd_repair_verifier.physical.grade import run_physical
from usd_repair_verifier.physical.property_results import not_applicable

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "fixtures" / "cases"
# one case per asset, and the asset's root prim name
ASSET_CASES = {
    "ant": ("gen_ant_1", "ant"), "ball_in_cup": ("gen_ball_in_cup_4", "tn__ballincup_j97"),
    "cabinet_cm": ("cabinet_drawer_door", "Cabinet"), "cartpole": ("gen_cartpole_1", "tn__cartpole_bC"),
    "cheetah": ("gen_cheetah_1", "cheetah"), "finger": ("gen_finger_1", "finger"),
    "gripper_m": ("gripper_hull_and_mass", "Gripper"), "half_cheetah": ("gen_half_cheetah_1", "cheetah"),
    "hopper": ("gen_hopper_1", "hopper"), "inverted_double_pendulum": ("gen_inverted_double_pendulum_1", "cartpole"),
    "reacher": ("gen_reacher_1", "reacher"),
}


def variants_of(asset: str, work: Path) -> dict[str, Path]:
    from tests import variants

    case, root = ASSET_CASES[asset]
    reference = CASES / case / "reference"
    made = {"flattened": variants.flatten(reference, work / f"{asset}-flat"),
            "renamed": variants.rename_namespace(reference, work / f"{asset}-renamed",
                                                 {root: "Renamed", "Geometry": "Parts"})}
    if asset == "cabinet_cm":
        split = variants.flatten(reference, work / f"{asset}-decomposed")
        split_door_panel(split)
        made["another_decomposition"] = split
    return made


def split_door_panel(package: Path) -> None:
    """Another collision decomposition of a single-layer package: the cabinet door's panel collider
    (a scaled Cube with its own density and material) as two half boxes with the same properties:
    the same volume, mass and surface."""
    from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

    stage = Usd.Stage.Open(str(next(p for p in package.iterdir() if p.suffix in (".usda", ".usd", ".usdc"))))
    layer = stage.GetRootLayer()
    panel_prim = next(p for p in stage.Traverse() if p.GetName() == "Panel" and p.HasAPI(UsdPhysics.CollisionAPI))
    local = UsdGeom.Xformable(panel_prim).GetLocalTransformation()
    size = UsdGeom.Cube(panel_prim).GetSizeAttr().Get()
    scale = [Gf.Vec3d(local.GetRow3(i)).GetLength() for i in range(3)]
    longest = max(range(3), key=lambda i: scale[i])
    for sign, name in ((-1, "PanelA"), (1, "PanelB")):
        path = panel_prim.GetPath().GetParentPath().AppendChild(name)
        assert Sdf.CopySpec(layer, panel_prim.GetPath(), layer, path)
        half = UsdGeom.Xformable(stage.GetPrimAtPath(path))
        half.ClearXformOpOrder()
        offset = Gf.Vec3d(0, 0, 0)
        offset[longest] = sign * 0.25 * size
        half_scale = Gf.Vec3d(1, 1, 1)
        half_scale[longest] = 0.5
        half.AddTransformOp(opSuffix="split").Set(
            Gf.Matrix4d().SetScale(half_scale) * Gf.Matrix4d().SetTranslate(offset) * local)
    stage.RemovePrim(panel_prim.GetPath())
    layer.Save()


def margins(record: dict) -> dict:
    out = {}
    for test in record["tests"].values():
        for p in test.values():
            if isinstance(p["value"], (int, float)) and not isinstance(p["value"], bool) and p["name"] not in (
                    "bodies", "degrees_of_freedom", "colliders_built", "collider_bodies"):
                out[f"{p['test']}.{p['name']}"] = [p["value"], p["threshold"], p["passed"]]
            elif p["passed"] is not True:
                out[f"{p['test']}.{p['name']}"] = [p["value"], p["threshold"], p["passed"], p["reason"]]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("-j", type=int, default=2)
    args = ap.parse_args(argv)
    out = Path(args.out)
    jobs = []
    for asset in ASSET_CASES:
        for name, package in variants_of(asset, out / "packages").items():
            jobs.append((asset, name, package))

    def one(job):
        asset, name, package = job
        record = run_physical(CASES / ASSET_CASES[asset][0], package, out / "runs" / f"{asset}-{name}")
        # a test that does not apply (a world-anchored asset's drops, no gripper) is null, not a miss
        unexplained = [p for t in record["tests"].values() for p in t.values()
                       if p["passed"] is None and not not_applicable(p["reason"])]
        return {"asset": asset, "variant": name, "status": record["status"],
                "all_pass": record["summary"]["failed"] == 0 and not unexplained,
                "failed": record["summary"]["failed_properties"], "figures": margins(record),
                "nulls": sorted({p["reason"] for t in record["tests"].values() for p in t.values() if p["passed"] is None})}

    with ThreadPoolExecutor(args.j) as pool:
        rows = list(pool.map(one, jobs))
    for row in rows:
        print(json.dumps(row), flush=True)
    (out / "calibration.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
