"""What the engine is given when a real asset holds something its MuJoCo solver refuses.

Applied to the imported model (Newton's ModelBuilder) before it is finalized, by the same rules on
the reference and on the candidate, and each one recorded (physical.json `corrections`, per side):

- `planar_mesh_thickened`: MuJoCo's contact generation (the CPU solver has no other) refuses a
  collider whose vertices lie in one plane. The stand-in is the same mesh made into a slab: every
  vertex offset both ways along the plane's normal by half of max(1 mm, 0.1 % of the mesh's extent),
  so the collider keeps its outline and MuJoCo's convex hull of it is a thin solid. Never dropped.
- `mass_from_colliders`: a moving rigid assembly (bodies welded to one another by fixed joints, not
  to the world) with no mass at all. UsdPhysics gives a body with no authored mass or density the
  mass of its colliders' volume at the default density, 1000 kg/m^3; applied per body of the
  assembly from the colliders the engine built on it (their volume, centre and inertia).
- `mass_stand_in`: such an assembly with no collider at all (the dummy link a converter puts
  between two joints of one MJCF body: the source gives it no mass). UsdPhysics leaves its mass
  unset and MuJoCo refuses a moving body below mjMINVAL, so it gets a negligible stand-in at its
  origin: 1 g with the inertia of a 1 cm sphere of that mass, far below any authored link.
- `inertia_balanced`: MuJoCo refuses principal moments that break the triangle inequality
  (A + B >= C, checked exactly). The smallest moment is raised to C + margin - B (margin 1e-5 C,
  so float32 rounding on the way to MuJoCo cannot undo it), the principal axes kept: the least
  change that MuJoCo accepts (its own `balanceinertia` would set all three to their mean).

Everything here imports the engine: it runs only inside the runtime session.
"""
from __future__ import annotations

import numpy as np

DEFAULT_DENSITY_KG_M3 = 1000.0        # UsdPhysics' default density, used when nothing is authored
PLANAR_THICKNESS_M = 0.001            # stand-in slab: max(1 mm, 0.1 % of the mesh's extent)
PLANAR_THICKNESS_RELATIVE = 0.001
STAND_IN_MASS_KG = 0.001            # a moving body with no mass and no collider
STAND_IN_RADIUS_M = 0.01
INERTIA_MARGIN = 1e-5                 # relative to the largest principal moment
FIXED_JOINT = 3                       # newton.JointType.FIXED


def correct(builder, meters_per_unit: float) -> list[dict]:
    """Apply every correction the MuJoCo solver needs to `builder` (in place); returns the records,
    in a fixed order (planar meshes, masses, inertias; each by index)."""
    records = thicken_planar_meshes(builder, meters_per_unit)
    records += masses_from_colliders(builder, meters_per_unit)
    records += balance_inertias(builder)
    return records


def _colliding(builder, shape: int) -> bool:
    import newton

    return bool(int(builder.shape_flags[shape]) & int(newton.ShapeFlags.COLLIDE_SHAPES))


def thicken_planar_meshes(builder, meters_per_unit: float) -> list[dict]:
    import newton
    # the very test the MuJoCo solver applies before refusing (Newton 1.8, pinned)
    from newton._src.solvers.mujoco.solver_mujoco import _mujoco_mesh_vertices_are_planar

    MESH_TYPES = (int(newton.GeoType.MESH), int(newton.GeoType.CONVEX_MESH))
    records = []
    for shape, kind in enumerate(builder.shape_type):
        source = builder.shape_source[shape]
        # meshes and convex meshes alike: MuJoCo takes each as a mesh asset and contacts its hull
        if int(kind) not in MESH_TYPES or not isinstance(source, newton.Mesh) or not _colliding(builder, shape):
            continue
        scale = np.asarray(builder.shape_scale[shape], dtype=float)
        vertices = np.asarray(source.vertices, dtype=float).reshape(-1, 3) * scale
        indices = np.asarray(source.indices, dtype=np.int32).reshape(-1, 3)
        if len(vertices) < 3 or not _mujoco_mesh_vertices_are_planar(vertices):
            continue
        centred = vertices - vertices.mean(axis=0)
        normal = np.linalg.svd(centred, full_matrices=True)[2][-1]
        normal = normal * (1.0 if normal[np.argmax(np.abs(normal))] > 0 else -1.0)   # one sign per plane
        extent = float(np.linalg.norm(vertices.max(axis=0) - vertices.min(axis=0)))
        thickness = max(PLANAR_THICKNESS_M / meters_per_unit, PLANAR_THICKNESS_RELATIVE * extent)
        offset = normal * thickness / 2.0
        slab = np.vstack((vertices + offset, vertices - offset))
        faces = np.vstack((indices, indices[:, ::-1] + len(vertices)))
        builder.shape_source[shape] = newton.Mesh(slab.astype(np.float32), faces.reshape(-1),
                                                  compute_inertia=False, maxhullvert=source.maxhullvert)
        builder.shape_scale[shape] = (1.0, 1.0, 1.0)
        records.append({"kind": "planar_mesh_thickened", "target": str(builder.shape_label[shape]),
                        "reason": "MuJoCo contact generation does not support planar mesh colliders",
                        "details": {"thickness_m": thickness * meters_per_unit, "vertices": int(len(vertices)),
                                    "normal": [float(v) for v in normal]}})
    return records


def welded_assemblies(builder) -> list[list[int]]:
    """Bodies joined by fixed joints, as groups (sorted); a group welded to the world holds -1."""
    parent_of = {}

    def root(b: int) -> int:
        while parent_of.get(b, b) != b:
            b = parent_of[b]
        return b

    for b in range(-1, len(builder.body_mass)):
        parent_of[b] = b
    for kind, parent, child in zip(builder.joint_type, builder.joint_parent, builder.joint_child):
        if int(kind) == FIXED_JOINT:
            a, b = root(int(parent)), root(int(child))
            if a != b:
                parent_of[max(a, b)] = min(a, b)   # -1 (the world) always wins
    groups: dict[int, list[int]] = {}
    for b in range(-1, len(builder.body_mass)):
        groups.setdefault(root(b), []).append(b)
    return [sorted(g) for _, g in sorted(groups.items())]


def moving_massless_assemblies(builder) -> list[list[int]]:
    """Assemblies not welded to the world whose bodies hold no mass at all."""
    return [g for g in welded_assemblies(builder)
            if -1 not in g and not sum(float(builder.body_mass[b]) for b in g) > 0.0]


def masses_from_colliders(builder, meters_per_unit: float) -> list[dict]:
    import warp as wp
    from newton._src.geometry.inertia import compute_inertia_shape

    density = DEFAULT_DENSITY_KG_M3 * meters_per_unit ** 3     # kg per stage unit^3
    shapes_of: dict[int, list[int]] = {}
    for shape, body in enumerate(builder.shape_body):
        if int(body) >= 0 and _colliding(builder, shape):
            shapes_of.setdefault(int(body), []).append(shape)
    records = []
    for group in moving_massless_assemblies(builder):
        for body in group:
            added = []
            for shape in shapes_of.get(body, []):
                mass, com, inertia = compute_inertia_shape(builder.shape_type[shape], builder.shape_scale[shape],
                                                           builder.shape_source[shape], density)
                if not mass > 0.0:
                    continue
                transform = builder.shape_transform[shape]
                position = wp.transform_point(transform, com)
                builder._update_body_mass(body, float(mass), inertia, position, wp.transform_get_rotation(transform))
                added.append(str(builder.shape_label[shape]))
            if added:
                records.append({"kind": "mass_from_colliders", "target": str(builder.body_label[body]),
                                "reason": "a moving assembly without mass: UsdPhysics' default density on the "
                                          "colliders' volume",
                                "details": {"mass_kg": float(builder.body_mass[body]),
                                            "density_kg_m3": DEFAULT_DENSITY_KG_M3, "colliders": added}})
        if not sum(float(builder.body_mass[b]) for b in group) > 0.0:
            body = group[0]
            moment = 0.4 * STAND_IN_MASS_KG * (STAND_IN_RADIUS_M / meters_per_unit) ** 2   # kg x stage unit^2
            builder._update_body_mass(body, STAND_IN_MASS_KG, wp.mat33(moment, 0.0, 0.0, 0.0, moment, 0.0, 0.0, 0.0,
                                                                       moment), wp.vec3(builder.body_com[body]),
                                      wp.quat_identity())
            records.append({"kind": "mass_stand_in", "target": str(builder.body_label[body]),
                            "reason": "a moving body without mass and without a collider to take a mass from",
                            "details": {"mass_kg": STAND_IN_MASS_KG, "sphere_radius_m": STAND_IN_RADIUS_M,
                                        "bodies_in_assembly": [str(builder.body_label[b]) for b in group]}})
    return records


def balance_inertias(builder) -> list[dict]:
    import warp as wp

    records = []
    for body, mass in enumerate(builder.body_mass):
        if not float(mass) > 0.0:
            continue
        tensor = np.array(builder.body_inertia[body], dtype=float).reshape(3, 3)
        tensor = (tensor + tensor.T) / 2.0
        moments, axes = np.linalg.eigh(tensor)
        if moments[0] < 0.0 or moments[0] + moments[1] >= moments[2] * (1.0 + INERTIA_MARGIN / 10.0):
            continue
        fixed = moments.copy()
        fixed[0] = moments[2] * (1.0 + INERTIA_MARGIN) - moments[1]
        builder.body_inertia[body] = wp.mat33(*(axes @ np.diag(fixed) @ axes.T).reshape(-1).tolist())
        builder.body_inv_inertia[body] = wp.mat33(*np.linalg.inv(axes @ np.diag(fixed) @ axes.T).reshape(-1).tolist())
        records.append({"kind": "inertia_balanced", "target": str(builder.body_label[body]),
                        "reason": "inertia must satisfy A + B >= C (MuJoCo)",
                        "details": {"principal_moments": [float(v) for v in moments],
                                    "corrected_moments": [float(v) for v in fixed]}})
    return records
