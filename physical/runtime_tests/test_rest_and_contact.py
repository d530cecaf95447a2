"""(2) Rest and contact: dropped on the ground, no actuation, 1 s: finite, settles, where bodies end."""
from usd_repair_verifier.physical import compare, probes
from usd_repair_verifier.physical.property_results import PROPERTIES
from usd_repair_verifier.physical.settings import SETTINGS, THRESHOLDS

from .conftest import record, record_nulls, run_both

TEST = "rest_and_contact"


def test_rest_and_contact(pair):
    if pair.null_reason():
        record_nulls(TEST, PROPERTIES[TEST], pair.null_reason())
    ref, cand = run_both(TEST, lambda loaded, _: probes.rest(loaded, SETTINGS), pair)
    record(compare.rest_and_contact(ref, cand, pair.body_pairs(), pair.reference.body_labels, pair.size_m,
                                    THRESHOLDS, SETTINGS.settle_window_s))
