"""The numbers of the results report, computed from the store.

Each episode is read with one grade: the one of ``scoring_version``/``verifier_version`` when
given, else its newest (highest versions, compared numerically part by part). Episodes are then
split into:

- **counted**: a grade whose status is not ``infrastructure_error``, from a trial whose exception
  (if any) leaves Harbor's reward valid (the agent's own timeout, exit or context limit). These
  are the model's attempts: invalid, preservation-failed and closed-book submissions included,
  with the reward the grader wrote (0 for them).
- **infrastructure**: everything else (the verifier failed, the environment never started, an API
  or harness failure, no grade at all). Listed apart, never counted as a model failure.
- **unattributed**: an episode that names neither a model nor an agent (a plain grade folder, not
  a Harbor trial). It is nobody's attempt: listed apart, on no leaderboard row, in no rate.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import schema
from .stats import bootstrap_mean_ci, mean_pass_at_k
from .store import Store, version_key

PASS_AT = (1, 3, 5)
CLOSED_BOOK_FAILURES = ("violation", "unverified")   # "clean" is a closed-book run that passed


@dataclass
class EpisodeView:
    episode: dict
    grade: dict | None
    counted: bool
    why_not_counted: str | None
    checks: list[dict] = field(default_factory=list)

    @property
    def attributed(self) -> bool:
        return bool(self.episode["model_name"] or self.episode["agent_name"])

    @property
    def id(self) -> str:
        return self.episode["episode_id"]

    @property
    def group(self) -> tuple[str, str]:
        return (self.episode["model_name"] or "(no model)", self.episode["agent_name"] or "(no agent)")

    @property
    def task(self) -> str:
        return self.episode["task_name"] or self.episode["case_id"] or "(no task)"

    @property
    def reward(self) -> float:
        value = self.grade.get("authored_usd") if self.grade else None
        return float(value) if value is not None else 0.0


UNATTRIBUTED = "unattributed: no model or agent (a grade folder, not a Harbor trial)"


def _classify(episode: dict, grade: dict | None) -> str | None:
    """Why an episode is not counted (an infrastructure error, or nobody's attempt), or None when it
    counts as the model's attempt."""
    if not (episode.get("model_name") or episode.get("agent_name")):
        return UNATTRIBUTED
    if episode.get("exception_type") and episode.get("exception_valid_reward") is False:
        return f"harness failure: {episode['exception_type']}"
    if grade is None:
        return "no grade recorded"
    if grade["status"] == "infrastructure_error":
        return f"verifier infrastructure error: {grade.get('infrastructure_error') or 'no cause given'}"
    return None


def load_views(store: Store, scoring_version: str | None = None,
               verifier_version: str | None = None) -> list[EpisodeView]:
    episodes = store.rows(schema.episodes)
    grades: dict[str, dict] = {}
    for g in store.rows(schema.grades):
        if scoring_version and g["scoring_version"] != scoring_version:
            continue
        if verifier_version and g["verifier_version"] != verifier_version:
            continue
        current = grades.get(g["episode_id"])
        rank = (version_key(g["scoring_version"]), version_key(g["verifier_version"]))
        if current is None or rank > (version_key(current["scoring_version"]),
                                      version_key(current["verifier_version"])):
            grades[g["episode_id"]] = g
    checks: dict[tuple, list[dict]] = {}
    for c in store.rows(schema.checks):
        checks.setdefault((c["episode_id"], c["scoring_version"], c["verifier_version"]), []).append(c)
    views = []
    for e in episodes:
        if (scoring_version or verifier_version) and e["episode_id"] not in grades and e["source"] == "folder":
            continue                                  # a grade folder of another version: nothing to show
        grade = grades.get(e["episode_id"])
        why = _classify(e, grade)
        key = (e["episode_id"], grade["scoring_version"], grade["verifier_version"]) if grade else None
        views.append(EpisodeView(e, grade, why is None, why, checks.get(key, [])))
    return views


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def leaderboard(views: list[EpisodeView]) -> list[dict]:
    """One row per (model, agent), sorted by mean reward (best first), then name."""
    groups: dict[tuple, list[EpisodeView]] = {}
    for v in views:
        if not v.attributed:
            continue
        groups.setdefault(v.group, []).append(v)
    rows = []
    for (model, agent), members in groups.items():
        counted = [v for v in members if v.counted]
        rewards = [v.reward for v in counted]
        status = [v.grade["status"] for v in counted]
        solved = [v for v in counted if v.grade["solved"]]
        per_task: dict[str, list[int]] = {}
        for v in counted:
            tally = per_task.setdefault(v.task, [0, 0])
            tally[0] += 1
            tally[1] += bool(v.grade["solved"])
        costs = [v.episode["cost_usd"] for v in counted if v.episode["cost_usd"] is not None]
        interval = bootstrap_mean_ci(rewards)
        row = {
            "model": model, "agent": agent, "episodes": len(members), "counted": len(counted),
            "tasks": len(per_task),
            "mean_authored_usd": sum(rewards) / len(rewards) if rewards else None,
            "ci_low": interval[0] if interval else None, "ci_high": interval[1] if interval else None,
            # a closed-book violation's withheld grade is not an objective success
            "objective_success_rate": _rate(sum(v.grade["objective_success"] is True and v.grade["status"] == "graded"
                                                for v in counted), len(counted)),
            "solved": len(solved), "solved_rate": _rate(len(solved), len(counted)),
            "invalid_rate": _rate(status.count("invalid"), len(counted)),
            "preservation_failed_rate": _rate(status.count("preservation_failed"), len(counted)),
            "closed_book_rate": _rate(sum(v.grade["closed_book"] in CLOSED_BOOK_FAILURES for v in counted),
                                      len(counted)),
            "infrastructure_errors": len(members) - len(counted),
            "infrastructure_error_rate": _rate(len(members) - len(counted), len(members)),
            "cost_usd": sum(costs) if costs else None,
            "cost_per_solve_usd": sum(costs) / len(solved) if costs and solved else None,
            "episode_ids": [v.id for v in sorted(members, key=lambda v: (v.task, v.episode["attempt"] or 0, v.id))],
        }
        row["graded_by"] = ", ".join(f"{version} ({n})" for version, n in sorted(grade_versions(counted).items()))
        for k in PASS_AT:
            value, n_tasks = mean_pass_at_k([tuple(t) for t in per_task.values()], k)
            row[f"pass_at_{k}"], row[f"pass_at_{k}_tasks"] = value, n_tasks
        rows.append(row)
    rows.sort(key=lambda r: (-(r["mean_authored_usd"] if r["mean_authored_usd"] is not None else -1),
                             r["model"], r["agent"]))
    return rows


def version_label(grade: dict) -> str:
    """A grade's version as the report names it: SCORING/VERIFIER."""
    return f"{grade['scoring_version']}/{grade['verifier_version']}"


def grade_versions(views: list[EpisodeView]) -> dict[str, int]:
    """How many of the episodes are shown with a grade of each version (a partial re-grade leaves
    several: their rewards are not comparable, so the report says so where they are ranked)."""
    counts: dict[str, int] = {}
    for v in views:
        if v.grade:
            counts[version_label(v.grade)] = counts.get(version_label(v.grade), 0) + 1
    return counts


def repair_rates(views: list[EpisodeView], by: str) -> list[dict]:
    """Strict repair rate per (model, agent) and check family or fault kind (``by``).

    Over the checks of counted episodes: passed / all; a check left unmeasured (an invalid
    submission) counts as not repaired.
    """
    cells: dict[tuple, dict] = {}
    for v in views:
        if not v.counted:
            continue
        for c in v.checks:
            key = (v.group[0], v.group[1], c[by] or "(unknown)")
            cell = cells.setdefault(key, {"checks": 0, "passed": 0, "episode_ids": set()})
            cell["checks"] += 1
            cell["passed"] += c["passed"] is True
            cell["episode_ids"].add(v.id)
    return [{"model": m, "agent": a, by: name, "checks": cell["checks"], "passed": cell["passed"],
             "rate": cell["passed"] / cell["checks"], "episode_ids": sorted(cell["episode_ids"])}
            for (m, a, name), cell in sorted(cells.items())]


def infrastructure(views: list[EpisodeView]) -> list[dict]:
    return [{"episode_id": v.id, "model": v.group[0], "agent": v.group[1], "task": v.task,
             "attempt": v.episode["attempt"], "why": v.why_not_counted}
            for v in sorted(views, key=lambda v: v.id) if not v.counted and v.attributed]


def unattributed(views: list[EpisodeView]) -> list[dict]:
    """Grades that name no model or agent: shown apart, never on the leaderboard."""
    return [{"episode_id": v.id, "task": v.task, "folder": v.episode["trial_name"],
             "status": (v.grade or {}).get("status"), "authored_usd": (v.grade or {}).get("authored_usd")}
            for v in sorted(views, key=lambda v: v.id) if not v.attributed]


def episode_rows(views: list[EpisodeView]) -> list[dict]:
    rows = []
    for v in sorted(views, key=lambda v: (v.group, v.task, v.episode["attempt"] or 0, v.id)):
        g = v.grade or {}
        rows.append({"episode_id": v.id, "model": v.group[0], "agent": v.group[1], "task": v.task,
                     "attempt": v.episode["attempt"], "trial_name": v.episode["trial_name"],
                     "counted": v.counted, "status": g.get("status"), "authored_usd": g.get("authored_usd"),
                     "f": g.get("f"), "s": g.get("s"), "solved": g.get("solved"),
                     "closed_book": g.get("closed_book"), "cost_usd": v.episode["cost_usd"],
                     "exception": v.episode["exception_type"], "not_counted_because": v.why_not_counted,
                     "scoring_version": g.get("scoring_version"), "verifier_version": g.get("verifier_version")})
    return rows


def _newest_per_episode(rows: list[dict]) -> dict[str, dict]:
    newest: dict[str, dict] = {}
    for row in rows:
        current = newest.get(row["episode_id"])
        if current is None or version_key(row["grader_version"]) > version_key(current["grader_version"]):
            newest[row["episode_id"]] = row
    return newest


def separate_grades(store: Store, views: list[EpisodeView]) -> list[dict]:
    """Per (model, agent): the visual and physical reports, side by side, never combined with the reward."""
    visual = _newest_per_episode(store.rows(schema.visual))
    physical = _newest_per_episode(store.rows(schema.physical))
    groups: dict[tuple, dict] = {}
    for v in views:
        if not v.attributed:
            continue
        cell = groups.setdefault(v.group, {"visual": [], "physical": []})
        if v.id in visual:
            cell["visual"].append(visual[v.id])
        if v.id in physical:
            cell["physical"].append(physical[v.id])
    rows = []
    for (model, agent), cell in sorted(groups.items()):
        scores = [r["score"] for r in cell["visual"] if r["status"] == "graded" and r["score"] is not None]
        graded = [r for r in cell["physical"] if r["status"] == "graded"]
        measured = sum(r["measured"] or 0 for r in graded)
        rows.append({"model": model, "agent": agent, "visual_reports": len(cell["visual"]),
                     "visual_graded": len(scores), "visual_mean_score": sum(scores) / len(scores) if scores else None,
                     "physical_reports": len(cell["physical"]), "physical_graded": len(graded),
                     "physical_properties_passed": sum(r["passed"] or 0 for r in graded),
                     "physical_properties_measured": measured,
                     "episode_ids": sorted({r["episode_id"] for r in cell["visual"] + cell["physical"]})})
    return [r for r in rows if r["visual_reports"] or r["physical_reports"]]


def per_task(views: list[EpisodeView]) -> list[dict]:
    """Per task and (model, agent): counted attempts, solved ones and the mean reward (which model repairs what)."""
    cells: dict[tuple, list[EpisodeView]] = {}
    for v in views:
        if v.counted:
            cells.setdefault((v.task, *v.group), []).append(v)
    return [{"task": task, "model": model, "agent": agent, "counted": len(members),
             "solved": sum(bool(v.grade["solved"]) for v in members),
             "mean_authored_usd": sum(v.reward for v in members) / len(members),
             "episode_ids": sorted(v.id for v in members)}
            for (task, model, agent), members in sorted(cells.items())]
