"""(4) Joint travel: every limited joint pushed both ways; the travel reached against the reference's."""
from usd_repair_verifier.physical import compare, probes
from usd_repair_verifier.physical.settings import SETTINGS, THRESHOLDS

from .conftest import program_of, record, require_both_loaded, run_both

TEST = "joint_travel"


def test_joint_travel(pair):
    require_both_loaded(TEST, pair)
    program = program_of(TEST, probes.travel_program, pair, "the reference has no limited revolute or prismatic joint")
    ref, cand = run_both(TEST, lambda loaded, joints: probes.travel(loaded, SETTINGS, program, joints), pair)
    record(compare.joint_travel(ref, cand, THRESHOLDS))
