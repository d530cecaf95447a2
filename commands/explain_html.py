"""`usdgrade explain OUT/grade.json --html [--out PAGE_DIR] [--case CASE --submission DIR]`.

One offline page (PAGE_DIR/index.html and its PNGs; no network, no script): the status and
the reward's arithmetic, every gate with its reason, and every failing check with its
components as bars (the candidate's error against the tolerance and against the input's
error: the progress the repair made, visible) and a picture pair: reference and candidate
from the same camera, the check's parts highlighted (commands/explain_pictures.py).

Pictures are drawn only from the graded bytes: the case's profile and the submission must
have the digests grade.json recorded, else the page says why there are none. Everything
taken from grade.json is escaped (names come from the graded submission). Same grade and
bytes in, same page out: no clock, no absolute paths.
"""
from __future__ import annotations

import html
import math
from pathlib import Path

from usd_repair_verifier.profiles.digest import tree_digest
from usd_repair_verifier.stage_snapshot.read import StageOpenError
from usd_repair_verifier.visual.render import RenderError

from usd_repair_verifier.scoring.progress import progress
from usd_repair_verifier.scoring.report import arithmetic, checks_not_run, failing_checks, not_run_by_kind, unmeasured_checks

MAX_PICTURED = 20   # failing checks drawn (least progress first); the rest get bars only

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1100px; color: #222; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; }
.reward { font-size: 34px; font-weight: 600; } .muted { color: #666; } code { font-size: 12.5px; }
table { border-collapse: collapse; width: 100%; } td, th { padding: 3px 8px; vertical-align: top; text-align: left; }
tr:nth-child(even) { background: #f6f6f8; }
.pass { color: #17803d; font-weight: 600; } .fail { color: #c0261b; font-weight: 600; } .notrun { color: #8a6d00; font-weight: 600; }
.check { border: 1px solid #ddd; border-radius: 6px; padding: 10px 14px; margin: 14px 0; }
.track { position: relative; height: 12px; background: #eceef2; border-radius: 3px; margin: 3px 0; width: 420px; }
.fill { position: absolute; left: 0; top: 0; bottom: 0; border-radius: 3px; }
.tol { position: absolute; top: -3px; bottom: -3px; width: 2px; background: #17803d; }
.bad { background: #d9483b; } .good { background: #2f9e57; } .input { background: #9aa0aa; } .progress { background: #3b6fd9; }
.bars td { padding: 1px 8px; } figure { display: inline-block; margin: 6px 10px 0 0; }
figcaption { font-size: 12px; color: #555; text-align: center; } img { border: 1px solid #ccc; }
"""


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _number(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return "∞" if math.isinf(value) else f"{value:.4g}"
    return _e(value)


def _share(value, scale: float) -> float:
    """A bar's width in percent: value / scale, clipped; an infinite or missing error fills the track."""
    if not isinstance(value, (int, float)) or not math.isfinite(value) or scale <= 0:
        return 100.0
    return max(0.0, min(100.0, 100.0 * value / scale))


def component_bars(name: str, c: dict) -> str:
    """Input error (grey), candidate error (red above tolerance, green within) and the tolerance mark."""
    finite = [v for v in (c.get("error"), c.get("input_error"), c.get("tolerance"))
              if isinstance(v, (int, float)) and math.isfinite(v)]
    scale = max(finite) if finite else 1.0
    tol = _share(c.get("tolerance"), scale)
    ok = c.get("passed") is True
    rows = []
    for label, value, css in (("input", c.get("input_error"), "input"), ("candidate", c.get("error"), "good" if ok else "bad")):
        rows.append(f'<tr><td>{label}</td><td><div class="track"><div class="fill {css}" style="width:{_share(value, scale):.2f}%">'
                    f'</div><div class="tol" style="left:{tol:.2f}%"></div></div></td><td>{_number(value)}</td></tr>')
    return (f'<p><code>{_e(name)}</code>: error {_number(c.get("error"))}, tolerance {_number(c.get("tolerance"))}, '
            f'input {_number(c.get("input_error"))} <span class="muted">(reference {_e(c.get("reference"))}, '
            f'candidate {_e(c.get("candidate"))})</span></p><table class="bars">{"".join(rows)}</table>')


def gate_rows(grade: dict) -> str:
    rows, not_run = [], not_run_by_kind(grade)
    for kind in ("validity", "preservation", "objective"):
        for name, g in ((grade.get("gates") or {}).get(kind) or {}).items():
            verdict = '<span class="pass">pass</span>' if g.get("passed") is True else '<span class="fail">FAIL</span>'
            rows.append(f"<tr><td>{kind}</td><td>{verdict}</td><td><code>{_e(name)}</code></td><td>{_e(g.get('reason'))}</td></tr>")
        names = not_run.get(kind) or ([] if (grade.get("gates") or {}).get(kind) else ["(all)"])
        for name in names:
            rows.append(f'<tr><td>{kind}</td><td><span class="notrun">not run</span></td><td><code>{_e(name)}</code></td><td></td></tr>')
    return "<table><tr><th>gate</th><th></th><th>name</th><th>reason</th></tr>" + "".join(rows) + "</table>"


def check_section(index: int, check: dict, figures: str) -> str:
    progress = check.get("progress")
    bar = (f'<div class="track"><div class="fill progress" style="width:{_share(progress, 1.0):.2f}%"></div></div>'
           if isinstance(progress, (int, float)) else "")
    components = "".join(component_bars(name, c) for name, c in (check.get("components") or {}).items()
                         if c.get("passed") is not True)
    return (f'<div class="check" id="check-{index}"><h3><code>{_e(check.get("id"))}</code> on <code>{_e(check.get("target"))}</code></h3>'
            f'<p>{_e(check.get("family"))}.{_e(check.get("measure"))} (fault {_e(check.get("fault"))}): '
            f'{_e(check.get("details"))}</p><p>semantic progress {_number(progress)} '
            f'<span class="muted">(0 at the input\'s error, 1 within tolerance)</span></p>{bar}{components}{figures}</div>')


def graded_bytes_problem(grade: dict, case: Path, submission: Path) -> str | None:
    """Why the given case and submission are not what was graded (None: they are)."""
    from usd_repair_verifier.profiles.case import CaseError, load_case

    try:
        loaded = load_case(case)
    except CaseError as error:
        return f"the case cannot be read: {error}"
    if loaded.profile_digest != (grade.get("profile") or {}).get("digest"):
        return "the case's profile is not the one this grade used"
    recorded = ((grade.get("digests") or {}).get("candidate") or {}).get("digest")
    if recorded is None or not submission.is_dir() or tree_digest(submission) != recorded:
        return "the submission's bytes differ from the graded ones (or the grade recorded no digest)"
    return None


def draw_figures(checks: list[dict], case: Path, submission: Path, out: Path) -> dict[int, str]:
    """{check index: figure HTML}; writes check-<i>-<role>-<view>.png into `out`."""
    from usd_repair_verifier.profiles.case import load_case

    from usd_repair_verifier.commands.explain_pictures import Pictures

    profile = load_case(case).profile
    pictures = Pictures(case / "reference", submission, dict(profile.sampling), dict(profile.correspondence))
    figures = {}
    for index, check in progress(list(enumerate(checks[:MAX_PICTURED])), "drawing checks", "check"):
        target = str(check.get("target"))
        parts = []
        for view, roles in pictures.draw(target).items():
            pair = []
            for role, png in roles.items():
                name = f"check-{index}-{role}-{view}.png"
                (out / name).write_bytes(png)
                pair.append(f'<figure><img src="{name}" width="340" height="340" alt="{role} {view}">'
                            f"<figcaption>{role}, {view.replace('_', ' ')}</figcaption></figure>")
            parts.append("<div>" + "".join(pair) + "</div>")
        figures[index] = f'<p class="muted">{_e(pictures.label(target))}</p>' + "".join(parts)
    return figures


def page(grade: dict, figures: dict[int, str], pictures_note: str | None) -> str:
    checks = failing_checks(grade)
    head = (f"<h1>usdgrade: {_e((grade.get('profile') or {}).get('id'))}</h1>"
            f"<p class=\"reward\">{_number(grade.get('authored_usd'))}</p>"
            f"<p>status <b>{_e(grade.get('status'))}</b>, objective {_e(grade.get('objective_success'))}, "
            f"scoring version {_e(grade.get('scoring_version'))}</p>")
    if grade.get("infrastructure_error"):
        head += f"<p class=\"fail\">infrastructure error (not a score): {_e(grade['infrastructure_error'])}</p>"
    how = arithmetic(grade)
    body = [head, "<h2>Reward</h2>", f"<p><code>{_e(how)}</code></p>" if how else ""]
    body += [f"<p>{_e(reason)}</p>" for reason in grade.get("reasons") or []]
    body += ["<h2>Gates</h2>", gate_rows(grade), "<h2>Failing checks</h2>"]
    if pictures_note:
        body.append(f'<p class="muted">No pictures: {_e(pictures_note)}</p>')
    elif len(checks) > MAX_PICTURED:
        body.append(f'<p class="muted">Pictures for the first {MAX_PICTURED} of {len(checks)} failing checks.</p>')
    body += [check_section(i, c, figures.get(i, "")) for i, c in enumerate(checks)] or ["<p>none</p>"]
    for c in unmeasured_checks(grade):
        body.append(f"<p><code>{_e(c.get('id'))}</code> unmeasured: {_e(c.get('details'))}</p>")
    not_run = checks_not_run(grade)
    if not_run:
        body.append("<h2>Checks not run</h2><p>" + ", ".join(f"<code>{_e(i)}</code>" for i in not_run) + "</p>")
    passing = [c.get("id") for c in grade.get("checks", []) if c.get("passed") is True]
    body.append("<h2>Passing checks</h2><p>" + (", ".join(f"<code>{_e(i)}</code>" for i in passing) or "none") + "</p>")
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>usdgrade explain</title>'
            f"<style>{STYLE}</style></head><body>{''.join(body)}</body></html>\n")


def write_page(grade: dict, out: Path, case: Path | None = None, submission: Path | None = None) -> Path:
    """Write out/index.html (and the pictures); returns the page's path."""
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("check-*.png"):
        stale.unlink()
    checks = failing_checks(grade)
    figures: dict[int, str] = {}
    note = None
    if not checks:
        pass  # nothing failed: nothing to draw
    elif case is None or submission is None:
        note = "give --case CASE and --submission DIR (the graded ones) to draw them"
    else:
        note = graded_bytes_problem(grade, Path(case), Path(submission))
        if note is None:
            try:
                figures = draw_figures(checks, Path(case), Path(submission), out)
            except (RenderError, StageOpenError, OSError, ValueError) as error:
                note = f"the packages cannot be drawn: {type(error).__name__}: {error}"
    index = out / "index.html"
    index.write_text(page(grade, figures, note), encoding="utf-8")
    return index
