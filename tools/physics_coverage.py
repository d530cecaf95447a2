"""Write docs/physics-coverage.md, which check or gate measures each physics schema property.

    python tools/physics_coverage.py           # rewrite docs/physics-coverage.md
    python tools/physics_coverage.py --check   # exit 1 if the page is not what the table gives

The page is the table of profiles/physics_coverage.py, nothing else: tests/test_physics_coverage.py
runs the check, and walks the schema registry against the table itself.
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "physics-coverage.md"

HEADER = """\
# Physics schema coverage

Every property (attribute and relationship) of every physics schema the USD schema registry lists,
and what measures it. Written by `python tools/physics_coverage.py` from
`profiles/physics_coverage.py`; do not edit by hand. `tests/test_physics_coverage.py` walks the
registry at run time: a physics property the table does not decide about, or a row for a property
the registry no longer has, fails the suite, so a new usd-core or newton-usd-schemas cannot add one
silently.

**Measured by** names a check family's measure as `family.measure` (docs/measurement.md) or a
preservation gate (docs/preservation.md); these compare what lives beyond attributes:

| measure or gate | what it compares |
|---|---|
| `contact_pairs` | the collider pairs that may touch (filtered pairs, collision groups and their collections, jointed bodies' `collisionEnabled`), through the correspondence |
| `simulation_owners` | each body's, collider's, joint's and articulation's owning scenes, through the scene correspondence |
| `mass.inertia_orientation` | the orientation of a body's inertia tensor in a common frame (the moments: `mass.inertia`) |
| `simulator_relationships` | every relationship in a simulator namespace, its targets mapped through the correspondence |
| `joint_body_order` | which body is `body0` and which `body1` (Newton refuses a reversed joint) |
| `simulator_attributes` | every authored simulator attribute of a matched element (body, joint, collider, scene, the physics material bound to a collider, a prim whose relationship names one), in SI where UsdPhysics gives the unit; one added fails too |

`tests/test_newton_differential.py` checks the table against the simulator: on fixture references it
mutates one healthy property per row (a seeded sample), imports reference and mutant into Newton's
`ModelBuilder` and asserts that whatever changes the built model (masses, inertia tensors, centres of
mass, which shapes collide and which pairs are filtered, joint types, bodies, frames, axes, limits,
drives) lowers the grade below 1.0, and that the rows ignored here leave the model as it was.

A multiple-apply schema's properties are listed under its instance-name template
(`drive:__INSTANCE_NAME__:physics:stiffness` stands for `drive:angular:physics:stiffness`, ...). A
property an API schema gets from a schema it builds in is decided as there (**via**).
"""


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def render() -> str:
    from usd_repair_verifier.profiles import physics_coverage as table

    lines = [HEADER]
    counts = Counter((r.package, "measured" if r.measured_by else "ignored") for r in table.ROWS)
    lines += ["| package | schemas | properties | measured | ignored |", "|---|---|---|---|---|"]
    for package in sorted({r.package for r in table.ROWS}, key=lambda p: (p != table.USD_CORE, p)):
        schemas = [s for s in table.SCHEMAS if _package_of(table, s) == package]
        lines.append(f"| {package} | {len(schemas)} | {counts[package, 'measured'] + counts[package, 'ignored']} | "
                     f"{counts[package, 'measured']} | {counts[package, 'ignored']} |")
    lines.append("")
    for package in sorted({r.package for r in table.ROWS}, key=lambda p: (p != table.USD_CORE, p)):
        lines += [f"## {package}", ""]
        for schema in (s for s in table.SCHEMAS if _package_of(table, s) == package):
            rows = [r for r in table.ROWS if r.schema == schema]
            lines += [f"### {schema}", ""]
            if not rows:
                lines += ["No property of its own: what counts is where it is applied.", ""]
                continue
            lines += ["| property | kind | measured by | ignored because | via |", "|---|---|---|---|---|"]
            for r in rows:
                measured = ", ".join(f"`{m}`" for m in r.measured_by)
                lines.append(f"| `{_cell(r.property)}` | {r.kind} | {measured} | {_cell(r.ignored)} | {r.via} |")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _package_of(table, schema: str) -> str:
    if schema in table.SCHEMAS_WITHOUT_PROPERTIES:
        return table.SCHEMAS_WITHOUT_PROPERTIES[schema]
    return next(r.package for r in table.ROWS if r.schema == schema)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    args = parser.parse_args(argv)
    from generated_page import write_or_check   # beside this script

    return write_or_check(DOC, render(), "tools/physics_coverage.py", check=args.check)


if __name__ == "__main__":
    sys.exit(main())
