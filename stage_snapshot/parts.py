"""The parts of a stage the body families measure: visible components, colliders,
mass properties and each body's free space, all in world space and SI units.

Sampling is seeded from the profile. A component's seed also depends on its
content (triangle count and area), not on its path, and its samples are drawn over
its triangles in canonical order (surface_sampling.py): the same triangles, in any
order and under any namespace, give identical samples and the same digest.
"""
from __future__ import annotations

import dataclasses
import hashlib
import time
import zlib

import numpy as np
from pxr import Usd, UsdGeom, UsdPhysics, UsdUtils

from . import colliders as collider_solids
from . import geometry, mass, materials, typed_read
from .surface_fit import Surface
from .surface_sampling import canonical_soup, sample_surface
from .collider_model import ColliderModels, mesh_approximation
from .content_cache import CACHE
from .model import Collider, VisualComponent

VISIBLE_PURPOSES = (UsdGeom.Tokens.default_, UsdGeom.Tokens.render)
DEFAULT_SURFACE_SAMPLES = 1024
DEFAULT_FREE_SPACE_SAMPLES = 512


def owner_body(path: str, body_paths: set[str]) -> str | None:
    """The rigid body a prim belongs to: itself or its nearest ancestor body."""
    parts = path.split("/")
    for end in range(len(parts), 1, -1):
        candidate = "/".join(parts[:end])
        if candidate in body_paths:
            return candidate
    return None


def content_seed(seed: int, soup: geometry.TriangleSoup) -> int:
    key = f"{len(soup.faces)}:{soup.area:.6g}".encode()
    return (int(seed) * 1_000_003 + zlib.crc32(key)) % (2**32)


def visible_surface(soup: geometry.TriangleSoup | None, surface_samples: int, seed: int) -> Surface | None:
    """A visible part's world triangles as a canonical Surface with its seeded samples; None for a
    part with no area (scaled to nothing, it renders nothing). The same triangles (the same bytes:
    a healthy part of a candidate, a mesh met in an earlier grade) get the Surface computed before."""
    if soup is None or len(soup.faces) == 0:
        return None
    return CACHE.get_or_compute("visible_surface", (soup.vertices, soup.faces, int(surface_samples), int(seed)),
                                lambda: _visible_surface(soup, surface_samples, seed))


def _visible_surface(soup: geometry.TriangleSoup, surface_samples: int, seed: int) -> Surface | None:
    # canonical: the same triangles in any order give the same samples and digest
    canonical = canonical_soup(soup)
    if not geometry.has_surface(canonical):
        return None
    return Surface.of(canonical, sample_surface(canonical, surface_samples, content_seed(seed, canonical)))


_SIZE_ATTRIBUTES = ("size", "radius", "height", "radiusTop", "radiusBottom", "width", "length", "axis")


def _collider_digest(prim: Usd.Prim, world, mpu: float, models: ColliderModels) -> str:
    """What the collider's solid is built from: its type, world matrix and metres per unit, and its
    sizes (a primitive) or its model's approximation, form and points (a mesh). Equal digests make
    equal solids: a healthy collider compares with the reference's without sampling."""
    digest = hashlib.sha256(f"{prim.GetTypeName()}:{mpu!r}:".encode())
    digest.update(np.ascontiguousarray(geometry.matrix_to_numpy(world)).tobytes())
    if prim.IsA(UsdGeom.Mesh):
        model = models.mesh(prim)
        if model is not None:
            digest.update(f"{model.approximation}:{model.form}:".encode())
            digest.update(np.ascontiguousarray(model.points, dtype=np.float64).tobytes())
            digest.update(np.ascontiguousarray(model.faces, dtype=np.int64).tobytes())
    else:
        for name in _SIZE_ATTRIBUTES:
            attr = prim.GetAttribute(name)
            if attr and attr.HasAuthoredValue():
                digest.update(f"{name}={attr.Get()!r};".encode())
    return digest.hexdigest()


def is_visible(prim: Usd.Prim) -> bool:
    """Rendered: not invisible (inherited visibility) and of default or render purpose."""
    imageable = UsdGeom.Imageable(prim)
    return (
        imageable.ComputeVisibility() != UsdGeom.Tokens.invisible
        and imageable.ComputePurpose() in VISIBLE_PURPOSES
    )


def read_parts(stage: Usd.Stage, body_paths: set[str], mpu: float, kgpu: float, sampling: dict,
               timings: dict | None = None):
    """Visible components (tessellated, sampled), colliders (solids) and mass properties.
    Colliders and mass properties share one store of mesh collider models (one hull per mesh).
    `timings`, when given, gets the seconds spent on each of the three."""
    clock = {"visible_parts": 0.0, "colliders": 0.0}
    seed = int(sampling.get("seed", 0))
    surface_samples = int(sampling.get("surface_samples", DEFAULT_SURFACE_SAMPLES))
    xforms = UsdGeom.XformCache(Usd.TimeCode.Default())
    components, colliders = {}, {}
    models = ColliderModels()
    for prim in Usd.PrimRange.Stage(stage, Usd.TraverseInstanceProxies()):
        if not prim.IsA(UsdGeom.Gprim):
            continue
        path = str(prim.GetPath())
        body = owner_body(path, body_paths)
        world = xforms.GetLocalToWorldTransform(prim)
        start = time.perf_counter()
        if is_visible(prim):
            surface = visible_surface(geometry.prim_triangles(prim, world, mpu), surface_samples, seed)
            if surface is not None:
                components[path] = VisualComponent(
                    path=path,
                    name=prim.GetName(),
                    body=body,
                    type=str(prim.GetTypeName()),
                    triangle_count=int(len(surface.faces)),
                    area=surface.area,
                    centroid=tuple(float(c) for c in surface.centroid),
                    samples=surface.samples,
                    material=materials.visual_material(prim) or materials.display_surface(prim),
                    surface=surface,
                )
        lap = time.perf_counter()
        clock["visible_parts"] += lap - start
        if prim.HasAPI(UsdPhysics.CollisionAPI):
            enabled = typed_read.value(UsdPhysics.CollisionAPI(prim).GetCollisionEnabledAttr(), "bool")
            solid = collider_solids.collider_solid(prim, world, mpu, models=models)
            bounds = solid.bounds if solid is not None else None
            centroid = (0.0, 0.0, 0.0)
            if bounds is not None and np.isfinite(bounds).all():
                centroid = tuple(float(c) for c in (bounds[0] + bounds[1]) / 2)
            colliders[path] = Collider(
                digest=_collider_digest(prim, world, mpu, models) if solid is not None else "",
                path=path,
                name=prim.GetName(),
                body=body,
                enabled=True if enabled is None else bool(enabled),
                shape=str(prim.GetTypeName()),
                approximation=mesh_approximation(prim) if prim.IsA(UsdGeom.Mesh) else None,
                volume=float(solid.volume) if solid is not None else 0.0,
                centroid=centroid,
                solid=solid,
                material=materials.physics_material(prim, mpu, kgpu),
            )
        clock["colliders"] += time.perf_counter() - lap
    start = time.perf_counter()
    # UsdPhysics warns on stderr, once per body, where it falls back to a small sphere's inertia
    # (a massive body without colliders: converted sensor links); the mass properties say what
    # they are built from, so the warnings are collected here and dropped, not printed into a grade.
    quiet = UsdUtils.CoalescingDiagnosticDelegate()
    masses = mass.stage_mass_properties(stage, sorted(body_paths), models) if body_paths else {}
    quiet.TakeUncoalescedDiagnostics()
    del quiet
    clock["mass"] = time.perf_counter() - start
    if timings is not None:
        timings.update({name: round(seconds, 6) for name, seconds in clock.items()})
    return components, colliders, masses


def free_space(snapshot, body: str) -> np.ndarray:
    """The body's free-space samples: the ones the snapshot carries (``with_free_space``), else
    computed now. Only the reference's are ever needed, so a candidate never pays for them."""
    found = snapshot.free_space.get(body)
    return found if found is not None else free_space_samples(snapshot, body)


def free_space_samples(snapshot, body: str) -> np.ndarray:
    """The body's free-space samples, from its colliders and the snapshot's sampling settings."""
    seed = int(snapshot.sampling.get("seed", 0))
    count = int(snapshot.sampling.get("free_space_samples", DEFAULT_FREE_SPACE_SAMPLES))
    own = _own_solid_colliders(snapshot.colliders, body)
    return _by_collider_digests("free_space", [(c.digest, c.shape) for c in own], count, seed,
                                lambda: _free_space(body, snapshot.colliders, count, seed))


def _own_solid_colliders(colliders: dict, body: str) -> list:
    return [c for c in colliders.values() if c.body == body and c.enabled and c.solid is not None]


def _by_collider_digests(kind: str, digests: list, count: int, seed: int, compute):
    """Samples that are a function of the body's collider solids (each named by its digest: what
    it is built from, parts._collider_digest) and the sampling settings, from the content cache:
    a session's checks ask for the same body's again, and a process reads the same reference
    many times. A collider without a digest is computed every time."""
    if any(not digest for digest, *_ in digests):
        return compute()
    return CACHE.get_or_compute(kind, (tuple(digests), count, seed), compute, min_bytes=0)


def with_free_space(snapshot):
    """The snapshot with every collider-owning body's free-space and solid samples computed ahead:
    a reference kept for many grades (scoring/reference_cache.py) pays for them once."""
    bodies = sorted({c.body for c in snapshot.colliders.values() if c.body})
    return dataclasses.replace(snapshot, free_space={body: free_space_samples(snapshot, body) for body in bodies},
                               solid_samples={body: body_solid_samples(snapshot, body) for body in bodies})


def same_solids(reference, candidate, ref_body: str | None, cand_body: str | None) -> bool:
    """Do the two bodies' enabled colliders build the same solids (equal digests, in any order)?"""
    if ref_body is None or cand_body is None:
        return False
    ref = sorted(c.digest for c in _own_solid_colliders(reference.colliders, ref_body))
    cand = sorted(c.digest for c in _own_solid_colliders(candidate.colliders, cand_body))
    return bool(ref) and "" not in ref and ref == cand


def reference_coverage(snapshot, body: str, margin: float) -> float:
    """Share of the body's visible surface samples inside its own enabled colliders, computed once
    per snapshot and margin (a reference kept for many grades pays for it once)."""
    key = ("coverage", body, float(margin))
    if key not in snapshot.memo:
        surface = [c.samples for c in snapshot.body_components(body) if len(c.samples)]
        points = np.concatenate(surface) if surface else np.zeros((0, 3))
        snapshot.memo[key] = collider_solids.coverage(points, enabled_solids(snapshot, body), margin)
    return snapshot.memo[key]


def enabled_solids(snapshot, body: str | None) -> list:
    """The solids of a body's enabled colliders (none for the world)."""
    if body is None:
        return []
    return [c.solid for c in _own_solid_colliders(snapshot.colliders, body)]


def solid_samples(snapshot, body: str):
    """(points, weights) inside the body's enabled colliders: the ones the snapshot carries, else
    computed now (collider volume in the collision family: a candidate's are computed per grade)."""
    found = snapshot.solid_samples.get(body)
    return found if found is not None else body_solid_samples(snapshot, body)


def body_solid_samples(snapshot, body: str):
    seed = int(snapshot.sampling.get("seed", 0))
    count = int(snapshot.sampling.get("free_space_samples", DEFAULT_FREE_SPACE_SAMPLES))
    # volume_samples seeds each solid from its content, not its place: the digests in any order
    own = _own_solid_colliders(snapshot.colliders, body) if body is not None else []
    return _by_collider_digests("solid_samples", sorted((c.digest,) for c in own), count, seed,
                                lambda: collider_solids.volume_samples([c.solid for c in own], count, seed))


def _free_space(body: str, colliders: dict, count: int, seed: int) -> np.ndarray:
    """Samples of the empty space the body's enabled colliders leave inside their own bounds.

    Sampled collider by collider (each collider's bounding box, minus every
    collider of the body): a hull or box over a handle's opening, a knob's
    recesses or a gripper's gap fills exactly these regions, however small they
    are next to the whole body.
    """
    own = _own_solid_colliders(colliders, body)
    solids = [c.solid for c in own]
    regions = []
    for index, collider in enumerate(own):
        low, high = collider.solid.bounds
        if not (np.isfinite(low).all() and np.isfinite(high).all()) or np.any(high - low <= 0):
            continue
        region_seed = (int(seed) * 7_919 + index * 104_729 + zlib.crc32(collider.shape.encode())) % (2**32)
        regions.append(collider_solids.empty_space_samples(low, high, solids, count, region_seed))
    regions = [r for r in regions if len(r)]
    return np.concatenate(regions) if regions else np.zeros((0, 3))
