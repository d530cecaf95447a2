"""(6) Grasp and lift: for a gripper, a box sized from the reference's open fingers is closed on and
lifted; both packages are loaded again with the same box (reference's placement and size)."""
from usd_repair_verifier.physical import compare, probes
from usd_repair_verifier.physical.settings import SETTINGS, THRESHOLDS

from .conftest import grasp_pair, record, record_nulls, require_both_loaded, run_both

TEST = "grasp_and_lift"


def test_grasp_and_lift(pair):
    require_both_loaded(TEST, pair)
    setup = probes.gripper(pair.reference)
    if isinstance(setup, str):
        record_nulls(TEST, setup)
    setup["candidate_parent"] = pair.bodies.get(setup["parent"])
    unmatched = [label for label in setup["joints"] if pair.joints.get(label) is None]
    if unmatched:
        record_nulls(TEST, "the candidate has no joint matching the reference's finger joint " + ", ".join(unmatched))
    reference, candidate, refusal = grasp_pair(setup)
    if refusal:
        record_nulls(TEST, refusal)
    ref, cand = run_both(TEST, lambda loaded, joints: probes.grasp(loaded, SETTINGS, setup, joints), pair,
                         (reference, candidate))
    record(compare.grasp_and_lift(ref, cand, pair.size_m, THRESHOLDS, setup))
