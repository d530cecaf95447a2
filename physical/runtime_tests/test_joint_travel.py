"""(4) Joint travel: every limited joint pushed both ways; the travel reached against the reference's."""
from usd_repair_verifier.physical import compare, probes
from usd_repair_verifier.physical.property_results import PROPERTIES
from usd_repair_verifier.physical.settings import SETTINGS, THRESHOLDS

from .conftest import record, record_nulls, run_both

TEST = "joint_travel"


def test_joint_travel(pair):
    if pair.null_reason():
        record_nulls(TEST, PROPERTIES[TEST], pair.null_reason())
    program = probes.travel_program(pair.reference, SETTINGS)
    if not program:
        record_nulls(TEST, PROPERTIES[TEST], "the reference has no limited revolute or prismatic joint")
    ref, cand = run_both(TEST, lambda loaded, joints: probes.travel(loaded, SETTINGS, program, joints), pair)
    record(compare.joint_travel(ref, cand, THRESHOLDS))
