"""`usdgrade records report`: the results page (HTML), the same in Markdown, CSV tables, figures.

Every number points to its episodes: each leaderboard row and each repair-rate cell links to the
model's episode list in the HTML (and lists the episode ids in the CSV files); `usdgrade records
show EPISODE` opens one. The output depends only on the store's contents.
"""
from __future__ import annotations

import csv
import html
import re
from pathlib import Path

from . import results
from .stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
from .store import Store
from usd_repair_verifier.profiles.errors import Refused

LEADERBOARD_COLUMNS = [
    ("model", "model"), ("agent", "agent"), ("episodes", "episodes"), ("counted", "counted"),
    ("mean_authored_usd", "mean authored_usd"), ("ci_low", "95% CI low"), ("ci_high", "95% CI high"),
    ("objective_success_rate", "objective success"), ("solved_rate", "solved"),
    ("pass_at_1", "pass@1"), ("pass_at_3", "pass@3"), ("pass_at_5", "pass@5"),
    ("invalid_rate", "invalid"), ("preservation_failed_rate", "preservation failed"),
    ("closed_book_rate", "closed book zeroed"), ("infrastructure_errors", "infra errors (apart)"),
    ("cost_usd", "cost USD"), ("cost_per_solve_usd", "cost per solve USD"),
    ("graded_by", "graded by (scoring/verifier: episodes)"),
]

NOTES = [
    "counted: episodes graded with a status other than infrastructure_error, from trials whose "
    "exception (if any) leaves Harbor's reward valid; infrastructure errors are listed apart and never "
    "counted as model failures",
    f"95% CI: percentile bootstrap of the mean, {BOOTSTRAP_RESAMPLES} resamples, seed {BOOTSTRAP_SEED}",
    "objective success: status graded and every objective gate passed",
    "solved: status graded, objective success and every targeted check passed (F = 1)",
    "pass@k: unbiased estimator 1 - C(n-c,k)/C(n,k) per task (n counted attempts, c solved), "
    "averaged over the tasks with n >= k; empty when no task has k attempts",
    "cost per solve: the counted episodes' recorded cost divided by their number of solved episodes",
    "strict repair rate: passed checks / checks of counted episodes; an unmeasured check is not repaired",
    "invalid, preservation failed, closed book zeroed: shares of the counted episodes whose grade has that outcome; "
    "closed book zeroed counts the closed-book rule's zeroed grades (status closed_book_violation, a web access in "
    "the trajectory, or closed_book_unverified, no trajectory that could be read completely); a closed-book "
    "run that passed the rule and an open-book case count as not",
    "graded by: the versions of the grades a row's counted episodes are shown with (scoring/verifier, and how "
    "many); rows of different versions are not comparable",
    "unattributed: a grade that names no model or agent (a plain grade folder, not a Harbor trial) is listed "
    "apart and counted in no row",
]


class NothingToReport(Refused):
    """The store holds nothing the report could show (nothing is written)."""


FIGURES = ("rewards", "partial_credit", "repair_by_family", "repair_by_fault_kind")
OUTPUTS = ("report.html", "report.md", "leaderboard.csv", "repair_by_family.csv", "repair_by_fault_kind.csv",
           "infrastructure_errors.csv", "separate_grades.csv", "per_task.csv", "episodes.csv") \
    + tuple(f"figures/{name}.{ext}" for name in FIGURES for ext in ("png", "svg"))


def slug(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9]+", "-", text).strip("-").lower() or "x"


def fmt(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _csv(path: Path, rows: list[dict]) -> None:
    if not rows:
        path.write_text("")
        return
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: " ".join(v) if isinstance(v, list) else ("" if v is None else v)
                             for k, v in row.items()})


def _group_anchor(model: str, agent: str) -> str:
    return f"episodes-{slug(model)}-{slug(agent)}"


# A cell that reads as a figure (a number, a count, a dash, yes/no) never wraps; any other text
# (ids, names, reasons) wraps anywhere, so no table is wider than the page.
FIGURE_CELL = re.compile(r"[-+]?[\d.,/%]*|—|yes|no")
TAG = re.compile(r"<[^>]+>")


def _header(text: str) -> str:
    """A column heading that may wrap after an underscore or a slash as well as at a space."""
    return re.sub(r"([_/])", r"\1<wbr>", html.escape(text))


def _html_table(headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{_header(h)}</th>" for h in headers)

    def cell(content: str) -> str:
        figure = FIGURE_CELL.fullmatch(TAG.sub("", content).strip())
        return f"<td>{content}</td>" if figure else f'<td class="text">{content}</td>'

    body = "".join("<tr>" + "".join(cell(c) for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


SEPARATE_COLUMNS = [("model", "model"), ("agent", "agent"), ("visual_reports", "visual reports"),
                    ("visual_graded", "visual graded"), ("visual_mean_score", "visual mean score"),
                    ("physical_reports", "physical reports"), ("physical_graded", "physical graded"),
                    ("physical_properties_passed", "properties passed"),
                    ("physical_properties_measured", "properties measured")]


def mixed_versions_warning(views) -> str | None:
    """The warning a leaderboard gets when its counted episodes are shown with grades of more than
    one version (a partial re-grade): their rewards must not be ranked together silently."""
    counts = results.grade_versions([v for v in views if v.attributed and v.counted])
    if len(counts) < 2:
        return None
    listed = ", ".join(f"{n} episode(s) graded by scoring/verifier {version}" for version, n in sorted(counts.items()))
    return (f"Mixed versions: these rows rank grades of {len(counts)} verifier versions together ({listed}); "
            "rewards of different versions are not comparable. Re-grade every episode with one version "
            "(usdgrade regrade), or report one version (--scoring-version, --verifier-version).")


# Each figure's smallest text at its own size is given to the page (data-text-px), so a reader's
# browser test can check the text as displayed: the figure is never shown smaller than that allows.
STYLE = ("body{font-family:sans-serif;margin:1.5em;color:#222}"
         "table{border-collapse:collapse;margin:.5em 0;font-size:13px;max-width:100%}"
         "td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}td{white-space:nowrap}"
         "td.text{white-space:normal;overflow-wrap:anywhere;min-width:4em}"
         "td:first-child,th:first-child{text-align:left}th{background:#f0f0f0}"
         ".warning{border:2px solid #b35900;background:#fff4e5;padding:.6em .8em;font-size:14px;max-width:60em}"
         "figure{display:inline-block;margin:.5em;vertical-align:top;max-width:100%}"
         "img{max-width:100%;height:auto}li{font-size:13px}")


def _html(board, families, kinds, infra, episodes, images, versions, separate, tasks, loose, warning=None) -> str:
    e = html.escape
    link = lambda r, text: f'<a href="#{_group_anchor(r["model"], r["agent"])}">{e(text)}</a>'
    board_rows = [[link(r, fmt(r[key])) if key in ("model", "mean_authored_usd", "counted") else e(fmt(r[key]))
                   for key, _ in LEADERBOARD_COLUMNS] for r in board]

    def rate_table(rates, by):
        return _html_table(["model", "agent", by.replace("_", " "), "rate", "passed/checks"],
                           [[link(r, r["model"]), e(r["agent"]), e(r[by]), e(fmt(r["rate"])),
                             f'{r["passed"]}/{r["checks"]}'] for r in rates])

    alert = f'<p class="warning" role="alert">{e(warning)}</p>' if warning else ""
    sections = [f"<h2>Leaderboard</h2>{alert}{_html_table([h for _, h in LEADERBOARD_COLUMNS], board_rows)}",
                "<ul>" + "".join(f"<li>{e(n)}</li>" for n in NOTES) + "</ul>"]
    for name in FIGURES:
        if f"{name}.png" in images:
            sections.append(f'<figure><img src="figures/{name}.png" alt="{name}" '
                            f'data-text-px="{images[f"{name}.png"]:.1f}"></figure>')
    sections.append("<h2>Separate grades (never combined with the reward)</h2>" + _html_table(
        [h for _, h in SEPARATE_COLUMNS],
        [[link(r, r["model"]) if key == "model" else e(fmt(r[key])) for key, _ in SEPARATE_COLUMNS] for r in separate]))
    sections.append("<h2>Per task</h2>" + _html_table(
        ["task", "model", "agent", "solved/counted", "mean authored_usd"],
        [[e(r["task"]), link(r, r["model"]), e(r["agent"]), f'{r["solved"]}/{r["counted"]}',
          e(fmt(r["mean_authored_usd"]))] for r in tasks]))
    sections.append(f"<h2>Strict repair rate per fault family</h2>{rate_table(families, 'family')}")
    sections.append(f"<h2>Strict repair rate per fault kind</h2>{rate_table(kinds, 'fault_kind')}")
    sections.append("<h2>Infrastructure errors (not counted)</h2>" + _html_table(
        ["episode", "model", "task", "attempt", "why"],
        [[f'<a href="#ep-{slug(r["episode_id"])}">{e(r["episode_id"])}</a>', e(r["model"]), e(r["task"]),
          e(fmt(r["attempt"])), e(r["why"])] for r in infra]))
    sections.append("<h2>Unattributed grades (no model or agent: not on the leaderboard)</h2>" + _html_table(
        ["episode", "task", "folder", "status", "authored_usd"],
        [[e(r["episode_id"]), e(r["task"]), e(fmt(r["folder"])), e(fmt(r["status"])), e(fmt(r["authored_usd"]))]
         for r in loose]))
    sections.append("<h2>Episodes</h2>")
    columns = ["episode_id", "task", "attempt", "trial_name", "counted", "status", "authored_usd", "f", "s",
               "solved", "closed_book", "cost_usd", "exception"]
    for r in board:
        members = [x for x in episodes if x["model"] == r["model"] and x["agent"] == r["agent"]]
        rows = [[f'<span id="ep-{slug(x["episode_id"])}">{e(fmt(x[c]))}</span>' if c == "episode_id"
                 else e(fmt(x[c])) for c in columns] for x in members]
        sections.append(f'<h3 id="{_group_anchor(r["model"], r["agent"])}">{e(r["model"])} ({e(r["agent"])})</h3>'
                        + _html_table(columns, rows))
    return (f"<!doctype html><html><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>Repair results</title>"
            f"<style>{STYLE}</style></head><body><h1>Repair results</h1>"
            f"<p>{len(episodes)} episodes; grades of {e(', '.join(versions) or 'no version')}; "
            f"show one: <code>usdgrade records show EPISODE</code></p>{''.join(sections)}</body></html>\n")


def _markdown(board, families, kinds, infra, images, versions, separate, tasks, loose, warning=None) -> str:
    lines = ["# Repair results", "", f"Grades of {', '.join(versions) or 'no version'}.", "", "## Leaderboard", ""]
    lines += [f"> **{warning}**", ""] if warning else []
    lines += ["| " + " | ".join(h for _, h in LEADERBOARD_COLUMNS) + " |", "|" + " --- |" * len(LEADERBOARD_COLUMNS)]
    lines += ["| " + " | ".join(fmt(r[k]) for k, _ in LEADERBOARD_COLUMNS) + " |" for r in board]
    lines += [""] + [f"- {n}" for n in NOTES] + [""]
    lines += [f"![{name}](figures/{name})" for name in images if name.endswith(".png")] + [""]
    lines += ["## Separate grades (never combined with the reward)", "",
              "| " + " | ".join(h for _, h in SEPARATE_COLUMNS) + " |", "|" + " --- |" * len(SEPARATE_COLUMNS)]
    lines += ["| " + " | ".join(fmt(r[k]) for k, _ in SEPARATE_COLUMNS) + " |" for r in separate] + [""]
    lines += ["## Per task", "", "| task | model | agent | solved/counted | mean authored_usd |",
              "| --- | --- | --- | --- | --- |"]
    lines += [f"| {r['task']} | {r['model']} | {r['agent']} | {r['solved']}/{r['counted']} | "
              f"{fmt(r['mean_authored_usd'])} |" for r in tasks] + [""]
    for title, rates, by in (("fault family", families, "family"), ("fault kind", kinds, "fault_kind")):
        lines += [f"## Strict repair rate per {title}", "", f"| model | agent | {title} | rate | passed/checks |",
                  "| --- | --- | --- | --- | --- |"]
        lines += [f"| {r['model']} | {r['agent']} | {r[by]} | {fmt(r['rate'])} | {r['passed']}/{r['checks']} |"
                  for r in rates] + [""]
    lines += ["## Infrastructure errors (not counted)", "", "| episode | model | task | attempt | why |",
              "| --- | --- | --- | --- | --- |"]
    lines += [f"| {r['episode_id']} | {r['model']} | {r['task']} | {fmt(r['attempt'])} | {r['why']} |" for r in infra]
    lines += ["", "## Unattributed grades (no model or agent: not on the leaderboard)", "",
              "| episode | task | folder | status | authored_usd |", "| --- | --- | --- | --- | --- |"]
    lines += [f"| {r['episode_id']} | {r['task']} | {fmt(r['folder'])} | {fmt(r['status'])} | {fmt(r['authored_usd'])} |"
              for r in loose]
    lines += ["", "## Episodes behind each row", ""]
    lines += [f"- {r['model']} ({r['agent']}): {', '.join(r['episode_ids'])}" for r in board]
    lines += ["", "Per-episode figures: `episodes.csv`; one episode: `usdgrade records show EPISODE`.", ""]
    return "\n".join(lines)


def write_report(store: Store, out: Path, *, scoring_version: str | None = None,
                 verifier_version: str | None = None) -> dict:
    """Write report.html, report.md, the CSV tables and figures/ into ``out``; returns the tables.

    NothingToReport (nothing written) when the store holds no episode, or no grade of the versions asked for.
    """
    views = results.load_views(store, scoring_version, verifier_version)
    if not views:
        raise NothingToReport("the store holds no episodes: nothing to report (usdgrade records ingest JOB_DIR first)")
    if (scoring_version or verifier_version) and not any(v.grade for v in views):
        asked = " and ".join(f"{name} {value}" for name, value in (("scoring version", scoring_version),
                                                                   ("verifier version", verifier_version)) if value)
        raise NothingToReport(f"the store holds no grade of {asked}: nothing to report")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for stale in OUTPUTS:                    # an earlier report's files never survive beside a new one
        (out / stale).unlink(missing_ok=True)
    board = results.leaderboard(views)
    families = results.repair_rates(views, "family")
    kinds = results.repair_rates(views, "fault_kind")
    infra = results.infrastructure(views)
    separate = results.separate_grades(store, views)
    tasks = results.per_task(views)
    episodes = results.episode_rows(views)
    loose = results.unattributed(views)
    versions = sorted({f"scoring {v.grade['scoring_version']} / verifier {v.grade['verifier_version']}"
                       for v in views if v.grade})
    rewards, points = {}, {}
    for v in views:
        if v.counted:
            rewards.setdefault(v.group, []).append(v.reward)
            if v.grade["f"] is not None and v.grade["s"] is not None:
                points.setdefault(v.group, []).append((v.grade["f"], v.grade["s"]))
    from . import figures    # matplotlib: imported only when a report is written

    figure_dir = out / "figures"
    images = {**figures.reward_distribution(rewards, figure_dir), **figures.partial_credit(points, figure_dir),
              **figures.heatmap(families, "family", figure_dir, "repair_by_family"),
              **figures.heatmap(kinds, "fault_kind", figure_dir, "repair_by_fault_kind")}
    warning = mixed_versions_warning(views)
    _csv(out / "leaderboard.csv", board)
    _csv(out / "repair_by_family.csv", families)
    _csv(out / "repair_by_fault_kind.csv", kinds)
    _csv(out / "infrastructure_errors.csv", infra)
    _csv(out / "separate_grades.csv", separate)
    _csv(out / "per_task.csv", tasks)
    _csv(out / "episodes.csv", episodes)
    (out / "report.md").write_text(_markdown(board, families, kinds, infra, images, versions, separate, tasks, loose,
                                             warning))
    (out / "report.html").write_text(_html(board, families, kinds, infra, episodes, images, versions, separate, tasks,
                                           loose, warning))
    return {"leaderboard": board, "families": families, "fault_kinds": kinds, "infrastructure": infra,
            "separate": separate, "tasks": tasks, "unattributed": loose,
            "episodes": episodes, "figures": sorted(images), "warning": warning}
