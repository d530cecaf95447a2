"""(2) Rest and contact: dropped on the ground, no actuation, 1 s: finite, settles, where bodies end."""
from usd_repair_verifier.physical import compare, probes
from usd_repair_verifier.physical.settings import SETTINGS, THRESHOLDS

from .conftest import record, require_both_loaded, run_both

TEST = "rest_and_contact"


def test_rest_and_contact(pair):
    require_both_loaded(TEST, pair)
    ref, cand = run_both(TEST, lambda loaded, _: probes.rest(loaded, SETTINGS), pair)
    record(compare.rest_and_contact(ref, cand, pair.body_pairs(), pair.reference.body_labels, pair.size_m,
                                    THRESHOLDS, SETTINGS.settle_window_s))
