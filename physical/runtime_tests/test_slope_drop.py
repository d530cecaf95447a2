"""(5) Slope drop: the rest test's unactuated drop with gravity turned by the slope angle, 1 s."""
from usd_repair_verifier.physical import compare, probes
from usd_repair_verifier.physical.property_results import PROPERTIES
from usd_repair_verifier.physical.settings import SETTINGS, THRESHOLDS

from .conftest import record, record_nulls, run_both

TEST = "slope_drop"


def test_slope_drop(pair):
    if pair.null_reason():
        record_nulls(TEST, PROPERTIES[TEST], pair.null_reason())
    ref, cand = run_both(TEST, lambda loaded, _: probes.slope(loaded, SETTINGS), pair)
    record(compare.rest_and_contact(ref, cand, pair.body_pairs(), pair.reference.body_labels, pair.size_m,
                                    THRESHOLDS, SETTINGS.settle_window_s, test=TEST))
