"""How long reading a stage into a snapshot takes, split by stage, as ratios to the floor.

    python -m bench.bench_snapshot [--bodies 60 --triangles 300000]

floor    = open the stage and run the UsdPhysics parser (what any tool must do)
snapshot = everything the checks need: bodies, joints, components (tessellation and
           seeded surface sampling), colliders (solids), mass properties
free space = the reference-only free-space samples of every body (parts.with_free_space)
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from pxr import Sdf, UsdGeom, UsdPhysics  # noqa: E402

from bench.generate import generate  # noqa: E402
from usd_repair_verifier.stage_snapshot import mass, parts  # noqa: E402
from usd_repair_verifier.stage_snapshot.read import open_stage, snapshot  # noqa: E402


def timed(fn, *args):
    start = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bodies", type=int, default=60)
    parser.add_argument("--triangles", type=int, default=300_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = generate(Path(tmp) / "asset", args.bodies, args.triangles)
        stage, t_open = timed(open_stage, root)
        _, t_parse = timed(UsdPhysics.UsdPhysicsLoadStageFromPrimRange, stage, [Sdf.Path.absoluteRootPath])
        triangles = sum(len(UsdGeom.Mesh(p).GetFaceVertexCountsAttr().Get() or []) * 2
                        for p in stage.Traverse() if p.IsA(UsdGeom.Mesh))
        bodies = [str(p.GetPath()) for p in stage.Traverse() if p.HasAPI(UsdPhysics.RigidBodyAPI)]
        _, t_mass = timed(mass.stage_mass_properties, stage, bodies)
        _, t_parts = timed(parts.read_parts, stage, set(bodies), 1.0, 1.0, {"seed": 0})
        snap, t_snapshot = timed(snapshot, stage, str(root), {"seed": 0})
        _, t_free = timed(parts.with_free_space, snap)
    floor = t_open + t_parse
    print(f"asset: {len(bodies)} bodies, ~{triangles} triangles, {len(snap.joints)} joints")
    print(f"floor (open + physics parse)      {floor:7.3f} s   1.00x")
    print(f"mass properties                   {t_mass:7.3f} s   {t_mass / floor:5.2f}x")
    print(f"parts (sampling, solids, mass...) {t_parts:7.3f} s   {t_parts / floor:5.2f}x")
    print(f"whole snapshot                    {t_snapshot:7.3f} s   {t_snapshot / floor:5.2f}x")
    print(f"free space (reference only)       {t_free:7.3f} s   {t_free / floor:5.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
