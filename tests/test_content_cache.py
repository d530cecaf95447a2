"""The content cache (stage_snapshot/content_cache.py): a mesh met again is not computed again, and
nothing it serves differs from a fresh computation."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from bench.generate import generate
from usd_repair_verifier.stage_snapshot import content_cache
from usd_repair_verifier.stage_snapshot.content_cache import CACHE, MIN_INPUT_BYTES, ContentCache
from usd_repair_verifier.stage_snapshot.mesh_math import convex_hull, triangles_mass
from usd_repair_verifier.stage_snapshot.read import read_snapshot

SAMPLING = {"seed": 7, "surface_samples": 256, "free_space_samples": 64}


def _points(n: int, seed: int = 0) -> np.ndarray:
    return np.random.Generator(np.random.PCG64(seed)).normal(size=(n, 3))


def test_the_same_bytes_are_computed_once_and_every_hit_is_a_fresh_copy():
    cache = ContentCache()
    calls = []
    big = _points(2000)

    def compute():
        calls.append(1)
        return {"sum": big.sum(axis=0), "n": len(big)}

    first = cache.get_or_compute("kind", (big,), compute)
    second = cache.get_or_compute("kind", (big.copy(),), compute)   # equal bytes, another array
    assert len(calls) == 1 and cache.stats()["hits"] == 1
    assert np.array_equal(first["sum"], second["sum"]) and second["sum"] is not first["sum"]
    second["sum"][:] = 0.0                                          # a caller's change stays its own
    assert np.array_equal(cache.get_or_compute("kind", (big,), compute)["sum"], first["sum"])


def test_any_other_input_is_another_entry():
    cache = ContentCache()
    big = _points(2000)
    values = [cache.get_or_compute(kind, inputs, lambda i=i: i) for i, (kind, inputs) in enumerate([
        ("kind", (big,)),
        ("other kind", (big,)),
        ("kind", (big + 1e-12,)),                   # one bit of the coordinates
        ("kind", (big.astype(np.float32),)),        # the same numbers in another dtype
        ("kind", (big.reshape(-1, 2),)),            # the same bytes in another shape
        ("kind", (big, 256)),                       # another parameter
        ("kind", (big, 512)),
    ])]
    assert values == list(range(7)) and cache.stats()["hits"] == 0 and cache.stats()["entries"] == 7


def test_small_inputs_are_computed_every_time_and_the_bound_drops_the_oldest():
    cache = ContentCache(max_bytes=3 * (2000 * 24 + 200))
    small = _points(10)
    calls = []
    for _ in range(3):
        cache.get_or_compute("kind", (small,), lambda: calls.append(1))
    assert len(calls) == 3 and cache.stats()["entries"] == 0 and small.nbytes < MIN_INPUT_BYTES
    objects = np.empty(5000, dtype=object)      # its bytes are addresses, never a content key
    for _ in range(2):
        cache.get_or_compute("kind", (objects,), lambda: calls.append(1))
    assert len(calls) == 5 and cache.stats()["entries"] == 0
    arrays = [_points(2000, seed) for seed in range(5)]
    for a in arrays:
        cache.get_or_compute("kind", (a,), lambda a=a: a.copy())
    assert cache.size_bytes <= cache.max_bytes and cache.stats()["entries"] < 5
    misses = cache.misses
    cache.get_or_compute("kind", (arrays[-1],), lambda: None)       # the newest is kept
    cache.get_or_compute("kind", (arrays[0],), lambda: None)        # the oldest went first
    assert cache.hits == 1 and cache.misses == misses + 1


def test_hull_and_mass_integrals_from_the_cache_are_the_computed_ones():
    CACHE.clear()
    pts = _points(3000, seed=3)
    hull = convex_hull(pts)
    again = convex_hull(pts.copy())
    assert CACHE.hits == 1
    assert _plain((hull.points, hull.simplices, hull.equations, hull.volume)) == \
        _plain((again.points, again.simplices, again.equations, again.volume))
    tris = pts[:2997].reshape(-1, 3, 3)
    assert _plain(triangles_mass(tris)) == _plain(triangles_mass(tris.copy()))
    assert CACHE.hits == 2


def _plain(value):
    """Arrays as (dtype, shape, bytes): a value compared bit for bit, whatever objects it shares."""
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    return value


def _parts(snapshot) -> tuple:
    """Everything the snapshot read from the meshes, in a comparable form."""
    return _plain(([(c.path, c.surface.vertices, c.surface.faces, c.samples, c.surface.digest, c.area)
                    for c in snapshot.components.values()],
                   [(c.path, c.digest, c.volume, c.centroid) for c in snapshot.colliders.values()],
                   sorted((k, repr(v)) for k, v in snapshot.mass.items())))


@pytest.fixture(scope="module")
def mesh_package(tmp_path_factory) -> Path:
    """Three bodies with 4,000-triangle meshes (each its own visible part and convex-hull collider)."""
    return generate(tmp_path_factory.mktemp("content") / "robot", 3, 12_000)


def test_a_candidate_with_the_references_meshes_is_served_from_the_cache(mesh_package, tmp_path):
    """The reference read first, then a copy of it as the candidate (the usual healthy repair):
    every hull, mass integral and visible surface of the candidate is a hit, and the candidate's
    snapshot is the one a process with an empty cache reads, byte for byte."""
    candidate = tmp_path / "candidate"
    shutil.copytree(mesh_package.parent, candidate)
    CACHE.clear()
    fresh = _parts(read_snapshot(candidate / mesh_package.name, SAMPLING))
    CACHE.clear()
    read_snapshot(mesh_package, SAMPLING)
    after_reference = CACHE.stats()
    served = _parts(read_snapshot(candidate / mesh_package.name, SAMPLING))
    stats = CACHE.stats()
    assert served == fresh
    assert after_reference["misses"] > 0 and stats["misses"] == after_reference["misses"]   # nothing computed again
    assert stats["hits"] - after_reference["hits"] >= 3 * 3       # a surface, a hull, a mass per body at least


def test_other_sampling_settings_are_not_served_the_earlier_samples(mesh_package):
    CACHE.clear()
    one = read_snapshot(mesh_package, SAMPLING)
    other = read_snapshot(mesh_package, {**SAMPLING, "seed": 8})
    for a, b in zip(one.components.values(), other.components.values()):
        assert not np.array_equal(a.samples, b.samples)
    assert content_cache.CACHE is CACHE


def test_a_rigid_fit_met_again_is_the_fit_computed_before():
    """The same pair of surfaces with the same samples (a part the submissions of a case leave as
    the input had it) is fitted once; other samples of the same surfaces are fitted again."""
    from tests import mesh_assets
    from usd_repair_verifier.stage_snapshot.geometry import TriangleSoup
    from usd_repair_verifier.stage_snapshot.parts import visible_surface
    from usd_repair_verifier.stage_snapshot.surface_fit import rigid_fit

    pts, faces = mesh_assets.ellipsoid()
    pts, faces = np.asarray(pts, dtype=np.float64), np.asarray(faces, dtype=np.int64)
    angle = np.radians(30.0)
    turn = np.array([[np.cos(angle), -np.sin(angle), 0.0], [np.sin(angle), np.cos(angle), 0.0], [0.0, 0.0, 1.0]])
    ref = visible_surface(TriangleSoup(pts, faces), 256, 1)
    cand = visible_surface(TriangleSoup(pts @ turn.T + [0.1, 0.0, 0.0], faces), 256, 1)
    CACHE.clear()
    first = rigid_fit(ref, cand)
    again = rigid_fit(ref, cand)
    assert CACHE.hits == 1 and first["how"] == "rigid fit"
    assert _plain(sorted(first.items())) == _plain(sorted(again.items()))
    resampled = visible_surface(TriangleSoup(pts @ turn.T + [0.1, 0.0, 0.0], faces), 256, 2)
    rigid_fit(ref, resampled)
    # Misses: the first fit and the two surfaces' indexes, the resampled surface, its fit. Hits: the
    # fit again, and the resampled surface's index (its triangles are the candidate's).
    assert CACHE.hits == 2 and CACHE.misses == 5


def test_a_surface_read_again_gets_the_nearest_point_index_built_before():
    """A surface is a fresh copy every time a snapshot reads it: its index comes from the cache by
    its triangles' bytes and answers as one built now; other triangles get another index."""
    from tests import mesh_assets
    from usd_repair_verifier.stage_snapshot.geometry import TriangleSoup
    from usd_repair_verifier.stage_snapshot.parts import visible_surface
    from usd_repair_verifier.stage_snapshot.surface_index import SurfaceIndex

    pts, faces = mesh_assets.ellipsoid()
    pts, faces = np.asarray(pts, dtype=np.float64), np.asarray(faces, dtype=np.int64)
    CACHE.clear()
    first, again = (visible_surface(TriangleSoup(pts, faces), 256, 1) for _ in range(2))
    first.index
    hits = CACHE.hits
    assert first is not again and again.index is not first.index and CACHE.hits == hits + 1
    hits = CACHE.hits
    queries = np.random.default_rng(3).uniform(-1.5, 1.5, (500, 3))
    fresh = SurfaceIndex(first.vertices[first.faces])
    for exact_within in (0.0, 0.005, 10.0):
        for built, cached in zip(fresh.closest(queries, exact_within), again.index.closest(queries, exact_within)):
            assert np.array_equal(built, cached)
    assert [np.array_equal(a, b) for a, b in zip(fresh.within(queries, 0.01), again.index.within(queries, 0.01))] == [True, True]
    assert CACHE.hits == hits
    other = visible_surface(TriangleSoup(pts * 1.01, faces), 256, 1)
    misses = CACHE.misses
    other.index
    assert CACHE.misses == misses + 1


def test_free_space_and_solid_samples_are_keyed_by_the_bodys_collider_solids():
    """A body's free-space and solid samples are computed once for its colliders' digests and the
    sampling settings: met again (another check, another read of the same reference) they are the
    computed values; another collider, another sample count or seed is computed anew."""
    import dataclasses

    from usd_repair_verifier.profiles.case import load_case
    from usd_repair_verifier.stage_snapshot import colliders as solids
    from usd_repair_verifier.stage_snapshot.parts import _free_space, body_solid_samples, free_space_samples

    case = load_case(Path(__file__).resolve().parent.parent / "fixtures" / "cases" / "cabinet_drawer_door")
    snapshot = read_snapshot(case.reference_root_layer, case.profile.sampling, case.profile.preserved_namespaces)
    body = next(b for b in sorted({c.body for c in snapshot.colliders.values() if c.body})
                if len(free_space_samples(snapshot, b)))
    seed = int(snapshot.sampling.get("seed", 0))
    count = int(snapshot.sampling["free_space_samples"])
    own = [c for c in snapshot.colliders.values() if c.body == body and c.enabled and c.solid is not None]
    CACHE.clear()
    first, again = free_space_samples(snapshot, body), free_space_samples(snapshot, body)
    assert (CACHE.misses, CACHE.hits) == (1, 1) and first is not again
    assert np.array_equal(first, again) and np.array_equal(first, _free_space(body, snapshot.colliders, count, seed))
    held, held_again = body_solid_samples(snapshot, body), body_solid_samples(snapshot, body)
    assert all(np.array_equal(a, b) for a, b in zip(held, held_again)) and CACHE.hits == 2
    assert all(np.array_equal(a, b) for a, b in
               zip(held, solids.volume_samples([c.solid for c in own], count, seed)))
    # another collider (its digest is what its solid is built from): computed anew
    changed = dataclasses.replace(snapshot, colliders={
        k: (dataclasses.replace(c, digest=c.digest + "-other") if c is own[0] else c)
        for k, c in snapshot.colliders.items()})
    misses = CACHE.misses
    free_space_samples(changed, body)
    assert CACHE.misses == misses + 1
    other = dataclasses.replace(snapshot, sampling={**snapshot.sampling, "seed": seed + 1})
    assert not np.array_equal(free_space_samples(other, body), first) and CACHE.misses == misses + 2
    # a collider with no digest is never served from the cache
    undigested = dataclasses.replace(snapshot, colliders={k: dataclasses.replace(c, digest="")
                                                          for k, c in snapshot.colliders.items()})
    stats = CACHE.stats()
    assert np.array_equal(free_space_samples(undigested, body), first) and CACHE.stats() == stats
