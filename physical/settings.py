"""Every setting of a runtime run, and every threshold of a comparison: one place, recorded whole.

Reference and candidate always run with the same `RunSettings`; `Thresholds` decide pass or fail.
Both are written into physical.json, so a record says exactly what was executed and judged.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

# Import names the runtime needs; probed in the runtime interpreter before anything runs.
ENGINE_MODULES = ("newton", "warp", "mujoco", "mujoco_warp", "newton_usd_schemas")
# The engine's pins: the same list as pyproject's `physical` extra (tests/test_physical_pins.py
# keeps them equal); the thresholds were calibrated on exactly these versions. Not newton[importers]: it pins usd-core < 26.9; the one package of it the USD
# importer needs, newton-usd-schemas, works with the core's usd-core 26.11 (measured).
ENGINE_REQUIREMENTS = (
    "newton==1.8.0",
    "newton-usd-schemas==0.6.0",
    "warp-lang==1.19.0",
    "mujoco==3.17.0",
    "mujoco-warp==3.17.0",
)


def pinned_versions() -> dict[str, str]:
    """{distribution: version} of the pins; a runtime with any other version is refused."""
    return dict(r.split("==", 1) for r in ENGINE_REQUIREMENTS)


# Distributions whose versions are recorded (pip names).
ENGINE_DISTRIBUTIONS = ("newton", "warp-lang", "mujoco", "mujoco-warp", "newton-usd-schemas", "usd-core", "numpy")


@dataclass(frozen=True)
class RunSettings:
    engine: str = "newton"
    solver: str = "SolverMuJoCo"
    device: str = "cpu"
    use_mujoco_cpu: bool = True            # MuJoCo's C solver: deterministic, no GPU
    use_mujoco_contacts: bool = True       # MuJoCo's own collision pipeline
    # MJCF solver options stored as custom attributes (mjc:option:*) are NOT parsed: some values
    # make the importer refuse (gymnasium humanoid's solver = "pgs"), and ignoring them on both
    # sides keeps reference and candidate on the very same solver settings.
    parse_mujoco_options: bool = False
    collapse_fixed_joints: bool = False    # keep every authored body: bodies are compared one to one
    joint_ordering: str = "dfs"
    dt_s: float = 0.002
    # ground: a plane collider at the lowest bound of the asset's colliders, added only when the
    # asset has no plane collider of its own (MuJoCo conversions bring their floor)
    ground: str = "plane at the lowest collider bound unless the asset has a plane collider"
    rest_duration_s: float = 1.0
    settle_window_s: float = 0.1           # speed at rest = displacement over the last window
    dynamic_duration_s: float = 0.5
    dynamic_frequency_hz: float = 2.0
    # torque amplitude of each driven degree of freedom = reference joint-space inertia M_ii
    # (at the initial pose) x this acceleration; rad/s^2 (revolute) or m/s^2 (prismatic)
    dynamic_acceleration: float = 20.0
    travel_duration_s: float = 0.5
    # joint travel push: constant generalized force M_ii x factor x range / duration^2 (x gravity
    # floor), which alone would cross the whole range in well under the duration
    travel_acceleration_factor: float = 16.0
    travel_min_acceleration: float = 20.0
    sample_every_steps: int = 10           # trajectories are compared every 10 steps (20 ms)
    # slope drop: the rest test's drop with gravity turned by this angle (a slope of that angle)
    slope_angle_deg: float = 15.0
    slope_duration_s: float = 1.0
    # grasp and lift (a gripper: two prismatic fingers facing each other on one body): a box half as
    # wide as the open fingers' gap, of this density, closed on with gravity off, then lifted
    grasp_box_density_kg_m3: float = 500.0
    grasp_close_s: float = 0.3
    grasp_lift_s: float = 0.5
    grasp_lift_speed_mps: float = 0.1      # a floating root rises at this speed; a fixed base holds
    grasp_force_weight_factor: float = 10.0   # closing force per finger = this x the box's weight

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Thresholds:
    """Calibrated so that the reference against its equivalent variants (flattened layers, renamed
    namespace, another collision decomposition) passes every test; see README "Physical grade"."""
    # load and cook
    body_mass_relative: float = 0.01       # engine mass of each matched body
    # rest and contact
    settle_speed_abs_mps: float = 0.05     # candidate end speed <= reference's + this (and x1.5)
    settle_speed_factor: float = 1.5
    position_abs_m: float = 0.01           # body position error allowed: max(abs, rel x asset size)
    position_relative_to_size: float = 0.02
    # body orientation error allowed (rest and dynamic response): a body spinning about an axis
    # through its origin (a wheel, a spinner) moves only in orientation
    rotation_deg: float = 2.0
    # joint travel: reached extreme vs the reference's, as a share of the reference's range
    travel_relative: float = 0.1

    def to_json(self) -> dict:
        return asdict(self)

    def position_m(self, size_m: float) -> float:
        return max(self.position_abs_m, self.position_relative_to_size * size_m)


SETTINGS = RunSettings()
THRESHOLDS = Thresholds()
