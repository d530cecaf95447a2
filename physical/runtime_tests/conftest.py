"""The runtime session: loads reference and candidate once, matches them, collects property results.

Configured by a JSON file named in $USDGRADE_PHYSICAL_CONFIG (written by physical/grade.py):
{"reference": root layer, "candidate": root layer, "results": where to write the results,
"variant_selections": the case's, every stage is composed with them}.
Each test records its PropertyResults before asserting, so the results file holds what was
measured whether the test passed or failed; a property that could not be measured is null with
its reason and the test is skipped with that reason.
"""
from __future__ import annotations

import json
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from usd_repair_verifier.physical import engine
from usd_repair_verifier.physical.property_results import PROPERTIES, PropertyResult, _clean, null
from usd_repair_verifier.physical.settings import SETTINGS, THRESHOLDS

CONFIG_ENV = "USDGRADE_PHYSICAL_CONFIG"
RESULTS: list[dict] = []
ERRORS: list[str] = []
TIMINGS: dict[str, float] = {}
CACHE: dict[str, object] = {}
EXIT: dict[str, int] = {}   # the session's exit status, once its results are written


def _config() -> dict:
    return json.loads(Path(os.environ[CONFIG_ENV]).read_text(encoding="utf-8"))


@dataclass
class Pair:
    reference: engine.Loaded | None
    candidate: engine.Loaded | None
    reference_refusal: str | None
    candidate_refusal: str | None
    bodies: dict = field(default_factory=dict)        # reference body label -> candidate body label | None
    joints: dict = field(default_factory=dict)        # reference joint label -> candidate joint label | None
    size_m: float = 1.0
    correspondence: str = "usd_repair_verifier.stage_snapshot.correspondence (structure, pose and shape)"

    def body_pairs(self) -> list[tuple[int, int | None]]:
        cand_index = {label: i for i, label in enumerate(self.candidate.body_labels)}
        return [(i, cand_index.get(self.bodies.get(label))) for i, label in enumerate(self.reference.body_labels)]

    def null_reason(self) -> str | None:
        if self.reference_refusal:
            return f"reference itself unloadable: {self.reference_refusal}"
        if self.candidate_refusal:
            return f"engine refused the candidate: {self.candidate_refusal}"
        return None


def _load(root: str, selections: dict | None = None):
    try:
        return engine.load(Path(root), SETTINGS, selections), None
    except engine.EngineRefusal as refusal:
        return None, str(refusal)


@pytest.fixture(scope="session")
def pair() -> Pair:
    config = _config()
    t0 = time.monotonic()
    from usd_repair_verifier.stage_snapshot.variant_selections import applied_selections

    # The case's selections and the named prims' other sets held at the reference's: as the grade reads them.
    selections = applied_selections(config["reference"], config.get("variant_selections") or {})
    reference, ref_refusal = _load(config["reference"], selections)
    candidate, cand_refusal = _load(config["candidate"], selections)
    TIMINGS["load_s"] = round(time.monotonic() - t0, 3)
    result = Pair(reference, candidate, ref_refusal, cand_refusal)
    if reference is not None and candidate is not None:
        from usd_repair_verifier.stage_snapshot.correspondence import correspond
        from usd_repair_verifier.stage_snapshot.read import read_snapshot

        t0 = time.monotonic()
        ref_snap, cand_snap = (read_snapshot(config["reference"], variant_selections=selections),
                               read_snapshot(config["candidate"], variant_selections=selections))
        match = correspond(ref_snap, cand_snap)
        result.bodies = {label: match.bodies.get(label) for label in reference.body_labels}
        result.joints = {label: match.joints.get(label) for label in reference.joint_labels}
        result.size_m = float(ref_snap.size)
        TIMINGS["correspondence_s"] = round(time.monotonic() - t0, 3)
    CACHE["pair"] = result
    return result


def grasp_pair(setup: dict):
    """Reference and candidate loaded again with the grasp test's box (the reference's size and
    placement on both): (reference, candidate, refusal or None)."""
    from usd_repair_verifier.stage_snapshot.variant_selections import applied_selections

    config = _config()
    selections = applied_selections(config["reference"], config.get("variant_selections") or {})
    box = dict(setup["box"], density=SETTINGS.grasp_box_density_kg_m3 * CACHE["pair"].reference.facts.meters_per_unit ** 3)
    loaded = []
    for side in ("reference", "candidate"):
        try:
            loaded.append(engine.load(Path(config[side]), SETTINGS, selections, grasp_box=box))
        except engine.EngineRefusal as refusal:
            return None, None, f"the engine refused the {side} with the grasp box: {refusal}"
    return loaded[0], loaded[1], None


def record(results: list[PropertyResult]) -> None:
    RESULTS.extend(r.to_json() for r in results)
    failed = [r for r in results if r.passed is False]
    if failed:
        pytest.fail("; ".join(f"{r.name}: {r.value} vs {r.threshold}" for r in failed), pytrace=False)
    if all(r.passed is None for r in results):
        pytest.skip(results[0].reason or "not measured")


def record_nulls(test: str, reason: str) -> None:
    """Every property of the test null with the reason (the test is skipped with it)."""
    record([null(test, n, reason) for n in PROPERTIES[test]])


def require_both_loaded(test: str, pair_: Pair) -> None:
    """The test's properties null (and the test skipped) unless the engine loaded both packages."""
    if pair_.null_reason():
        record_nulls(test, pair_.null_reason())


def program_of(test: str, make_program, pair_: Pair, missing: str) -> dict:
    """make_program(reference, SETTINGS): what the test drives, planned on the reference; the
    test's properties null with `missing` (and the test skipped) when there is nothing to drive."""
    program = make_program(pair_.reference, SETTINGS)
    if not program:
        record_nulls(test, missing)
    return program


def run_both(test: str, probe, pair_: Pair, loaded: tuple | None = None):
    """probe(loaded, joint_map) on the reference (map None) then the candidate (the correspondence);
    an engine failure while stepping nulls the test's properties with the reason. `loaded`: the
    (reference, candidate) to run instead of the pair's own (the grasp test loads them again)."""
    reference, candidate = loaded or (pair_.reference, pair_.candidate)
    try:
        ref = probe(reference, None)
    except engine.EngineRefusal as refusal:
        record_nulls(test, f"reference itself failed to run: {refusal}")
    try:
        cand = probe(candidate, pair_.joints)
    except engine.EngineRefusal as refusal:
        record_nulls(test, f"engine failed on the candidate: {refusal}")
    return ref, cand


def pytest_runtest_makereport(item, call):
    # a probe that raised is a verifier (or engine) fault: an infrastructure error, never a score
    if call.excinfo is not None and call.when == "call" and not call.excinfo.errisinstance(
            (pytest.fail.Exception, pytest.skip.Exception)):
        ERRORS.append(f"{item.name}: {call.excinfo.typename}: {call.excinfo.value}\n"
                      + "".join(traceback.format_tb(call.excinfo.tb)[-3:]))
    if call.excinfo is not None and call.when == "setup" and not call.excinfo.errisinstance(pytest.skip.Exception):
        ERRORS.append(f"{item.name} setup: {call.excinfo.typename}: {call.excinfo.value}")


def pytest_sessionfinish(session, exitstatus):
    if CONFIG_ENV not in os.environ:
        return
    config = _config()
    pair_ = CACHE.get("pair")
    payload = {
        "results": RESULTS, "errors": ERRORS, "timings": TIMINGS,
        "settings": SETTINGS.to_json(), "thresholds": THRESHOLDS.to_json(), "versions": engine.versions(),
        "reference_refusal": getattr(pair_, "reference_refusal", None),
        "candidate_refusal": getattr(pair_, "candidate_refusal", None),
        "correspondence": None if pair_ is None or pair_.reference is None or pair_.candidate is None else {
            "method": pair_.correspondence, "bodies": pair_.bodies, "asset_size_m": pair_.size_m},
        "engine_warnings": None if pair_ is None else {
            "reference": getattr(pair_.reference, "warnings", None), "candidate": getattr(pair_.candidate, "warnings", None)},
        "corrections": None if pair_ is None else {
            side: None if loaded is None else [_clean(c) for c in loaded.corrections]
            for side, loaded in (("reference", pair_.reference), ("candidate", pair_.candidate))},
        "ground_m": None if pair_ is None else {
            "reference": getattr(pair_.reference, "ground_height_m", None),
            "candidate": getattr(pair_.candidate, "ground_height_m", None)},
        "exitstatus": int(exitstatus),
    }
    Path(config["results"]).write_text(json.dumps(payload, default=_json_default, sort_keys=True), encoding="utf-8")
    EXIT["status"] = int(exitstatus)


def pytest_unconfigure(config):
    """The session is over and its results are written: leave without the interpreter's teardown,
    where the engine's native libraries spent over 3 s of every run (measured), and no result
    can change. pytest's own output is flushed first."""
    if CONFIG_ENV in os.environ and "status" in EXIT:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT["status"])


def _json_default(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    return str(value)
