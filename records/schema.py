"""The records store's tables (SQLAlchemy Core), its schema version and the migrations.

One schema for SQLite and PostgreSQL: JSON columns become JSONB on PostgreSQL, text keys are
plain strings, times are ISO-8601 strings as Harbor wrote them (comparable as text, no time-zone
conversions between the two databases).
"""
from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB

SCHEMA_VERSION = 1

metadata = sa.MetaData()

JSONType = sa.JSON().with_variant(JSONB(), "postgresql")

meta = sa.Table(
    "meta", metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

episodes = sa.Table(
    "episodes", metadata,
    sa.Column("episode_id", sa.String(200), primary_key=True),
    sa.Column("source", sa.Text, nullable=False),          # harbor | folder
    sa.Column("trial_name", sa.Text),
    sa.Column("job_id", sa.Text),
    sa.Column("job_name", sa.Text),
    sa.Column("task_name", sa.Text),
    sa.Column("task_checksum", sa.Text),
    sa.Column("case_id", sa.Text),
    sa.Column("profile_digest", sa.Text),
    sa.Column("agent_name", sa.Text),
    sa.Column("agent_version", sa.Text),
    sa.Column("model_name", sa.Text),
    sa.Column("model_provider", sa.Text),
    sa.Column("attempt", sa.Integer),
    sa.Column("started_at", sa.Text),
    sa.Column("finished_at", sa.Text),
    sa.Column("agent_seconds", sa.Float),
    sa.Column("n_input_tokens", sa.BigInteger),
    sa.Column("n_cache_tokens", sa.BigInteger),
    sa.Column("n_output_tokens", sa.BigInteger),
    sa.Column("cost_usd", sa.Float),
    sa.Column("exception_type", sa.Text),
    sa.Column("exception_message", sa.Text),
    # Harbor's error policy for that exception: false for harness failures (environment, API),
    # whose trials are infrastructure errors, never model failures.
    sa.Column("exception_valid_reward", sa.Boolean),
    sa.Column("submission_digest", sa.Text),
    sa.Column("submission_path", sa.Text),       # where the submission was found at ingest, if kept
    sa.Column("trajectory_steps", sa.Integer),
    sa.Column("trajectory_digest", sa.Text),
    sa.Column("record_digest", sa.String(64), nullable=False),    # of the fields above, attempt aside
    sa.Column("trial_result", JSONType),
)
sa.Index("episodes_group", episodes.c.task_name, episodes.c.agent_name, episodes.c.model_name)

grades = sa.Table(
    "grades", metadata,
    sa.Column("episode_id", sa.String(200), sa.ForeignKey("episodes.episode_id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("scoring_version", sa.String(64), primary_key=True),
    sa.Column("verifier_version", sa.String(64), primary_key=True),
    sa.Column("origin", sa.Text, nullable=False),
    sa.Column("status", sa.Text),
    sa.Column("authored_usd", sa.Float),
    sa.Column("raw_authored_usd", sa.Float),
    sa.Column("f", sa.Float),
    sa.Column("s", sa.Float),
    sa.Column("objective_success", sa.Boolean),
    sa.Column("submission_valid", sa.Boolean),
    sa.Column("preservation_pass", sa.Boolean),
    sa.Column("closed_book", sa.Text),
    sa.Column("network_violations", JSONType),
    sa.Column("infrastructure_error", sa.Text),
    sa.Column("solved", sa.Boolean, nullable=False),
    sa.Column("case_id", sa.Text),
    sa.Column("profile_digest", sa.Text),
    sa.Column("candidate_digest", sa.Text),
    sa.Column("record_digest", sa.String(64), nullable=False),
    sa.Column("grade_json", JSONType, nullable=False),
)

checks = sa.Table(
    "checks", metadata,
    sa.Column("episode_id", sa.String(200), primary_key=True),
    sa.Column("scoring_version", sa.String(64), primary_key=True),
    sa.Column("verifier_version", sa.String(64), primary_key=True),
    sa.Column("check_id", sa.String(300), primary_key=True),
    sa.Column("fault_id", sa.Text),
    sa.Column("fault_kind", sa.Text),
    sa.Column("family", sa.Text),
    sa.Column("measure", sa.Text),
    sa.Column("target", sa.Text),
    sa.Column("passed", sa.Boolean),
    sa.Column("progress", sa.Float),
    sa.ForeignKeyConstraint(["episode_id", "scoring_version", "verifier_version"],
                            ["grades.episode_id", "grades.scoring_version", "grades.verifier_version"],
                            ondelete="CASCADE"),
)


def _separate_table(name: str, *extra: sa.Column) -> sa.Table:
    return sa.Table(
        name, metadata,
        sa.Column("episode_id", sa.String(200), sa.ForeignKey("episodes.episode_id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("grader_version", sa.String(64), primary_key=True),
        sa.Column("status", sa.Text),
        sa.Column("reason", sa.Text),
        *extra,
        sa.Column("record_digest", sa.String(64), nullable=False),
        sa.Column("record", JSONType, nullable=False),
    )


visual = _separate_table(
    "visual",
    sa.Column("score", sa.Float),
    sa.Column("model", sa.Text),
    sa.Column("rubric_digest", sa.Text),
)

physical = _separate_table(
    "physical",
    sa.Column("measured", sa.Integer),
    sa.Column("passed", sa.Integer),
    sa.Column("failed", sa.Integer),
    sa.Column("unmeasured", sa.Integer),
    sa.Column("engine_versions", JSONType),
)

SEPARATE_TABLES = {"visual": visual, "physical": physical}


def _create_v1(connection: sa.Connection) -> None:
    metadata.create_all(connection)


# Migration N brings a store from schema N - 1 to N. Append, never edit: stores in the field
# were written by the earlier steps.
MIGRATIONS = {1: _create_v1}
