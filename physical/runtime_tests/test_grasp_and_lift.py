"""(6) Grasp and lift: for a gripper, a box sized from the reference's open fingers is closed on and
lifted; both packages are loaded again with the same box (reference's placement and size)."""
from usd_repair_verifier.physical import compare, engine, probes
from usd_repair_verifier.physical.property_results import PROPERTIES
from usd_repair_verifier.physical.settings import SETTINGS, THRESHOLDS

from .conftest import grasp_pair, record, record_nulls

TEST = "grasp_and_lift"


def test_grasp_and_lift(pair):
    if pair.null_reason():
        record_nulls(TEST, PROPERTIES[TEST], pair.null_reason())
    setup = probes.gripper(pair.reference)
    if isinstance(setup, str):
        record_nulls(TEST, PROPERTIES[TEST], setup)
    setup["candidate_parent"] = pair.bodies.get(setup["parent"])
    unmatched = [label for label in setup["joints"] if pair.joints.get(label) is None]
    if unmatched:
        record_nulls(TEST, PROPERTIES[TEST], "the candidate has no joint matching the reference's finger joint "
                                             + ", ".join(unmatched))
    reference, candidate, refusal = grasp_pair(setup)
    if refusal:
        record_nulls(TEST, PROPERTIES[TEST], refusal)
    try:
        ref = probes.grasp(reference, SETTINGS, setup, None)
    except engine.EngineRefusal as error:
        record_nulls(TEST, PROPERTIES[TEST], f"reference itself failed to run: {error}")
    try:
        cand = probes.grasp(candidate, SETTINGS, setup, pair.joints)
    except engine.EngineRefusal as error:
        record_nulls(TEST, PROPERTIES[TEST], f"engine failed on the candidate: {error}")
    record(compare.grasp_and_lift(ref, cand, pair.size_m, THRESHOLDS, setup))
