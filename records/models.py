"""The records as pydantic models: a row of each store table, and a row of each results table
(docs/records.md; docs/schemas/store.schema.json and results.schema.json are generated from them).

Store rows are derived from the tables of records/schema.py, so a column exists once: its SQL type
gives the field's type, a nullable column may be null. The results rows describe what
records/results.py computes (and report.py writes as CSV files); the tests validate both against
the fixture job's store.
"""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, Field, create_model

from . import schema


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, protected_namespaces=())


def _python_type(column: sa.Column) -> Any:
    """The JSON value of a column: JSON columns hold any JSON, others their SQL type's Python type."""
    if isinstance(column.type, sa.JSON):
        return Any
    return column.type.python_type


def row_model(table: sa.Table) -> type[_Row]:
    """A row of `table`: one field per column, in the table's order; nullable columns may be None."""
    fields: dict[str, Any] = {}
    for column in table.columns:
        kind = _python_type(column)
        fields[column.name] = (kind | None if column.nullable and kind is not Any else kind, ...)
    name = "".join(part.title() for part in table.name.split("_")) + "Row"
    return create_model(name, __base__=_Row, __doc__=f"A row of the `{table.name}` table.", **fields)


META_ROW, EPISODE_ROW, GRADE_ROW, CHECK_ROW, VISUAL_ROW, PHYSICAL_ROW = (
    row_model(t) for t in (schema.meta, schema.episodes, schema.grades, schema.checks, schema.visual, schema.physical))


class StoreRows(_Row):
    """Every row of a store, by table (what `Store.rows(table)` returns for each)."""

    meta: list[META_ROW]
    episodes: list[EPISODE_ROW]
    grades: list[GRADE_ROW]
    checks: list[CHECK_ROW]
    visual: list[VISUAL_ROW]
    physical: list[PHYSICAL_ROW]


Rate = float | None
EpisodeIds = list[str]


class LeaderboardRow(_Row):
    """One (model, agent): leaderboard.csv."""

    model: str
    agent: str
    episodes: int
    counted: int = Field(description="episodes graded with a status other than infrastructure_error, from trials "
                                     "whose exception (if any) leaves Harbor's reward valid")
    tasks: int
    mean_authored_usd: float | None
    ci_low: float | None = Field(description="95% percentile bootstrap interval of the mean")
    ci_high: float | None
    objective_success_rate: Rate
    solved: int = Field(description="status graded, objective success and F = 1")
    solved_rate: Rate
    invalid_rate: Rate = Field(description="share of counted episodes graded invalid")
    preservation_failed_rate: Rate = Field(description="share of counted episodes graded preservation_failed")
    closed_book_rate: Rate = Field(description="share of counted episodes whose reward the closed-book rule zeroed: "
                                               "status closed_book_violation (web access in the trajectory) or "
                                               "closed_book_unverified (no trajectory read completely); a clean "
                                               "closed-book run and an open-book case count as not")
    infrastructure_errors: int
    infrastructure_error_rate: Rate
    cost_usd: float | None
    cost_per_solve_usd: float | None
    episode_ids: EpisodeIds
    graded_by: str = Field(description="the versions of the grades its counted episodes are shown with, "
                                       "`SCORING/VERIFIER (episodes)`, comma-separated: rows of different versions "
                                       "are not comparable (the report warns when the leaderboard mixes them)")
    pass_at_1: Rate
    pass_at_1_tasks: int = Field(description="tasks with at least k counted attempts")
    pass_at_3: Rate
    pass_at_3_tasks: int
    pass_at_5: Rate
    pass_at_5_tasks: int


class _RepairRate(_Row):
    model: str
    agent: str
    checks: int
    passed: int
    rate: float = Field(description="strict repair rate: passed checks / checks of counted episodes")
    episode_ids: EpisodeIds


class RepairByFamilyRow(_RepairRate):
    """One (model, agent, check family): repair_by_family.csv."""

    family: str


class RepairByFaultKindRow(_RepairRate):
    """One (model, agent, fault kind): repair_by_fault_kind.csv."""

    fault_kind: str


class InfrastructureRow(_Row):
    """An episode not counted: infrastructure_errors.csv."""

    episode_id: str
    model: str
    agent: str
    task: str
    attempt: int | None
    why: str | None


class SeparateGradesRow(_Row):
    """One (model, agent)'s visual and physical reports: separate_grades.csv."""

    model: str
    agent: str
    visual_reports: int
    visual_graded: int
    visual_mean_score: float | None
    physical_reports: int
    physical_graded: int
    physical_properties_passed: int
    physical_properties_measured: int
    episode_ids: EpisodeIds


class PerTaskRow(_Row):
    """One task and (model, agent): per_task.csv."""

    task: str
    model: str
    agent: str
    counted: int
    solved: int
    mean_authored_usd: float
    episode_ids: EpisodeIds


class EpisodeReportRow(_Row):
    """One episode with the grade it is read with: episodes.csv."""

    episode_id: str
    model: str
    agent: str
    task: str
    attempt: int | None
    trial_name: str | None
    counted: bool
    status: str | None
    authored_usd: float | None
    f: float | None
    s: float | None
    solved: bool | None
    closed_book: str | None
    cost_usd: float | None
    exception: str | None
    not_counted_because: str | None = Field(description="why the episode is in no leaderboard figure: an "
                                                         "infrastructure error, or unattributed (no model or agent)")
    scoring_version: str | None
    verifier_version: str | None


class Results(_Row):
    """The results report's tables (records/results.py), one CSV file each."""

    leaderboard: list[LeaderboardRow]
    repair_by_family: list[RepairByFamilyRow]
    repair_by_fault_kind: list[RepairByFaultKindRow]
    infrastructure_errors: list[InfrastructureRow]
    separate_grades: list[SeparateGradesRow]
    per_task: list[PerTaskRow]
    episodes: list[EpisodeReportRow]
