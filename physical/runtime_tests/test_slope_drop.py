"""(5) Slope drop: the rest test's unactuated drop with gravity turned by the slope angle, 1 s."""
from usd_repair_verifier.physical import compare, probes
from usd_repair_verifier.physical.settings import SETTINGS, THRESHOLDS

from .conftest import record, require_both_loaded, run_both

TEST = "slope_drop"


def test_slope_drop(pair):
    require_both_loaded(TEST, pair)
    ref, cand = run_both(TEST, lambda loaded, _: probes.slope(loaded, SETTINGS), pair)
    record(compare.rest_and_contact(ref, cand, pair.body_pairs(), pair.reference.body_labels, pair.size_m,
                                    THRESHOLDS, SETTINGS.settle_window_s, test=TEST))
