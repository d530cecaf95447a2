"""How long the snapshot's heaviest measures take on synthetic inputs (timings only, no thresholds).

    python -m bench.bench_measures

containment  10k points against 100 collider solids (primitives, closed meshes and their hulls):
             inside_any, with a 1 cm margin, and every solid separately
sampling     sample_surface on 60 bodies of 5,000 triangles (300k triangles, 2,000 samples each)
mass         stage_mass_properties of 60 bodies, each a 5,120-triangle convexHull collider
trajectory   the closed-book reader's decoded-size bound of a 100 MiB ASCII trajectory and of a
             32 MiB one with a character past U+FFFF, against one alternation of its patterns
fit          the rigid fit of a 2,304-triangle capsule against the same capsule 5% longer and turned
             (every start, every ICP step), against the same with the nearest-point index's first
             pass sorting all of its pairs
ingest       `usdgrade records ingest` of the fixture Harbor job (27 trials and a grade folder) into
             a new SQLite store, against the same with the upsert's statements built for every row

The tests check what these compute on small inputs (tests/test_colliders.py, test_geometry.py,
test_mass.py); this prints how long the large ones take.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import math  # noqa: E402
import re  # noqa: E402

import numpy as np  # noqa: E402
import trimesh  # noqa: E402
from pxr import Gf, Usd, UsdGeom, UsdPhysics  # noqa: E402

from usd_repair_verifier.stage_snapshot.colliders import collider_solid, inside_any, mesh_solid  # noqa: E402
from usd_repair_verifier.stage_snapshot.geometry import TriangleSoup, prim_triangles  # noqa: E402
from usd_repair_verifier.stage_snapshot.surface_sampling import sample_surface  # noqa: E402
from usd_repair_verifier.stage_snapshot.mass import stage_mass_properties  # noqa: E402
from usd_repair_verifier.closed_book.trajectory import decoded_bytes  # noqa: E402


def containment_solids(count: int, seed: int = 0) -> list:
    """Primitives of five kinds, posed at random; every fourth a tessellated sphere, as a closed
    mesh or as its hull alternately."""
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    rng = np.random.Generator(np.random.PCG64(seed))
    kinds = ["Cube", "Sphere", "Capsule", "Cylinder", "Cone"]
    solids = []
    for i in range(count):
        c = rng.uniform(-1, 1, 3)
        if i % 4 == 3:
            prim = UsdGeom.Sphere.Define(stage, f"/S{i}").GetPrim()
            prim.GetAttribute("radius").Set(0.1)
            soup = prim_triangles(prim, Gf.Matrix4d().SetTranslate(Gf.Vec3d(*c)), 1.0)
            solids.append(mesh_solid(soup, "none" if i % 8 == 3 else "convexHull"))
            continue
        prim = getattr(UsdGeom, kinds[i % 5]).Define(stage, f"/P{i}").GetPrim()
        xf = UsdGeom.Xformable(prim)
        xf.AddTranslateOp().Set(Gf.Vec3d(*c))
        xf.AddRotateXYZOp().Set(Gf.Vec3f(*rng.uniform(0, 90, 3)))
        xf.AddScaleOp().Set(Gf.Vec3f(*rng.uniform(0.05, 0.15, 3)))
        solids.append(collider_solid(prim, UsdGeom.XformCache().GetLocalToWorldTransform(prim), 1.0))
    return solids


def containment() -> str:
    solids = containment_solids(100)
    pts = np.random.Generator(np.random.PCG64(0)).uniform(-1.2, 1.2, (10_000, 3))
    t0 = time.perf_counter()
    hit = inside_any(pts, solids, margin=0.0)
    t1 = time.perf_counter()
    inside_any(pts, solids, margin=0.01)
    t2 = time.perf_counter()
    [s.contains(pts, 0.01) for s in solids]
    t3 = time.perf_counter()
    return (f"containment  10k points vs 100 solids: inside_any {1000 * (t1 - t0):.1f} ms, with 1 cm margin "
            f"{1000 * (t2 - t1):.1f} ms, every solid separately {1000 * (t3 - t2):.1f} ms (share inside {hit.mean():.3f})")


def sampling() -> str:
    rng = np.random.Generator(np.random.PCG64(0))
    soups = [TriangleSoup(rng.random((2600, 3)), rng.integers(0, 2600, size=(5000, 3)).astype(np.int64))
             for _ in range(60)]
    t0 = time.perf_counter()
    total = sum(len(sample_surface(s, 2000, seed=i)) for i, s in enumerate(soups))
    dt = time.perf_counter() - t0
    return f"sampling     sample_surface: 60 bodies, 300k triangles, {total} samples: {dt * 1000:.1f} ms"


def mass() -> str:
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    base = trimesh.creation.icosphere(subdivisions=4)  # 5120 triangles
    rng = np.random.default_rng(7)
    paths = []
    for i in range(60):
        vertices = base.vertices * rng.uniform(0.5, 1.5, 3)
        body = UsdGeom.Xform.Define(stage, f"/b{i}")
        UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
        body.AddTranslateOp().Set(Gf.Vec3d(i, 0, 0))
        mesh = UsdGeom.Mesh.Define(stage, f"/b{i}/m")
        mesh.CreatePointsAttr([Gf.Vec3f(*map(float, p)) for p in vertices])
        mesh.CreateFaceVertexCountsAttr([3] * len(base.faces))
        mesh.CreateFaceVertexIndicesAttr([int(k) for k in base.faces.reshape(-1)])
        UsdPhysics.CollisionAPI.Apply(mesh.GetPrim())
        UsdPhysics.MeshCollisionAPI.Apply(mesh.GetPrim()).CreateApproximationAttr("convexHull")
        paths.append(f"/b{i}")
    t0 = time.perf_counter()
    stage_mass_properties(stage, paths)
    dt = time.perf_counter() - t0
    return f"mass         60 bodies x 5120-triangle convexHull: {dt * 1e3:.0f} ms total, {dt / 60 * 1e3:.2f} ms/body"


def one_alternation_bound(raw: bytes) -> int:
    """The bound with each width's patterns in one alternation, as it was first written."""
    if re.search(rb"[\xf0-\xf4]|\\u[dD][89abAB]", raw):
        return 4 * len(raw)
    if re.search(rb"[\xc4-\xef]|\\u(?:0[1-9a-fA-F]|[1-9a-fA-F])", raw):
        return 2 * len(raw)
    return len(raw)


def trajectory() -> str:
    step = b'{"step_id":1,"observation":{"results":[{"content":"' + b"x" * (1 << 20) + b'"}]}},'
    documents = {"100 MiB ASCII": step * 100, "32 MiB, one emoji at the end": step * 32 + "\U0001F600".encode()}
    lines = []
    for name, raw in documents.items():
        t0 = time.perf_counter()
        ours = decoded_bytes(raw)
        t1 = time.perf_counter()
        theirs = one_alternation_bound(raw)
        t2 = time.perf_counter()
        assert ours == theirs
        lines.append(f"trajectory   decoded-size bound, {name}: {1000 * (t1 - t0):.0f} ms, one alternation "
                     f"{1000 * (t2 - t1):.0f} ms: ratio {(t1 - t0) / (t2 - t1):.3f}x")
    return "\n".join(lines)


def sorted_first_pass(index, pts, j, best_d, best_q, best_t) -> None:
    """SurfaceIndex's first pass as first written: every one of the n x k pairs sorted at once
    (``_evaluate``), where ``_nearest_of_rows`` chooses along each row."""
    n, k = j.shape
    index._evaluate(pts, np.repeat(np.arange(n), k), j.reshape(-1), best_d, best_q, best_t)


def fit() -> str:
    from usd_repair_verifier.stage_snapshot.content_cache import CACHE
    from usd_repair_verifier.stage_snapshot.surface_fit import Surface, rigid_fit
    from usd_repair_verifier.stage_snapshot.surface_index import SurfaceIndex
    from usd_repair_verifier.stage_snapshot.surface_sampling import canonical_soup

    def surface(mesh) -> Surface:
        soup = canonical_soup(TriangleSoup(np.asarray(mesh.vertices, dtype=np.float64), np.asarray(mesh.faces)))
        return Surface.of(soup, sample_surface(soup, 1024, 1))

    capsule = trimesh.creation.capsule(height=0.3, radius=0.04, count=[48, 24])
    longer = capsule.copy()
    longer.apply_scale([1.0, 1.0, 1.05])
    longer.apply_transform(trimesh.transformations.rotation_matrix(0.3, [1.0, 0.2, 0.0]))
    by_rows = SurfaceIndex._nearest_of_rows
    best, fits = {}, {}
    try:
        for _ in range(3):
            for name, first_pass in (("rows", by_rows), ("sort", sorted_first_pass)):
                SurfaceIndex._nearest_of_rows = first_pass
                CACHE.clear()
                ref, cand = surface(capsule), surface(longer)
                t0 = time.perf_counter()
                fits[name] = rigid_fit(ref, cand)
                best[name] = min(best.get(name, math.inf), time.perf_counter() - t0)
    finally:
        SurfaceIndex._nearest_of_rows = by_rows
    same = all(np.array_equal(fits["rows"][key], fits["sort"][key]) for key in ("rotation", "translation", "residual_m"))
    return (f"fit          capsule against a longer, turned one: {1000 * best['rows']:.0f} ms, first pass sorted "
            f"{1000 * best['sort']:.0f} ms: ratio {best['rows'] / best['sort']:.2f}x (best of 3; same fit: {same})")


def ingest_records() -> str:
    try:
        from usd_repair_verifier.records.ingest import ingest
        from usd_repair_verifier.records.store import Store
    except ImportError:
        return "ingest       unmeasured: the records extra (SQLAlchemy) is not installed"
    import tempfile

    class RowBuilt(Store):
        """The upsert as first written: its look-up and insert-or-update built anew for every row."""

        def _upsert_statements(self, *shape):
            self._statements.clear()
            return super()._upsert_statements(*shape)

    repo = Path(__file__).resolve().parent.parent
    folders = [repo / "fixtures" / "harbor_jobs" / "repair-bench-fixture", repo / "fixtures" / "harbor_jobs" / "plain_grades"]
    best = {}
    for _ in range(5):
        for kind in (Store, RowBuilt):
            with tempfile.TemporaryDirectory() as folder:
                store = kind(f"sqlite:///{folder}/records.sqlite")
                t0 = time.perf_counter()
                report = ingest(store, folders)
                best[kind] = min(best.get(kind, float("inf")), time.perf_counter() - t0)
                store.close()
    ours, theirs = best[Store], best[RowBuilt]
    return (f"ingest       {len(report.episodes)} episodes into a new SQLite store: {1000 * ours:.0f} ms, statements "
            f"built per row {1000 * theirs:.0f} ms: ratio {ours / theirs:.2f}x (best of 5)")


def main() -> int:
    for measure in (containment, sampling, mass, trajectory, fit, ingest_records):
        print(measure(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
