"""`usdgrade records show EPISODE`: one episode's record, grades, checks and separate reports."""
from __future__ import annotations

from . import schema
from .report import fmt
from .store import Store

EPISODE_FIELDS = ["trial_name", "job_name", "task_name", "task_checksum", "case_id", "profile_digest",
                  "agent_name", "agent_version", "model_name", "model_provider", "attempt", "started_at",
                  "finished_at", "agent_seconds", "n_input_tokens", "n_cache_tokens", "n_output_tokens",
                  "cost_usd", "exception_type", "exception_message", "submission_digest", "trajectory_steps"]
GRADE_FIELDS = ["status", "authored_usd", "raw_authored_usd", "f", "s", "objective_success", "submission_valid",
                "preservation_pass", "closed_book", "network_violations", "infrastructure_error", "solved",
                "origin", "record_digest"]


def find_episode(store: Store, text: str):
    """An episode by its id, else by trial name, else by a unique id prefix."""
    episode = store.get_episode(text)
    if episode is None:
        matches = list(store.iter_episodes({"trial_name": text}))
        if not matches:
            matches = [e for e in store.iter_episodes() if e.episode_id.startswith(text)] if text else []
        if len(matches) == 1:
            episode = matches[0]
        elif len(matches) > 1:
            raise LookupError(f"{text!r} matches {len(matches)} episodes: "
                              + ", ".join(e.episode_id for e in matches[:10]))
    if episode is None:
        raise LookupError(f"no episode {text!r}")
    return episode


def show_lines(store: Store, text: str) -> list[str]:
    episode = find_episode(store, text)
    lines = [f"episode {episode.episode_id} ({episode.source})"]
    lines += [f"  {name:<18} {fmt(getattr(episode, name))}" for name in EPISODE_FIELDS
              if getattr(episode, name) is not None]
    grades = store.grades(episode.episode_id)
    if not grades:
        lines.append("no grade recorded")
    for grade in grades:
        lines.append(f"grade scoring {grade['scoring_version']} / verifier {grade['verifier_version']}")
        lines += [f"  {name:<18} {fmt(grade[name])}" for name in GRADE_FIELDS if grade[name] is not None]
        checks = store.rows(schema.checks, schema.checks.c.episode_id == episode.episode_id,
                            schema.checks.c.scoring_version == grade["scoring_version"],
                            schema.checks.c.verifier_version == grade["verifier_version"])
        if checks:
            lines.append(f"  {'check':<28} {'kind':<24} {'passed':<7} progress")
            lines += [f"  {c['check_id']:<28} {fmt(c['fault_kind']):<24} {fmt(c['passed']):<7} {fmt(c['progress'])}"
                      for c in checks]
    for kind, table in schema.SEPARATE_TABLES.items():
        for row in store.rows(table, table.c.episode_id == episode.episode_id):
            lines.append(f"{kind} {row['grader_version']}: {row['status']}"
                         + (f" ({row['reason']})" if row["reason"] else ""))
            extra = ["score", "model", "rubric_digest"] if kind == "visual" else \
                ["measured", "passed", "failed", "unmeasured", "engine_versions"]
            lines += [f"  {name:<18} {fmt(row[name])}" for name in extra if row[name] is not None]
    if not any(store.rows(t, t.c.episode_id == episode.episode_id) for t in schema.SEPARATE_TABLES.values()):
        lines.append("no visual or physical report")
    return lines
