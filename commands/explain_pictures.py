"""Pictures for `usdgrade explain --html`: reference and candidate from the same camera,
with a failing check's parts highlighted.

The drawing is the visual grade's deterministic rasterizer (visual/render.py and raster.py: cameras,
z-buffer, PNG encoding); only the scene differs. It is built from the grade's own
snapshots (every visible component's world surface), coloured for diagnosis instead of
by material: context parts neutral grey, the check's parts in one strong colour, a
joint's other body in a second one and the joint's frame as a small marker (one from each body's side). Candidate
parts are found through the correspondence (structure, pose and shape), never by path,
exactly as the check found them. Same bytes in, same pixels out.

The views are oriented on the asset as the visual grade orients them (visual/render.py
`asset_views`, from the reference: its front is the side from which the most parts are visible),
so a picture captioned "rear three-quarter" shows the asset's back, whichever way its file's axes
point. A check whose reference and candidate look the same from every view (a joint's limits, a
mass, a body's state) gets one picture of the part concerned, said to be that, or none when the
check names no part: a pair of identical pictures would suggest a difference to look for.
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
MARKER = (1.00, 0.00, 0.85)       # a joint's anchors (world positions of its frame, seen from each body)
SIZE = 384
MARKER_FRACTION = 0.05            # the anchor's size, as a share of the asset's size
# What each view shows, as a caption says it (the camera's place around the asset's front).
VIEW_LABELS = {"front": "front", "side": "right side", "top": "top (front down)",
               "three_quarter": "front three-quarter, from above right",
               "three_quarter_rear": "rear three-quarter, from above left"}


@dataclass(frozen=True)
class Highlight:
    primary: frozenset[str]       # component paths drawn in PRIMARY
    secondary: frozenset[str]     # component paths drawn in SECONDARY
    anchors: tuple[tuple[float, float, float], ...]   # a joint's frame from each body's side, world metres
                                                      # (before Z-up): one marker when they agree, two when not
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
            return Highlight(frozenset(), frozenset(), (), "the joint has no counterpart here")
        # the two sides of a healthy joint agree (to float noise): one marker
        anchors = tuple({tuple(round(float(x), 6) for x in frame.position): tuple(map(float, frame.position))
                         for frame in (joint.frame0, joint.frame1)}.values())
        return Highlight(_components_of(snapshot, joint.body1), _components_of(snapshot, joint.body0), anchors,
                         "joint: child body orange, parent body blue, its frame magenta (seen from each body)")
    if target in match.bodies:
        body = match.bodies.get(target) if to_candidate else target
        return Highlight(_components_of(snapshot, body), frozenset(), (), "body: its visible parts orange")
    if target in match.components:
        part = match.components.get(target) if to_candidate else target
        return Highlight(frozenset([part]) if part else frozenset(), frozenset(), (), "component: orange")
    return Highlight(frozenset(), frozenset(), (), "the whole asset: nothing singled out")


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
    for number, anchor in enumerate(highlight.anchors):
        t = _marker(anchor, snapshot.size)
        tris.append(t)
        cols.append(np.broadcast_to(np.array(MARKER), (len(t), 3)))
        ids.append(np.full(len(t), len(snapshot.components) + number, dtype=np.int64))
    if not tris:
        return render.Scene(np.zeros((0, 3, 3)), np.zeros((0, 3)), np.zeros(0, dtype=np.int64), 0)
    triangles = np.concatenate(tris)
    if snapshot.up_axis == "Y":  # the renderer's cameras are Z-up: (x, y, z) -> (x, -z, y)
        triangles = np.stack([triangles[..., 0], -triangles[..., 2], triangles[..., 1]], axis=-1)
    return render.Scene(np.ascontiguousarray(triangles), np.ascontiguousarray(np.concatenate(cols)),
                        np.concatenate(ids), len(tris))


@dataclass(frozen=True)
class Drawn:
    """A check's pictures: {view: {role: PNG bytes}}, and whether any view shows a difference
    between reference and candidate (when none does, only the reference's is kept)."""
    views: dict[str, dict[str, bytes]]
    differs: bool


class Pictures:
    """Both snapshots and their correspondence, read once; one picture pair per check."""

    def __init__(self, reference: Path, candidate: Path, sampling: dict, correspondence: dict,
                 variant_selections: dict | None = None):
        applied = applied_selections(render.root_layer(reference), variant_selections or {})   # as the grade reads them
        self.reference = read_snapshot(render.root_layer(reference), sampling, variant_selections=applied)
        self.candidate = read_snapshot(render.root_layer(candidate), sampling, variant_selections=applied)
        self.match = correspond(self.reference, self.candidate,
                                correspondence.get("max_body_cost", 1.25), correspondence.get("max_joint_cost", 1.25))
        # the asset's own views, from the reference with nothing highlighted: the same for every check
        plain = highlighted_scene(self.reference, Highlight(frozenset(), frozenset(), (), ""))
        self.directions = render.asset_views(plain, render.union_bounds(plain)) if len(plain.triangles) else render.VIEWS

    def scenes(self, target: str) -> dict[str, tuple[render.Scene, Highlight]]:
        out = {}
        for role, snapshot in (("reference", self.reference), ("candidate", self.candidate)):
            highlight = highlight_for(snapshot, target, role, self.match)
            out[role] = (highlighted_scene(snapshot, highlight), highlight)
        return out

    def draw(self, target: str, views: int = 2, size: int = SIZE) -> Drawn:
        """The check's target in the `views` views that show most of the reference's highlighted
        parts, both roles framed on the same bounds; the candidate's only when some view differs."""
        scenes = self.scenes(target)
        bounds = render.union_bounds(*(scene for scene, _ in scenes.values()))
        images = {view: {role: render.rasterize(scene, render.camera(view, bounds, size, self.directions))
                         for role, (scene, _) in scenes.items()} for view in render.VIEWS}
        differs = self._part_differs(scenes, bounds, size)
        order = list(render.VIEWS)
        best = sorted(order, key=lambda v: (-int(primary_mask(images[v]["reference"]).sum()), order.index(v)))[:views]
        roles = ("reference", "candidate") if differs else ("reference",)
        return Drawn({view: {role: render.encode_png(images[view][role]) for role in roles}
                      for view in sorted(best, key=order.index)}, differs)

    def _part_differs(self, scenes: dict, bounds, size: int) -> bool:
        """Whether the part concerned looks different in some view: the highlighted triangles alone
        (a moved handle elsewhere in the picture is another check's difference), or the whole asset
        when the check singles nothing out."""
        drawn = {}
        for role, (scene, highlight) in scenes.items():
            if highlight.primary or highlight.secondary or highlight.anchors:
                keep = ~np.all(scene.colors == np.array(CONTEXT), axis=1)
                scene = render.Scene(scene.triangles[keep], scene.colors[keep], scene.part_ids[keep], scene.gprims)
            drawn[role] = scene
        return any(not np.array_equal(render.rasterize(drawn["reference"], cam), render.rasterize(drawn["candidate"], cam))
                   for cam in (render.camera(view, bounds, size, self.directions) for view in render.VIEWS))

    def singled_out(self, target: str) -> bool:
        """The check names parts of the asset (a joint's bodies, a body, a component) to highlight."""
        highlight = highlight_for(self.reference, target, "reference", self.match)
        return bool(highlight.primary or highlight.secondary or highlight.anchors)

    def label(self, target: str) -> str:
        return highlight_for(self.reference, target, "reference", self.match).label


def primary_mask(image: np.ndarray) -> np.ndarray:
    """Pixels drawn in the PRIMARY colour at any shading (orange: strong red, some green, no blue)."""
    r, g, b = (image[..., i].astype(np.int64) for i in range(3))
    return (r >= 100) & (b <= 40) & (g * 10 <= r * 6)
