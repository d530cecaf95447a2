"""`usdgrade explain OUT/grade.json --html [--out PAGE_DIR] [--case CASE --submission DIR]`.

One offline page (PAGE_DIR/index.html and its PNGs; no network, no script): the reward (labelled)
and its arithmetic, every failing check with its fault kind and its components as bars (the
candidate's error against the tolerance and against the input's error, in the component's unit:
the progress the repair made, visible) and a picture pair: reference and candidate from the same
camera, the check's parts highlighted (commands/explain_pictures.py); then every gate with its
reason, failing gates first.

Pictures are drawn only from the graded bytes: the case's profile and the submission must
have the digests grade.json recorded, else the page says why there are none. The pictures of an
earlier run for the same grade and bytes (PAGE_DIR/pictures.json names them) are kept and shown
when the page is made again without --case; only files that manifest names are ever replaced or
removed. Everything taken from grade.json is escaped (names come from the graded submission).
Same grade and bytes in, same page out: no clock, no absolute paths.
"""
from __future__ import annotations

import html
import json
import math
from pathlib import Path

from usd_repair_verifier.profiles.digest import tree_digest
from usd_repair_verifier.stage_snapshot.read import StageOpenError
from usd_repair_verifier.visual.render import RenderError

from usd_repair_verifier.profiles.result_record import ComponentResult, component_text
from usd_repair_verifier.scoring.grade_file import CheckEntry, Grade
from usd_repair_verifier.scoring.progress import progress
from usd_repair_verifier.scoring.readable import (GATE_KINDS, arithmetic, checks_not_run, failing_checks, gates_of,
                                                  not_run_by_kind, unmeasured_checks)

MAX_PICTURED = 20   # failing checks drawn (least progress first); the rest get bars only
MANIFEST = "pictures.json"   # the pictures this command drew into the page's folder, and for which grade

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1100px; color: #222; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; }
.reward { font-size: 34px; font-weight: 600; } .reward small { font-size: 15px; font-weight: 400; color: #555; }
.muted { color: #666; } code { font-size: 12.5px; }
table { border-collapse: collapse; width: 100%; } td, th { padding: 3px 8px; vertical-align: top; text-align: left; }
tr:nth-child(even) { background: #f6f6f8; }
.pass { color: #17803d; font-weight: 600; } .fail { color: #c0261b; font-weight: 600; } .notrun { color: #8a6d00; font-weight: 600; }
.check { border: 1px solid #ddd; border-radius: 6px; padding: 10px 14px; margin: 14px 0; }
.track { position: relative; height: 12px; background: #eceef2; border-radius: 3px; margin: 3px 0; width: 420px; }
.fill { position: absolute; left: 0; top: 0; bottom: 0; border-radius: 3px; }
.tol { position: absolute; top: -3px; bottom: -3px; width: 2px; background: #17803d; }
.bad { background: #d9483b; } .good { background: #2f9e57; } .input { background: #9aa0aa; } .progress { background: #3b6fd9; }
.bars td { padding: 1px 8px; } figure { display: inline-block; margin: 6px 10px 0 0; }
.track { max-width: 100%; } img { max-width: 100%; height: auto; } code { overflow-wrap: break-word; }
figcaption { font-size: 12px; color: #555; text-align: center; } img { border: 1px solid #ccc; }
"""


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _number(value, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        text = "∞" if math.isinf(value) else f"{value:.4g}"
    else:
        text = _e(value)
    return f"{text} {_e(unit)}" if unit and unit not in ("1", "flag", "log_ratio") else text


def _share(value, scale: float) -> float:
    """A bar's width in percent: value / scale, clipped; an infinite or missing error fills the track."""
    if not isinstance(value, (int, float)) or not math.isfinite(value) or scale <= 0:
        return 100.0
    return max(0.0, min(100.0, 100.0 * value / scale))


def component_bars(name: str, c: ComponentResult) -> str:
    """Input error (grey), candidate error (red above tolerance, green within) and the tolerance mark,
    labelled in the component's unit."""
    finite = [v for v in (c.error, c.input_error, c.tolerance) if isinstance(v, (int, float)) and math.isfinite(v)]
    scale = max(finite) if finite else 1.0
    tol = _share(c.tolerance, scale)
    css = "good" if c.passed else "bad"
    rows = []
    for label, value, kind in (("input", c.input_error, "input"), ("candidate", c.error, css)):
        rows.append(f'<tr><td>{label}</td><td><div class="track"><div class="fill {kind}" style="width:{_share(value, scale):.2f}%">'
                    f'</div><div class="tol" style="left:{tol:.2f}%"></div></div></td><td>{_number(value, c.unit)}</td></tr>')
    unit = f' <span class="muted">(error in {_e(c.unit)})</span>' if c.unit else ""
    return (f'<p>{_e(component_text(name, c, input_error=True))}{unit}</p><table class="bars">{"".join(rows)}</table>')


def gate_rows(grade: Grade) -> str:
    """Every gate, failing ones first, then those that passed, then those that did not run."""
    failing, passing, not_run = [], [], not_run_by_kind(grade)
    for kind in GATE_KINDS:
        for name, g in gates_of(grade, kind).items():
            verdict = '<span class="pass">pass</span>' if g.passed is True else '<span class="fail">FAIL</span>'
            row = f"<tr><td>{kind}</td><td>{verdict}</td><td><code>{_e(name)}</code></td><td>{_e(g.reason)}</td></tr>"
            (passing if g.passed is True else failing).append(row)
    unrun = []
    for kind in GATE_KINDS:
        names = not_run.get(kind) or ([] if gates_of(grade, kind) else ["(all)"])
        unrun += [f'<tr><td>{kind}</td><td><span class="notrun">not run</span></td><td><code>{_e(name)}</code></td>'
                  f'<td></td></tr>' for name in names]
    return ("<table><tr><th>gate</th><th></th><th>name</th><th>reason</th></tr>" + "".join(failing + passing + unrun)
            + "</table>")


def check_section(index: int, check: CheckEntry, figures: str) -> str:
    progress = check.progress
    bar = (f'<div class="track"><div class="fill progress" style="width:{_share(progress, 1.0):.2f}%"></div></div>'
           if isinstance(progress, (int, float)) else "")
    components = "".join(component_bars(name, c) for name, c in check.failing().items())
    return (f'<div class="check" id="check-{index}"><h3><code>{_e(check.id)}</code> on <code>{_e(check.target)}</code></h3>'
            f'<p>{_e(check.family)}.{_e(check.measure)}, fault <code>{_e(check.fault)}</code> '
            f'(kind <code>{_e(check.fault_kind or "not recorded")}</code>): {_e(check.details)}</p>'
            f'<p>semantic progress {_number(progress)} '
            f'<span class="muted">(0 at the input\'s error, 1 within tolerance)</span></p>{bar}{components}{figures}</div>')


def graded_bytes_problem(grade: Grade, case: Path, submission: Path) -> str | None:
    """Why the given case and submission are not what was graded (None: they are)."""
    from usd_repair_verifier.profiles.case import CaseError, load_case

    try:
        loaded = load_case(case)
    except CaseError as error:
        return f"the case cannot be read: {error}"
    if loaded.profile_digest != grade.profile.digest:
        return "the case's profile is not the one this grade used"
    recorded = grade.digests.candidate.digest
    if recorded is None or not submission.is_dir() or tree_digest(submission) != recorded:
        return "the submission's bytes differ from the graded ones (or the grade recorded no digest)"
    return None


def pictures_key(grade: Grade, checks: list[CheckEntry]) -> dict:
    """What a set of pictures shows: the graded case and bytes and the checks' targets, in order."""
    return {"profile": grade.profile.digest, "candidate": grade.digests.candidate.digest,
            "targets": [c.target for c in checks[:MAX_PICTURED]]}


def draw_figures(checks: list[CheckEntry], case: Path, submission: Path, out: Path
                 ) -> tuple[dict[int, str], list[str]]:
    """{check index: figure HTML} and the files written (check-<i>-<role>-<view>.png in `out`)."""
    from usd_repair_verifier.profiles.case import load_case

    from usd_repair_verifier.commands.explain_pictures import VIEW_LABELS, Pictures

    profile = load_case(case).profile
    pictures = Pictures(case / "reference", submission, dict(profile.sampling), dict(profile.correspondence),
                        dict(profile.variant_selections))
    figures, written = {}, []
    for index, check in progress(list(enumerate(checks[:MAX_PICTURED])), "drawing checks", "check"):
        target = str(check.target)
        drawn = pictures.draw(target)
        if not drawn.differs and not pictures.singled_out(target):
            figures[index] = ('<p class="muted">No picture applies: the reference and the candidate look the same '
                              'from every view and the check names no part to show.</p>')
            continue
        parts, pair = [], []
        for view, roles in drawn.views.items():
            if drawn.differs:
                pair = []
            for role, png in roles.items():
                name = f"check-{index}-{role}-{view}.png"
                (out / name).write_bytes(png)
                written.append(name)
                caption = f"{role}, {VIEW_LABELS[view]}" if drawn.differs else f"where: {VIEW_LABELS[view]}"
                pair.append(f'<figure><img src="{name}" width="340" height="340" alt="{_e(caption)}">'
                            f"<figcaption>{_e(caption)}</figcaption></figure>")
            if drawn.differs:
                parts.append("<div>" + "".join(pair) + "</div>")
        if not drawn.differs:   # the reference alone: its views side by side
            parts.append("<div>" + "".join(pair) + "</div>")
        note = _e(pictures.label(target))
        if not drawn.differs:
            note = (f"The reference and the candidate look the same from every view: a picture cannot show what "
                    f"{_e(check.family)}.{_e(check.measure)} measures. Only where it is, on the reference ({note}).")
        figures[index] = f'<p class="muted">{note}</p>' + "".join(parts)
    return figures, sorted(written)


def check_table(grade: Grade) -> str:
    """F and S check by check: which targeted checks passed, which failed, and each one's weight in
    the reward (every check counts 1/N in F and in S; R = 0.5 F + 0.5 S)."""
    from usd_repair_verifier.scoring.reward import WEIGHT_F, WEIGHT_S

    checks = grade.checks
    no_reward = grade.status.value in ("partial", "infrastructure_error")   # the arithmetic says why
    if not checks or no_reward or grade.targeted_repair_fraction is None or grade.targeted_semantic_score is None:
        return ""
    n = len(checks)
    rows = []
    for c in checks:
        passed = c.passed is True
        verdict = ('<span class="pass">passed</span>' if passed else '<span class="notrun">unmeasured</span>'
                   if c.passed is None else '<span class="fail">failed</span>')
        share = (WEIGHT_F * passed + WEIGHT_S * float(c.progress or 0.0)) / n
        rows.append(f"<tr><td><code>{_e(c.id)}</code></td><td><code>{_e(c.fault_kind or c.fault)}</code></td>"
                    f"<td>{verdict}</td><td>{int(passed)} of 1</td><td>{_number(c.progress)}</td>"
                    f"<td>1/{n}</td><td>{share:.4f}</td></tr>")
    passed_n = sum(c.passed is True for c in checks)
    total_s = sum(float(c.progress or 0.0) for c in checks)
    foot = (f'<tr><th colspan="3">all {n} targeted checks</th><th>F = {passed_n}/{n} = '
            f"{grade.targeted_repair_fraction:.4f}</th><th>S = {total_s:.4f}/{n} = "
            f"{grade.targeted_semantic_score:.4f}</th><th></th><th>R = {WEIGHT_F:g} F + {WEIGHT_S:g} S</th></tr>")
    return ('<table class="reward-checks"><tr><th>check</th><th>fault kind</th><th>result</th><th>in F</th>'
            '<th>progress (in S)</th><th>weight in F and in S</th><th>share of R</th></tr>'
            + "".join(rows) + foot + "</table>"
            '<p class="muted">F counts a check 1 when every component is within tolerance, else 0 (an unmeasured '
            "check counts 0); S takes its semantic progress, 0 at the input's error and 1 within tolerance. "
            "Each check's share of R is 0.5 x its F + 0.5 x its progress, over N. The gates then may cap or "
            "zero R (below).</p>")


def _head(grade: Grade) -> str:
    status = grade.status.value
    label = ("authored_usd (the reward, 0 to 1)" if grade.authored_usd is not None
             else "authored_usd: no reward" + (" (partial run)" if status == "partial" else ""))
    head = (f"<h1>usdgrade: {_e(grade.profile.id)}</h1>"
            f'<p class="reward">{_number(grade.authored_usd)} <small>{_e(label)}</small></p>'
            f"<p>status <b>{_e(status)}</b>, objective {_e(grade.objective_success)}, "
            f"scoring version {_e(grade.scoring_version)}</p>")
    if grade.infrastructure_error:
        head += f"<p class=\"fail\">infrastructure error (not a score): {_e(grade.infrastructure_error)}</p>"
    return head


def page(grade: Grade, figures: dict[int, str], pictures_note: str | None) -> str:
    checks = failing_checks(grade)
    how = arithmetic(grade)
    body = [_head(grade), "<h2>Reward</h2>", f"<p><code>{_e(how)}</code></p>" if how else "", check_table(grade)]
    body += [f"<p>{_e(reason)}</p>" for reason in grade.reasons]
    body.append("<h2>Failing checks</h2>")
    if pictures_note:
        body.append(f'<p class="muted">No pictures: {_e(pictures_note)}</p>')
    elif len(checks) > MAX_PICTURED:
        body.append(f'<p class="muted">Pictures for the first {MAX_PICTURED} of {len(checks)} failing checks.</p>')
    body += [check_section(i, c, figures.get(i, "")) for i, c in enumerate(checks)] or ["<p>none</p>"]
    for c in unmeasured_checks(grade):
        body.append(f"<p><code>{_e(c.id)}</code> unmeasured: {_e(c.details)}</p>")
    not_run = checks_not_run(grade)
    if not_run:
        body.append("<h2>Checks not run</h2><p>" + ", ".join(f"<code>{_e(i)}</code>" for i in not_run) + "</p>")
    body += ["<h2>Gates</h2>", gate_rows(grade)]
    passing = [c.id for c in grade.checks if c.passed is True]
    body.append("<h2>Passing checks</h2><p>" + (", ".join(f"<code>{_e(i)}</code>" for i in passing) or "none") + "</p>")
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1"><title>usdgrade explain</title>'
            f"<style>{STYLE}</style></head><body>{''.join(body)}</body></html>\n")


def _manifest(out: Path) -> dict:
    try:
        data = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _own_files(manifest: dict) -> list[str]:
    """The picture files an earlier run of this command wrote (plain names, nothing else)."""
    files = manifest.get("files")
    return [f for f in files if isinstance(f, str) and f.startswith("check-") and "/" not in f] \
        if isinstance(files, list) else []


def _pictures(grade: Grade, checks: list[CheckEntry], out: Path, case: Path | None,
              submission: Path | None) -> tuple[dict[int, str], str | None]:
    """The figures to show and, when there are none, why."""
    key = pictures_key(grade, checks)
    earlier = _manifest(out)
    if case is None or submission is None:
        if earlier.get("key") == key and isinstance(earlier.get("figures"), dict):
            kept = {int(i): html_ for i, html_ in earlier["figures"].items()}
            if all((out / f).is_file() for f in _own_files(earlier)):
                return kept, None   # drawn before from these very bytes: shown again
        return {}, "give --case CASE and --submission DIR (the graded ones) to draw them"
    note = graded_bytes_problem(grade, Path(case), Path(submission))
    if note is not None:
        return {}, note
    try:
        figures, written = draw_figures(checks, Path(case), Path(submission), out)
    except (RenderError, StageOpenError, OSError, ValueError) as error:
        return {}, f"the packages cannot be drawn: {type(error).__name__}: {error}"
    for stale in set(_own_files(earlier)) - set(written):
        (out / stale).unlink(missing_ok=True)   # ours, from an earlier grade's page
    (out / MANIFEST).write_text(json.dumps({"key": key, "files": written, "figures": figures}, indent=1,
                                           sort_keys=True) + "\n", encoding="utf-8")
    return figures, None


def write_page(grade: Grade, out: Path, case: Path | None = None, submission: Path | None = None) -> Path:
    """Write out/index.html (and the pictures); returns the page's path. Without --case and
    --submission the pictures drawn earlier for the same grade are kept and shown; otherwise the
    page says, at the top of its failing checks, why it has none."""
    out.mkdir(parents=True, exist_ok=True)
    checks = failing_checks(grade)
    figures, note = _pictures(grade, checks, out, case, submission) if checks else ({}, None)
    index = out / "index.html"
    index.write_text(page(grade, figures, note), encoding="utf-8")
    return index
