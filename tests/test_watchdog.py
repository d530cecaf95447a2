"""The grade's time limit (scoring/watchdog.py): past it, an infrastructure-error grade and exit 3;
within it, nothing of the watchdog's. And the plugin's roles: one object each, registered while
a grade runs and gone after it."""
from __future__ import annotations

import json
import threading
import time

import pytest

from usd_repair_verifier.scoring.watchdog import Watchdog, time_limit_cause
from tests.test_infrastructure_errors import CASES, CASE, assert_infrastructure_error, case, grade, plugin  # noqa: F401

SLOW_SESSION_PLUGIN = '''
import time


def pytest_collection_finish(session):
    # The grade hangs (as inside a native call) well past its time limit.
    time.sleep(60)
'''


@pytest.mark.slow
def test_a_grade_past_its_time_limit_writes_an_infrastructure_error_and_exits_3(case, tmp_path):
    args, env = plugin(tmp_path, "usdgrade_slow_session", SLOW_SESSION_PLUGIN)
    out = tmp_path / "out"
    started = time.monotonic()
    r = grade(case, case / "input", out, "--time-limit", "2", *args, env=env)
    assert time.monotonic() - started < 50, "the watchdog did not end the hung grade"
    cause = assert_infrastructure_error(r, out)
    assert cause == time_limit_cause(2) == "time limit of 2 s exceeded: the grade did not finish"
    assert f"usdgrade: {cause}" in r.stderr
    assert r.grade["closed_book"] is None      # the run ended before the rule was applied


@pytest.mark.slow
def test_a_grade_within_its_time_limit_is_the_grade_without_one(case, tmp_path):
    timed = grade(case, case / "input", tmp_path / "timed", "--time-limit", "300")
    plain = grade(case, case / "input", tmp_path / "plain")
    assert timed.exit_code == plain.exit_code == 0
    drop = lambda g: {k: v for k, v in g.items() if k != "timings"}  # noqa: E731
    assert drop(timed.grade) == drop(plain.grade)
    assert timed.reward == plain.reward


def test_a_disarmed_watchdog_never_writes():
    written = []
    dog = Watchdog(0.2, lambda cause: written.append(cause) or 3, lambda: written.append("cleanup"))
    dog.arm()
    dog.disarm()
    time.sleep(0.5)
    assert written == []


def test_disarming_waits_for_an_expiry_already_writing(monkeypatch):
    """The expiry holds the lock while it writes: a session that finishes then cannot write too."""
    import usd_repair_verifier.scoring.watchdog as watchdog

    exits, writing, release = [], threading.Event(), threading.Event()
    monkeypatch.setattr(watchdog.os, "_exit", exits.append)

    def write(cause):
        writing.set()
        release.wait(5)
        return 3

    dog = Watchdog(0.01, write, lambda: None)
    dog.arm()
    assert writing.wait(5)
    disarmed = threading.Thread(target=dog.disarm)
    disarmed.start()
    disarmed.join(0.2)
    assert disarmed.is_alive()        # blocked until the expiry has written (and, for real, exited)
    release.set()
    disarmed.join(5)
    assert exits == [3]


ROLES_PLUGIN = '''
import json, os

from usd_repair_verifier.scoring import plugin


def pytest_sessionstart(session):
    config = session.config
    found = {name: config.pluginmanager.get_plugin(name) is not None for name in plugin.ROLE_NAMES}
    stash = {key: config.stash.get(getattr(plugin, key), None) is not None
             for key in ("COLLECTOR", "MEASURING", "RECORDER", "WRITER", "WATCHDOG")}
    with open(os.environ["ROLES_FILE"], "w") as f:
        json.dump({"registered": found, "stash": stash}, f)
'''


def test_each_role_is_one_object_registered_at_configure(case, tmp_path):
    args, env = plugin(tmp_path, "usdgrade_roles", ROLES_PLUGIN)
    env["ROLES_FILE"] = str(tmp_path / "roles.json")
    r = grade(case, case / "input", tmp_path / "out", "--time-limit", "300", *args, env=env)
    assert r.exit_code == 0, r.stderr
    roles = json.loads((tmp_path / "roles.json").read_text())
    assert all(roles["registered"].values()), roles
    assert all(roles["stash"].values()), roles


def test_without_a_case_no_role_is_registered(pytestconfig):
    from usd_repair_verifier.scoring import plugin

    assert pytestconfig.getoption("case") is None
    assert not any(pytestconfig.pluginmanager.get_plugin(name) for name in plugin.ROLE_NAMES)
    assert pytestconfig.stash.get(plugin.WRITER, None) is None


@pytest.mark.parametrize("name", ["check", "validity", "preservation", "objective"])
def test_records_ride_on_user_properties_into_json_reports_entry(name):
    """The recorder's hop: attach() on the test, json-report's `[{name: value}]`, read back typed."""
    from types import SimpleNamespace

    from usd_repair_verifier.profiles.result_record import CheckResult, GateResult
    from usd_repair_verifier.scoring.json_report import records_from_report
    from usd_repair_verifier.scoring.recorder import attach, record_of

    result = (GateResult.of("g", False, "because") if name != "check" else
              CheckResult.model_validate(_a_check_result()))
    node = SimpleNamespace(user_properties=[])
    attach(node, name, "the-id", result, timings={"validity": 0.5})
    assert record_of(node)["id"] == "the-id"
    entry = {"nodeid": "x::t", "outcome": "failed",
             "user_properties": [{key: value} for key, value in node.user_properties]}
    json.dumps(entry)  # what json-report checks before it keeps the properties
    (record,) = records_from_report({"tests": [entry]})
    assert (record.kind, record.id, record.result, record.timings) == (name, "the-id", result, {"validity": 0.5})


def _a_check_result() -> dict:
    from usd_repair_verifier.checks.registry import unmeasured

    return unmeasured("joint", "frame", "/a/b", "f1-joint.frame", "the submission is not valid").model_dump()
