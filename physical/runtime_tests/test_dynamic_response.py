"""(3) Dynamic response: one joint torque program (amplitudes from the reference's joint inertia), 0.5 s."""
import numpy as np

from usd_repair_verifier.physical import compare, probes
from usd_repair_verifier.physical.settings import SETTINGS, THRESHOLDS

from .conftest import program_of, record, record_nulls, require_both_loaded, run_both

TEST = "dynamic_response"


def test_dynamic_response(pair):
    require_both_loaded(TEST, pair)
    program = program_of(TEST, probes.dynamic_program, pair, "the reference has no revolute or prismatic joint to drive")
    ref, cand = run_both(TEST, lambda loaded, joints: probes.dynamic(loaded, SETTINGS, program, joints), pair)
    if not np.all(np.isfinite(ref["positions"])):
        record_nulls(TEST, "the reference itself diverged under the torque program")
    shown = {label: {"amplitude": p["amplitude"], "phase_rad": p["phase_rad"],
                     "candidate_joint": pair.joints.get(label)} for label, p in program.items()}
    record(compare.dynamic_response(ref, cand, pair.body_pairs(), pair.reference.body_labels, pair.size_m,
                                    THRESHOLDS, shown))
