"""Pictures for `usdgrade explain --html`: reference and candidate from the same camera,
with a failing check's parts highlighted.

The drawing is the visual grade's deterministic rasterizer (visual/render.py and raster.py: cameras,
z-buffer, PNG encoding); only the scene differs. It is built from the grade's own
snapshots (every visible component's world surface), coloured for diagnosis instead of
by material: context parts neutral grey, the check's parts in one strong colour, a
joint's other body in a second one and the joint's anchor as a small marker. Candidate
parts are found through the correspondence (structure, pose and shape), never by path,
exactly as the check found them. Same bytes in, same pixels out.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from usd_repair_verifier.stage_snapshot.correspondence import correspond
from usd_repair_verifier.stage_snapshot.model import StageSnapshot
from usd_repair_verifier.stage_snapshot.read import read_snapshot
from usd_repair_verifier.stage_snapshot.variant_selections import applied_selections
from usd_repair_verifier.visual import render

CONTEXT = (0.50, 0.50, 0.52)      # linear grey: everything the check is not about
PRIMARY = (1.00, 0.18, 0.00)      # the check's target: the component, body or joint's child body
SECONDARY = (0.02, 0.22, 1.00)    # a joint's parent body
MARKER = (1.00, 0.00, 0.85)       # a joint's anchor (world position of its frame)
SIZE = 384
MARKER_FRACTION = 0.05            # the anchor's size, as a share of the asset's size


@dataclass(frozen=True)
class Highlight:
    primary: frozenset[str]       # component paths drawn in PRIMARY
    secondary: frozenset[str]     # component paths drawn in SECONDARY
    anchor: tuple[float, float, float] | None   # joint anchor, world metres (before Z-up)
    label: str                    # what the colours mean, for the caption


def _components_of(snapshot: StageSnapshot, body: str | None) -> frozenset[str]:
    if body is None:
        return frozenset()
    return frozenset(path for path, c in snapshot.components.items() if c.body == body)


def highlight_for(snapshot: StageSnapshot, target: str, role: str, match) -> Highlight:
    """The parts of `target` (a reference path) in the reference (role "reference") or in the
    candidate (role "candidate", through the correspondence `match`)."""
    to_candidate = role == "candidate"
    if target in match.joints:
        path = match.joints.get(target) if to_candidate else target
        joint = snapshot.joints.get(path) if path else None
        if joint is None:
            return Highlight(frozenset(), frozenset(), None, "the joint has no counterpart here")
        return Highlight(_components_of(snapshot, joint.body1), _components_of(snapshot, joint.body0),
                         tuple(joint.frame1.position), "joint: child body orange, parent body blue, anchor magenta")
    if target in match.bodies:
        body = match.bodies.get(target) if to_candidate else target
        return Highlight(_components_of(snapshot, body), frozenset(), None, "body: its visible parts orange")
    if target in match.components:
        part = match.components.get(target) if to_candidate else target
        return Highlight(frozenset([part]) if part else frozenset(), frozenset(), None, "component: orange")
    return Highlight(frozenset(), frozenset(), None, "the whole asset: nothing singled out")


def _marker(anchor, size: float) -> np.ndarray:
    """An octahedron around the anchor: 8 triangles."""
    c, r = np.asarray(anchor, dtype=np.float64), size * MARKER_FRACTION
    tips = [c + r * np.array(v, dtype=np.float64) for v in
            ((1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1))]
    faces = [(0, 2, 4), (2, 1, 4), (1, 3, 4), (3, 0, 4), (2, 0, 5), (1, 2, 5), (3, 1, 5), (0, 3, 5)]
    return np.array([[tips[a], tips[b], tips[d]] for a, b, d in faces])


def highlighted_scene(snapshot: StageSnapshot, highlight: Highlight) -> render.Scene:
    """Every visible component as triangles, coloured by the highlight (sorted paths: stable ids)."""
    tris, cols, ids = [], [], []
    for index, path in enumerate(sorted(snapshot.components)):
        component = snapshot.components[path]
        surface = component.surface
        if component.type == "Plane" or surface is None or len(surface.faces) == 0:
            continue  # as in the visual renders: an unbounded ground plane would swamp the framing
        t = np.asarray(surface.vertices, dtype=np.float64)[np.asarray(surface.faces)]
        t = t[np.isfinite(t).all(axis=(1, 2))]
        color = PRIMARY if path in highlight.primary else SECONDARY if path in highlight.secondary else CONTEXT
        tris.append(t)
        cols.append(np.broadcast_to(np.array(color), (len(t), 3)))
        ids.append(np.full(len(t), index, dtype=np.int64))
    if highlight.anchor is not None:
        t = _marker(highlight.anchor, snapshot.size)
        tris.append(t)
        cols.append(np.broadcast_to(np.array(MARKER), (len(t), 3)))
        ids.append(np.full(len(t), len(snapshot.components), dtype=np.int64))
    if not tris:
        return render.Scene(np.zeros((0, 3, 3)), np.zeros((0, 3)), np.zeros(0, dtype=np.int64), 0)
    triangles = np.concatenate(tris)
    if snapshot.up_axis == "Y":  # the renderer's cameras are Z-up: (x, y, z) -> (x, -z, y)
        triangles = np.stack([triangles[..., 0], -triangles[..., 2], triangles[..., 1]], axis=-1)
    return render.Scene(np.ascontiguousarray(triangles), np.ascontiguousarray(np.concatenate(cols)),
                        np.concatenate(ids), len(tris))


class Pictures:
    """Both snapshots and their correspondence, read once; one picture pair per check."""

    def __init__(self, reference: Path, candidate: Path, sampling: dict, correspondence: dict,
                 variant_selections: dict | None = None):
        applied = applied_selections(render.root_layer(reference), variant_selections or {})   # as the grade reads them
        self.reference = read_snapshot(render.root_layer(reference), sampling, variant_selections=applied)
        self.candidate = read_snapshot(render.root_layer(candidate), sampling, variant_selections=applied)
        self.match = correspond(self.reference, self.candidate,
                                correspondence.get("max_body_cost", 1.25), correspondence.get("max_joint_cost", 1.25))

    def scenes(self, target: str) -> dict[str, tuple[render.Scene, Highlight]]:
        out = {}
        for role, snapshot in (("reference", self.reference), ("candidate", self.candidate)):
            highlight = highlight_for(snapshot, target, role, self.match)
            out[role] = (highlighted_scene(snapshot, highlight), highlight)
        return out

    def draw(self, target: str, views: int = 2, size: int = SIZE) -> dict[str, dict[str, bytes]]:
        """{view: {role: PNG bytes}} for the check's target, both roles framed on the same bounds,
        in the `views` views that show most of the reference's highlighted parts."""
        scenes = self.scenes(target)
        bounds = render.union_bounds(*(scene for scene, _ in scenes.values()))
        images = {view: {role: render.rasterize(scene, render.camera(view, bounds, size))
                         for role, (scene, _) in scenes.items()} for view in render.VIEWS}
        order = list(render.VIEWS)
        best = sorted(order, key=lambda v: (-int(primary_mask(images[v]["reference"]).sum()), order.index(v)))[:views]
        return {view: {role: render.encode_png(image) for role, image in images[view].items()}
                for view in sorted(best, key=order.index)}

    def label(self, target: str) -> str:
        return highlight_for(self.reference, target, "reference", self.match).label


def primary_mask(image: np.ndarray) -> np.ndarray:
    """Pixels drawn in the PRIMARY colour at any shading (orange: strong red, some green, no blue)."""
    r, g, b = (image[..., i].astype(np.int64) for i in range(3))
    return (r >= 100) & (b <= 40) & (g * 10 <= r * 6)
