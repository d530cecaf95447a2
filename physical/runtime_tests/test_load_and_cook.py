"""(1) Load and cook: the engine accepts the asset and builds every collider; counts and masses."""
from usd_repair_verifier.physical import compare, probes
from usd_repair_verifier.physical.property_results import PROPERTIES, PropertyResult, null
from usd_repair_verifier.physical.settings import THRESHOLDS

from .conftest import record, record_nulls

TEST = "load_and_cook"


def test_load_and_cook(pair):
    if pair.reference_refusal:
        record_nulls(TEST, pair.null_reason())
    if pair.candidate_refusal:
        # the candidate failing to load IS the measurement of `loads`; the rest cannot be measured
        record([PropertyResult(TEST, "loads", False, True, None, False, pair.candidate_refusal)]
               + [null(TEST, n, pair.null_reason()) for n in PROPERTIES[TEST][1:]])
    record(compare.load_and_cook(probes.cook(pair.reference), probes.cook(pair.candidate), pair.bodies, THRESHOLDS))
