"""What a candidate's snapshot costs when most of its meshes are the reference's: the content cache's
cost curve on generated assets (stage_snapshot/content_cache.py).

    python -m bench.bench_content_cache [--quick] [--sizes 50000,200000,500000,1000000,2000000] [--bodies 20]

Per size (a chain of BODIES bodies, TRIANGLES triangles in all, each body's mesh its visible part and
its convex-hull collider; bench/generate.py, crate layers), in a fresh child process:
  reference   the reference's snapshot, read first (nothing cached: what every grade pays for it)
  same        a copy of the package as the candidate, read after the reference (the cache holds
              every mesh: the usual repair, whose meshes are untouched)
  one changed the same with one body's mesh reshaped (1% larger): the cache holds all but that one
  uncached    the identical candidate again with the cache emptied first (what it cost before)
The ratios are same / uncached and one changed / uncached in the same run; the snapshots read from
the cache are checked against the uncached ones (visible parts, colliders, mass properties).
Writes bench/results/content-cache-<date>.md (not with --quick or --no-record).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
FULL_SIZES = [50_000, 200_000, 500_000, 1_000_000, 2_000_000]
QUICK_SIZES = [50_000]
SAMPLING = {"seed": 0, "surface_samples": 1024, "free_space_samples": 512}

CHILD = r"""
import json, shutil, sys, time
from pathlib import Path
import numpy as np
from pxr import Usd, UsdGeom, Vt
from bench.generate import generate
from usd_repair_verifier.stage_snapshot.content_cache import CACHE
from usd_repair_verifier.stage_snapshot.read import read_snapshot

work, bodies, triangles, sampling = Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), json.loads(sys.argv[5])
reference = generate(work / "reference", bodies, triangles, "usdc")
shutil.copytree(work / "reference", work / "same")
shutil.copytree(work / "reference", work / "changed")
stage = Usd.Stage.Open(str(work / "changed" / reference.name))
mesh = UsdGeom.Mesh(stage.GetPrimAtPath("/Robot/Link000/Shape"))
mesh.GetPointsAttr().Set(Vt.Vec3fArray.FromNumpy(np.asarray(mesh.GetPointsAttr().Get()) * 1.01))
stage.GetRootLayer().Save()

def plain(s):
    return (sorted((k, c.samples.tobytes(), c.surface.digest) for k, c in s.components.items()),
            sorted((k, c.digest, c.volume) for k, c in s.colliders.items()),
            sorted((k, repr(v)) for k, v in s.mass.items()))

def timed(package):
    start = time.perf_counter()
    snap = read_snapshot(package / reference.name, sampling)
    return time.perf_counter() - start, snap

row = {}
CACHE.clear()
row["reference"], _ = timed(work / "reference")
row["same"], same = timed(work / "same")
row["one_changed"], _ = timed(work / "changed")
hits = CACHE.hits
CACHE.clear()
row["uncached"], fresh = timed(work / "same")
row["identical"] = plain(same) == plain(fresh)
row["hits"] = hits
print(json.dumps(row))
"""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one small size only (a smoke run, not recorded)")
    parser.add_argument("--sizes", default=None, help="total triangles per asset, comma-separated")
    parser.add_argument("--bodies", type=int, default=20, help="bodies per asset (default 20)")
    parser.add_argument("--no-record", action="store_true", help="do not write bench/results/")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per size (default 1800)")
    return parser.parse_args(argv)


def measure(bodies: int, triangles: int, timeout: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench_content_cache_") as work:
        proc = subprocess.run([sys.executable, "-c", CHILD, str(REPO), work, str(bodies), str(triangles),
                               json.dumps(SAMPLING)], capture_output=True, text=True, timeout=timeout,
                              cwd=REPO)  # the checkout heads the child's sys.path
    if proc.returncode != 0:
        raise RuntimeError(f"{bodies}x{triangles}: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = [int(float(s)) for s in args.sizes.split(",")] if args.sizes else (QUICK_SIZES if args.quick else FULL_SIZES)
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [f"load average at the start {load} on {os.cpu_count()} cores; {args.bodies} bodies; "
             f"{SAMPLING['surface_samples']} surface samples a part", "",
             "| triangles | reference (s) | same (s) | one changed (s) | uncached (s) | same / uncached | "
             "one changed / uncached | cache hits | identical |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    print(lines[0])
    print(f"{'triangles':>10} {'reference s':>12} {'same s':>8} {'1 changed s':>12} {'uncached s':>11} "
          f"{'same/unc':>9} {'1chg/unc':>9} {'hits':>5} identical")
    failed = False
    for triangles in sizes:
        try:
            row = measure(args.bodies, triangles, args.timeout)
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            print(f"{triangles:>10} failed: {error}")
            failed = True
            continue
        same, changed = row["same"] / row["uncached"], row["one_changed"] / row["uncached"]
        failed |= not row["identical"]
        print(f"{triangles:>10} {row['reference']:>12.3f} {row['same']:>8.3f} {row['one_changed']:>12.3f} "
              f"{row['uncached']:>11.3f} {same:>8.2f}x {changed:>8.2f}x {row['hits']:>5} {row['identical']}")
        lines.append(f"| {triangles:,} | {row['reference']:.3f} | {row['same']:.3f} | {row['one_changed']:.3f} | "
                     f"{row['uncached']:.3f} | {same:.2f}x | {changed:.2f}x | {row['hits']} | {row['identical']} |")
        print(f"ratio {triangles}: cached candidate / uncached = {same:.2f}x (one mesh changed: {changed:.2f}x)",
              flush=True)
    if not (args.quick or args.no_record):
        day = datetime.now(timezone.utc).strftime("%Y-%m-%d")
        RESULTS.mkdir(exist_ok=True)
        path = RESULTS / f"content-cache-{day}.md"
        path.write_text(f"# The content cache's cost curve, {day}\n\n`python -m bench.bench_content_cache`; "
                        + "\n".join(lines) + "\n\nreference: the reference's snapshot (nothing cached); same: an "
                        "identical candidate read after it; one changed: one body's mesh 1% larger; uncached: the "
                        "identical candidate with the cache emptied. Seconds of wall time in one child process.\n")
        print(f"wrote {path.relative_to(REPO)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
