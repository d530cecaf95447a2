"""physical.json as a pydantic model: what every field holds (docs/physical-json.md,
docs/schemas/physical.schema.json).

physical/grade.py gathers the record as it goes and writes the file from this model (validated, then
dumped with exactly the fields it set); the published schema is generated from the same model.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# Figures are rounded to 9 significant digits; non-finite ones are written as strings (property_results.py).
Figure = float | int | bool | str | list | dict | None


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PropertyResult(_Strict):
    test: str
    name: str
    value: Figure = Field(description="the candidate's figure; null when not measured")
    threshold: Figure = Field(description="what the value was judged against")
    unit: str | None
    passed: bool | None = Field(description="null: not measured")
    reason: str | None = Field(description="why null, or what failed")
    details: dict[str, Any] = Field(description="per body or per joint figures, the torque program, "
                                                "reference values")


Properties = dict[str, PropertyResult | None]


class Tests(_Strict):
    load_and_cook: Properties
    rest_and_contact: Properties
    dynamic_response: Properties
    joint_travel: Properties
    slope_drop: Properties
    grasp_and_lift: Properties


class Summary(_Strict):
    measured: int
    passed: int
    failed: int
    null: int
    failed_properties: list[str] = Field(description="`test.property` of each failed property")


class Validity(_Strict):
    valid: bool
    reason: str


class Engine(BaseModel):
    """The engine, as probed before anything runs and as the runtime session reported it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Literal["newton"]
    solver: str
    device: str
    interpreter: list[str] = Field(description="the runtime interpreter's argv")
    python: str | None
    versions: dict[str, str | None] | None = Field(description="what the runtime session imported: newton, "
                                                              "warp-lang, mujoco, mujoco-warp, newton-usd-schemas, "
                                                              "usd-core, numpy")
    versions_pinned: dict[str, str] = Field(description="the pins the thresholds were calibrated on")
    versions_probed: dict[str, str | None] | None = Field(description="what the runtime interpreter holds, read "
                                                                      "before anything runs")
    kernel_cache: str | None = None
    warnings: dict[str, Any] | None = Field(None, description="the importer's, per side")
    ground_m: dict[str, float | None] | None = Field(None, description="height of the added ground plane per "
                                                                       "side, null when the asset has its own")
    refusals: dict[str, str | None] | None = Field(None, description="the engine's refusal, per side")


class Correction(_Strict):
    """One change made to the imported model so that the MuJoCo solver takes a real asset, by the same
    rule on both sides (physical/corrections.py)."""
    kind: Literal["planar_mesh_thickened", "mass_from_colliders", "mass_stand_in", "inertia_balanced"]
    target: str = Field(description="the engine's label of the collider or body (its prim path)")
    reason: str = Field(description="what the solver refuses without it")
    details: dict[str, Any] = Field(description="planar_mesh_thickened: thickness_m, vertices, normal; "
                                                "mass_from_colliders: mass_kg, density_kg_m3, colliders; "
                                                "mass_stand_in: mass_kg, sphere_radius_m, bodies_in_assembly; "
                                                "inertia_balanced: principal_moments and corrected_moments "
                                                "(kg x stage unit^2)")


class Corrections(_Strict):
    reference: list[Correction] | None = Field(description="null: the engine did not load this side")
    candidate: list[Correction] | None = Field(description="null: the engine did not load this side")


class Digests(_Strict):
    reference: str
    candidate: str


class RuntimeSession(_Strict):
    argv: list[str]
    exit_code: int
    output_tail: str
    forked: bool = Field(False, description="forked from the grading process's runtime server (which had "
                                            "imported the engine), not a fresh interpreter: the same session")


class PhysicalRecord(_Strict):
    """OUT/physical.json, written by `usdgrade physical`: a separate grade, never combined with the reward."""

    record_version: Literal["3"]
    status: Literal["graded", "not_run", "infrastructure_error"]
    reason: str | None = Field(description="why not graded, or the refusal that nulled properties")
    case: str
    submission: str
    authored_usd_changed: Literal[False] = Field(description="always false")
    validity: Validity | None = Field(description="the validity gate's verdict on the submission")
    engine: Engine | None
    settings: dict[str, Any] = Field(description="every run setting (physical/settings.py RunSettings)")
    thresholds: dict[str, Any] = Field(description="every threshold (physical/settings.py Thresholds)")
    digests: Digests | None = Field(description="tree digests of the exact bytes tested (checked again after "
                                                "the run)")
    variant_selections: dict[str, dict[str, str]] | None = Field(
        None, description="the case's variant selections both stages were composed with before the engine loaded "
                          "them (prim path -> set -> selection); written once the case is loaded")
    correspondence: dict[str, Any] | None = Field(description="method, reference body -> candidate body, "
                                                              "asset size (m)")
    corrections: Corrections | None = Field(None, description="what was changed in the imported model so that "
                                                              "the solver takes the asset, per side; written once "
                                                              "the runtime session ran")
    summary: Summary
    tests: Tests
    runtime_session: RuntimeSession | None = Field(None, description="written once the runtime session ran")
    timings: dict[str, float] = Field(description="seconds: validity, runtime session, load, correspondence, "
                                                  "total (the only fields that vary between runs of the same bytes)")
