"""Scoring: the pytest plugin that turns the test report into reward.json and grade.json."""

from usd_repair_verifier import only_namespaced

only_namespaced(__name__)   # one name for each module: usd_repair_verifier.scoring...

VERIFIER_VERSION = "0.1.0"
