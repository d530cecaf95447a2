"""The table bench/bench_grade.py prints: one row per asset, the grade's time split by stage."""
from __future__ import annotations

# column -> the grade.json timings it sums (reference_ and candidate_ prefixed ones both)
SPLIT = {
    "imports": ("imports",),
    "valid": ("validity",),
    "open": ("reference_open", "candidate_open"),
    "snap": ("reference_bodies_and_joints", "candidate_bodies_and_joints"),
    "sampl": ("reference_visible_parts", "candidate_visible_parts"),
    "coll": ("reference_colliders", "candidate_colliders"),
    "mass": ("reference_mass", "candidate_mass"),
    "corr": ("correspondence",),
    "checks": ("tests", "measurements"),
    "score": ("scoring",),
}


def split_columns(timings: dict, grade_wall: float | None) -> list[float | None]:
    total = timings.get("total_s")
    outside = None if grade_wall is None or total is None else grade_wall - total
    columns = [outside]
    for keys in SPLIT.values():
        found = [timings[f"{k}_s"] for k in keys if f"{k}_s" in timings]
        columns.append(sum(found) if found else None)
    return columns


def fmt(value, spec=".2f", none="-"):
    return none if value is None else format(value, spec)


def times(value):
    return "-" if value is None else f"{value:.1f}x"


def ratio(a, b):
    return None if a is None or not b else a / b


def print_table(rows: list, start_up: float | None) -> None:
    print()
    print(f"start-up (python -c 'import pxr, scipy, trimesh'): {fmt(start_up)} s")
    head = (f"{'asset':<22}{'bodies':>7}{'tris':>9}{'grade s':>9}{'floor s':>9}{'peer s':>8}"
            f"{'g/floor':>9}{'g/peer':>8}{'peak MB':>9}  split s: outside " + " ".join(SPLIT))
    print(head)
    print("-" * len(head))
    for r in rows:
        split = " ".join(fmt(v) for v in split_columns(r.split, r.grade))
        print(f"{r.label:<22}{fmt(r.bodies, 'd'):>7}{fmt(r.triangles, 'd'):>9}{fmt(r.grade):>9}{fmt(r.floor):>9}"
              f"{fmt(r.peer):>8}{times(ratio(r.grade, r.floor)):>9}{times(ratio(r.grade, r.peer)):>8}"
              f"{fmt(r.peak_mb, '.0f'):>9}  {split}")
    for r in rows:
        for note in r.notes:
            print(f"  {r.label}: {note}")
    print()
    for r in rows:
        if r.grade is not None and r.floor is not None:
            print(f"ratio {r.label}: grade/floor = {r.grade / r.floor:.2f}x"
                  + (f", grade/peer = {r.grade / r.peer:.2f}x" if r.peer else ""))
