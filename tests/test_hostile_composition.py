"""Hostile submissions that are small on disk and huge once composed.

The authored-spec budgets (prim specs, points) do not see composition: a few
specs referencing each other compose exponentially many prims, and one mesh
referenced many times composes its triangles as often. The validity gate's
worker composes the stage first, counts composed prims, instances, points and
triangles against budgets sized from the reference, and refuses (invalid, with
the counts) before the grading process composes anything. Each case must finish
in seconds and end `invalid` on `resource_limits`, never as an infrastructure
error; a modest, legitimate use of composition stays gradable.

Graded end to end through the operator's command, like test_hostile_submissions.py
(whose helpers and outcome table this file shares).
"""
from __future__ import annotations

import time

import pytest

from tests.test_hostile_submissions import (  # noqa: F401 (outcome_table is a fixture)
    ANT,
    CABINET,
    add_sublayer,
    add_to_root_text,
    assert_graded_no_better,
    assert_rejected,
    copy_of,
    grade,
    outcome_table,
)
from tests.variants import write_file as write

# A grade of one of these must be quick: the budget stops the count, not a timeout.
QUICK_SECONDS = 60


def reference_tree(depth: int, arc: str = "references", leaf: str = "", prefix: str = "N") -> str:
    """usda prims N0..N{depth-1}: each holds two children that compose the next level,
    so /N0 composes 2^depth - 1 prims (plus whatever `leaf` adds at the bottom)."""
    prims = []
    for i in range(depth - 1):
        prims.append(
            f'def Xform "{prefix}{i}"\n{{\n'
            f'    def Xform "a" ({arc} = </{prefix}{i + 1}>)\n    {{\n    }}\n'
            f'    def Xform "b" ({arc} = </{prefix}{i + 1}>)\n    {{\n    }}\n}}')
    prims.append(f'def Xform "{prefix}{depth - 1}"\n{{\n{leaf}\n}}')
    return "\n".join(prims)


def grid_mesh(name: str, n: int) -> str:
    """A usda Mesh: an n x n grid of quads, (n+1)^2 points and 2 n^2 triangles."""
    points = ", ".join(f"({i}, {j}, 0)" for i in range(n + 1) for j in range(n + 1))
    indices = ", ".join(
        f"{i * (n + 1) + j}, {(i + 1) * (n + 1) + j}, {(i + 1) * (n + 1) + j + 1}, {i * (n + 1) + j + 1}"
        for i in range(n) for j in range(n))
    counts = ", ".join("4" for _ in range(n * n))
    return (f'    def Mesh "{name}"\n    {{\n        int[] faceVertexCounts = [{counts}]\n'
            f'        int[] faceVertexIndices = [{indices}]\n        point3f[] points = [{points}]\n    }}')


def _timed_grade(name, case, submission, tmp_path, table):
    start = time.monotonic()
    r = grade(name, case, submission, tmp_path / "out", table)
    assert time.monotonic() - start < QUICK_SECONDS, f"{name} took {time.monotonic() - start:.0f} s"
    return r


# --- builders: (tmp_path) -> submission -----------------------------------------------

def _ant_binary_tree_2_21(tmp):
    """A binary reference tree: 21 specs referencing each other compose 2^21 prims."""
    pkg = copy_of(ANT, "reference", tmp)
    add_to_root_text(pkg, reference_tree(21))
    return pkg


def _cabinet_binary_tree_2_30(tmp):
    """Deeper still (2^30 prims): it would exhaust any time limit; the budget stops it at once."""
    pkg = copy_of(CABINET, "reference", tmp)
    add_to_root_text(pkg, reference_tree(30))
    return pkg


def _ant_payload_tree(tmp):
    """The same explosion through payloads, which the grade loads (LoadAll)."""
    pkg = copy_of(ANT, "reference", tmp)
    add_to_root_text(pkg, reference_tree(20, arc="payload"))
    return pkg


def _ant_inherits_tree(tmp):
    """Through class inheritance: class prims compose like any other."""
    pkg = copy_of(ANT, "reference", tmp)
    add_to_root_text(pkg, reference_tree(20, arc="inherits"))
    return pkg


def _ant_tree_in_sublayer_file(tmp):
    """The tree in its own small layer, sublayered from a subfolder."""
    pkg = copy_of(ANT, "reference", tmp)
    write(pkg / "extra" / "tree.usda", "#usda 1.0\n\n" + reference_tree(20, prefix="T"))
    add_sublayer(pkg, "./extra/tree.usda")
    return pkg


def _ant_external_layer_tree(tmp):
    """Each level in a layer of its own referencing the next layer twice."""
    pkg = copy_of(ANT, "reference", tmp)
    depth = 18
    for i in range(depth):
        body = ("" if i == depth - 1 else
                f'    def Xform "a" (references = @./level{i + 1}.usda@</L>)\n    {{\n    }}\n'
                f'    def Xform "b" (references = @./level{i + 1}.usda@</L>)\n    {{\n    }}\n')
        write(pkg / "levels" / f"level{i}.usda", f'#usda 1.0\n\ndef Xform "L"\n{{\n{body}}}\n')
    add_to_root_text(pkg, 'def Xform "Levels" (references = @./levels/level0.usda@</L>)\n{\n}')
    return pkg


def _ant_mesh_copies(tmp):
    """A same-layer reference tree of a mesh, scaled down: a 5,000-triangle mesh composed 63 times through a same-layer
    reference tree (32 copies under the top level): 315k composed triangles from one small layer (the ant has none)."""
    pkg = copy_of(ANT, "reference", tmp)
    add_to_root_text(pkg, reference_tree(6, leaf=grid_mesh("Big", 50), prefix="M"))
    return pkg


def _cabinet_mesh_copies_in_sublayer(tmp):
    """Another asset (centimetres, 260 triangles), the copies in a sublayer file."""
    pkg = copy_of(CABINET, "reference", tmp)
    write(pkg / "extra" / "copies.usda", "#usda 1.0\n\n" + reference_tree(8, leaf=grid_mesh("Big", 60), prefix="C"))
    add_sublayer(pkg, "./extra/copies.usda")
    return pkg


def _ant_instance_flood(tmp):
    """Hundreds of instanceable prims: each one multiplies its prototype."""
    pkg = copy_of(ANT, "reference", tmp)
    proto = 'def Xform "Proto"\n{\n    def Xform "Leaf"\n    {\n    }\n}'
    copies = "\n".join(f'def Xform "Inst{i}" (instanceable = true\n    references = </Proto>)\n{{\n}}'
                       for i in range(300))
    add_to_root_text(pkg, proto + "\n" + copies)
    return pkg


def _ant_instanced_tree(tmp):
    """An instanced binary tree: Usd shares the prototypes, the grade walks every proxy."""
    pkg = copy_of(ANT, "reference", tmp)
    prims = []
    depth = 22
    for i in range(depth - 1):
        prims.append(
            f'def Xform "I{i}"\n{{\n'
            f'    def Xform "a" (instanceable = true\n        references = </I{i + 1}>)\n    {{\n    }}\n'
            f'    def Xform "b" (instanceable = true\n        references = </I{i + 1}>)\n    {{\n    }}\n}}')
    prims.append(f'def Xform "I{depth - 1}"\n{{\n}}')
    add_to_root_text(pkg, "\n".join(prims))
    return pkg


COMPOSITION_BOMBS = {
    "ant_reference_tree_2_21_prims": (ANT, _ant_binary_tree_2_21, ("more than 1550 prims", "reference's 55")),
    "cabinet_reference_tree_2_30_prims": (CABINET, _cabinet_binary_tree_2_30, ("prims", "reference's 53")),
    "ant_payload_tree_2_20_prims": (ANT, _ant_payload_tree, ("more than 1550 prims",)),
    "ant_inherits_tree_2_20_prims": (ANT, _ant_inherits_tree, ("more than 1550 prims",)),
    "ant_tree_in_sublayer_file": (ANT, _ant_tree_in_sublayer_file, ("more than 1550 prims",)),
    "ant_tree_of_external_layers": (ANT, _ant_external_layer_tree, ("more than 1550 prims",)),
    "ant_63_copies_of_a_mesh": (ANT, _ant_mesh_copies, ("more than 100000 triangles", "reference's 0")),
    "cabinet_128_copies_of_a_mesh_in_sublayer": (CABINET, _cabinet_mesh_copies_in_sublayer, ("points",)),
    "ant_300_instanceable_prims": (ANT, _ant_instance_flood, ("more than 110 instances", "reference's 1")),
    "ant_instanced_tree_2_22": (ANT, _ant_instanced_tree, ("composed stage",)),
}


@pytest.mark.parametrize("name", list(COMPOSITION_BOMBS))
def test_composition_bomb_is_refused_before_grading(name, tmp_path, outcome_table):
    case, build, words = COMPOSITION_BOMBS[name]
    r = _timed_grade(name, case, build(tmp_path), tmp_path, outcome_table)
    assert_rejected(r, "invalid", "resource_limits", ("composed stage", "refused before the grade composes it")
                    + words)
    # The grading process never composed the stage: nothing was read past validity.
    assert "candidate_snapshot" not in r.grade["timings"], r.grade["timings"]


def test_modest_composition_stays_gradable(tmp_path, outcome_table):
    """A small reference tree (Small0 composes 63 prims, Small1..5 another 57): within budget, graded."""
    submission = copy_of(ANT, "reference", tmp_path)
    add_to_root_text(submission, reference_tree(6, prefix="Small"))
    r = _timed_grade("ant_reference_plus_small_reference_tree", ANT, submission, tmp_path, outcome_table)
    assert_graded_no_better(r, 1.0)
    reason = r.grade["validity"]["resource_limits"]["reason"]
    assert "composed: 175 prims" in reason and "budgets: 1550 prims" in reason, reason


# --- the budgets themselves ------------------------------------------------------------

def test_budgets_are_sized_from_the_reference_and_bounded_absolutely():
    from usd_repair_verifier.gates.validity import composed_budget

    absolute = {"prims": 2_000, "instances": 50, "points": 10**6, "triangles": 10**6}
    reference = {"prims": 55, "instances": 1, "points": 0, "triangles": 300_000}
    assert composed_budget.budgets(None, absolute) == absolute
    assert composed_budget.budgets(reference, absolute) == {
        "prims": 1_550, "instances": 50, "points": 100_000, "triangles": 10**6}


def test_a_profile_may_lower_the_absolute_composed_limits(tmp_path):
    """max_composed_prims below 10 x + 1000: a 2^6 tree the default budget allows is refused, with the counts."""
    from usd_repair_verifier.gates.validity import ResourceLimits, check_submission

    submission = copy_of(ANT, "reference", tmp_path)
    add_to_root_text(submission, reference_tree(6, prefix="Small"))
    reference = ANT / "reference" / "ant.usda"
    assert check_submission(submission, ResourceLimits(), reference=reference).valid
    lowered = check_submission(submission, ResourceLimits(max_composed_prims=100), reference=reference)
    rule = lowered.rule("resource_limits")
    assert not lowered.valid and not rule.passed
    assert "more than 100 prims" in rule.reason and "counted so far: 101 prims" in rule.reason, rule.reason
    # The reference itself is within the lowered limit: it still passes.
    assert check_submission(ANT / "reference", ResourceLimits(max_composed_prims=100), reference=reference).valid


def test_reference_cycles_compose_and_count(tmp_path):
    """A prim referencing itself or its ancestor is a composition error, not a bomb: counted, still valid."""
    from usd_repair_verifier.gates.validity import ResourceLimits, check_submission

    submission = copy_of(ANT, "reference", tmp_path)
    add_to_root_text(submission, 'def Xform "A" (references = </A>)\n{\n}\n'
                                 'def Xform "P"\n{\n    def Xform "Q" (references = </P>)\n    {\n    }\n}')
    report = check_submission(submission, ResourceLimits(), reference=ANT / "reference" / "ant.usda")
    assert report.valid, report.reason
    assert "composed: 58 prims" in report.rule("resource_limits").reason
