"""Re-grading at scale: the warm grader, the local pool and `usdgrade regrade` (the Ray engine on
real clusters: tests/test_regrade_cluster.py).

The warm grader's grade.json must be the fresh `pytest checks` process's, byte for byte apart
from "timings"; the pool must contain what a session cannot (a hang, a dying worker); the
command must resume, select and summarise.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from usd_repair_verifier.regrade import pool as pool_module
from usd_repair_verifier.scoring.run import run_grade
from usd_repair_verifier.regrade.warm import Item, WarmGrader

REPO = Path(__file__).resolve().parent.parent
CASES = REPO / "fixtures" / "cases"
DEMO = REPO / "fixtures" / "submissions" / "ant_two_joint_faults_one_repair"


def _without_timings(text: str) -> str:
    grade = json.loads(text)
    grade.pop("timings")
    return json.dumps(grade, sort_keys=True)


def _fresh(case: Path, submission: Path, out: Path) -> str:
    run_grade(case, submission, out)
    return (out / "grade.json").read_text()


@pytest.fixture(scope="module")
def grader():
    # Closed after the module: its validity fork server is process-wide, and a later test in the
    # same worker (its environment monkeypatched) must get a fresh validity worker again.
    warm = WarmGrader()
    yield warm
    warm.close()


def _invalid_package(tmp: Path) -> Path:
    pkg = tmp / "invalid"
    pkg.mkdir(parents=True)
    (pkg / "robot.usda").write_text('#usda 1.0\n(\n    subLayers = [@../outside.usda@]\n)\n')
    return pkg


SUBMISSIONS = [  # (case, submission: a side of the case, or a path)
    ("ant_two_joint_faults", DEMO),
    ("ant_two_joint_faults", "reference"),
    ("ant_two_joint_faults", "input"),
    ("cabinet_drawer_door", "input"),
    ("cabinet_hierarchy_and_visual", "reference"),   # a textured asset
    ("gripper_hull_and_mass", "reference"),
    ("gen_cheetah_2", "input"),                     # a broken asset path: composition errors
]


def test_a_warm_grade_is_the_fresh_command_byte_for_byte(grader, tmp_path):
    """The inner loop's one comparison (the full suite compares several cases, below)."""
    warm = grader.grade(Item("item", str(CASES / "ant_two_joint_faults"), str(DEMO)))
    _fresh(CASES / "ant_two_joint_faults", DEMO, tmp_path / "fresh")
    assert _without_timings(warm.grade_text) == _without_timings((tmp_path / "fresh" / "grade.json").read_text())
    assert json.loads(warm.reward_text) == json.loads((tmp_path / "fresh" / "reward.json").read_text())
    assert warm.exit_code == 0 and not warm.recycle


@pytest.mark.slow
def test_warm_grades_are_the_fresh_command_byte_for_byte(grader, tmp_path):
    """Several cases, one process: references read once, per-item state never carried over."""
    items = [(case, side if isinstance(side, Path) else CASES / case / side) for case, side in SUBMISSIONS]
    items.append(("hopper_body_and_com", _invalid_package(tmp_path)))
    items.append(("ant_two_joint_faults", DEMO))  # again, after other cases: a cache hit
    fresh_outs: dict = {}   # (case, submission) -> its fresh grade's folder: the repeat is not graded fresh again
    for n, (case, submission) in enumerate(items):
        warm = grader.grade(Item(f"item-{n}", str(CASES / case), str(submission)))
        out = fresh_outs.get((case, str(submission)))
        if out is None:
            out = fresh_outs[(case, str(submission))] = tmp_path / f"fresh-{n}"
            _fresh(CASES / case, submission, out)
        assert _without_timings(warm.grade_text) == _without_timings((out / "grade.json").read_text()), (case, submission)
        assert json.loads(warm.reward_text) == json.loads((out / "reward.json").read_text())
        assert warm.exit_code == 0 and not warm.recycle
    statuses = {json.loads(grader.grade(Item("again", str(CASES / "hopper_body_and_com"),
                                             str(_invalid_package(tmp_path / "x")))).grade_text)["status"]}
    assert statuses == {"invalid"}
    assert grader.references.hits >= 2


@pytest.mark.slow
def test_another_package_at_the_same_path_is_read_from_disk(grader, tmp_path):
    """Harbor re-creates every submission at the same path: nothing of the last one may be reused."""
    case = CASES / "cabinet_hierarchy_and_visual"
    where = tmp_path / "app"
    shutil.copytree(case / "reference", where)
    first = json.loads(grader.grade(Item("a", str(case), str(where))).grade_text)
    shutil.rmtree(where)
    shutil.copytree(case / "input", where)
    second = grader.grade(Item("b", str(case), str(where)))
    assert first["authored_usd"] == 1.0
    assert _without_timings(second.grade_text) == _without_timings(_fresh(case, where, tmp_path / "fresh"))
    assert json.loads(second.grade_text)["authored_usd"] == 0.0


def test_planted_conftest_and_ini_in_a_submission_never_run_in_the_warm_grader(grader, tmp_path):
    """The warm session takes the sealed arguments: nothing in the submission is imported or read."""
    case = CASES / "ant_two_joint_faults"
    app = tmp_path / "app"
    shutil.copytree(case / "input", app)
    marker = tmp_path / "PLANTED_RAN"
    payload = f"open({str(marker)!r}, 'w').write('x')\nimport usd_repair_verifier.scoring.reward as r\nr.reward_from = lambda *a, **k: 1.0\n"
    for relative in ("conftest.py", "tests/conftest.py", "checks/conftest.py", "pwned_plugin.py"):
        (app / relative).parent.mkdir(parents=True, exist_ok=True)
        (app / relative).write_text(payload)
    (app / "pytest.ini").write_text("[pytest]\naddopts = -p pwned_plugin\npythonpath = .\n")
    grade = json.loads(grader.grade(Item("planted", str(case), str(app))).grade_text)
    assert not marker.exists(), "a planted file ran inside the warm grade"
    assert grade["status"] == "graded" and grade["authored_usd"] == 0.0


def test_graded_sessions_do_not_outlive_their_items(grader):
    """A worker grades hundreds of items: none may keep an earlier session (snapshots, measurements)."""
    import gc

    from usd_repair_verifier.scoring.session import GradingSession

    for case, side in (("gen_cartpole_1", "reference"), ("gen_cartpole_1", "input"), ("ant_two_joint_faults", "input")):
        grader.grade(Item(f"{case}-{side}", str(CASES / case), str(CASES / case / side)))
    gc.collect()
    alive = [o for o in gc.get_objects() if isinstance(o, GradingSession)]
    assert len(alive) <= 1, f"{len(alive)} sessions still alive after 3 items"


def test_a_warm_session_skips_the_entry_point_look_ups_and_the_end_of_session_collections(grader, monkeypatch):
    """Two of the costs a warm session leaves out (docs/regrade.md): pytest's look-up of each `-p`
    plugin among the installed distributions, and unraisableexception's garbage collections."""
    import _pytest.unraisableexception
    from _pytest.config import PytestPluginManager

    looked_up, collected = [], []
    real_look_up = PytestPluginManager.load_setuptools_entrypoints
    monkeypatch.setattr(PytestPluginManager, "load_setuptools_entrypoints",
                        lambda self, group, name=None: looked_up.append(name) or real_look_up(self, group, name))
    monkeypatch.setattr(_pytest.unraisableexception, "gc_collect_harder", collected.append)
    result = grader.grade(Item("lean", str(CASES / "ant_two_joint_faults"), str(DEMO)))
    assert result.exit_code == 0 and json.loads(result.grade_text)["authored_usd"] == 0.5
    assert looked_up == [] and collected == []


def test_a_case_that_is_not_there_is_an_infrastructure_error(grader, tmp_path):
    result = grader.grade(Item("gone", str(tmp_path / "no-case"), str(DEMO)))
    grade = json.loads(result.grade_text)
    assert grade["status"] == "infrastructure_error" and result.exit_code == 3
    assert "not readable" in grade["infrastructure_error"]
    assert json.loads(result.reward_text) == {"authored_usd": 0.0}


@contextlib.contextmanager
def own_validity_server():
    """A validity fork server of the test's own, as this process's, its forked workers counted:
    yields (server, forked workers). This process's own server is put back after, untouched; any
    server the test started meanwhile is stopped."""
    from usd_repair_verifier.gates import validity

    kept = validity._FORK_SERVER
    validity._FORK_SERVER = None
    validity.start_fork_server()
    own = validity._FORK_SERVER
    spawn, forked = own.spawn, []
    own.spawn = lambda *args: forked.append(spawn(*args)) or forked[-1]
    try:
        yield own, forked
    finally:
        del own.spawn
        own.close()
        if validity._FORK_SERVER not in (own, kept, None):
            validity._FORK_SERVER.close()
        validity._FORK_SERVER = kept


@pytest.mark.slow
def test_validity_forked_from_the_server_reports_what_a_fresh_worker_reports(tmp_path_factory):
    """Every offence of the validity suite, through the fork server and through a fresh worker."""
    from usd_repair_verifier.gates import validity
    from test_validity_rules import CASES as OFFENCES

    names = ["clean", "malformed_usda", "random_usdc", "usdz_member_escape", "self_sublayer", "texture_escape",
             "too_many_prims", "crate_claims_billions", "missing_variant_payload"]
    with own_validity_server() as (forking, forked_workers):   # one server for every offence
        for name in names:
            case = OFFENCES[name]
            submission = case.build(tmp_path_factory.mktemp(name))
            validity._FORK_SERVER = None   # no server: a fresh worker
            fresh = validity.check_submission(submission, case.limits).to_json()
            validity._FORK_SERVER = forking
            forked = validity.check_submission(submission, case.limits).to_json()
            assert forked == fresh, name
        assert len(forked_workers) == len(names)   # every "forked" report came from the server's worker


def test_a_validity_worker_never_forks_from_a_server_of_another_environment(monkeypatch, tmp_path):
    """The server's children inherit the environment it started with: once the workers' own would
    differ (a variable set since), the worker starts fresh, and the next start replaces the server."""
    from usd_repair_verifier.gates import validity
    from test_validity_rules import CASES as OFFENCES

    clean = OFFENCES["clean"]
    submission = clean.build(tmp_path)
    with own_validity_server() as (first, forked_workers):
        assert validity.check_submission(submission, clean.limits).valid and len(forked_workers) == 1
        monkeypatch.setenv("PYTEST_CURRENT_TEST", "another test")   # pytest's own: the worker reads none
        assert validity.check_submission(submission, clean.limits).valid and len(forked_workers) == 2
        monkeypatch.setenv("USDGRADE_TEST_CHANGED", "1")
        assert validity.check_submission(submission, clean.limits).valid and len(forked_workers) == 2
        validity.start_fork_server()
        assert validity._FORK_SERVER is not first and not first.alive()
        assert validity._FORK_SERVER.env["USDGRADE_TEST_CHANGED"] == "1"


def test_the_validity_fork_server_has_one_thread_and_numpy_loaded(grader):
    """Workers are forked from the server: a thread of its own would be missing in every worker.
    numpy, which a worker imports to count a mesh's triangles, is imported once, by the server."""
    from usd_repair_verifier.gates import validity

    pid = validity._FORK_SERVER.proc.pid
    assert len(os.listdir(f"/proc/{pid}/task")) == 1
    assert "_multiarray_umath" in Path(f"/proc/{pid}/maps").read_text()


def test_an_idle_worker_is_given_an_item_of_its_own_case_first():
    """A worker keeps the references it read: it stays on its case, another worker takes another."""
    pending = pool_module._Pending([Item(f"{case}{n}", case, "s") for n in range(3) for case in "ab"])
    assert pending.take(None, {None}).key == "a0"
    assert pending.take(None, {"a"}).key == "b0"          # a case no other worker is on
    pending.retry(Item("again", "b", "s"))
    assert pending.take("a", {"b"}).key == "again"         # a retry goes first
    assert [pending.take("a", {"b"}).key for _ in range(3)] == ["a1", "a2", "b1"]
    assert len(pending) == 1 and pending.take("b", {"a"}).key == "b2" and not pending


class _FaultyPool(pool_module.LocalPool):
    from regrade_workers import faulty_worker as _faulty

    worker = staticmethod(_faulty)


@pytest.mark.slow
def test_pool_contains_hangs_and_dying_workers(tmp_path):
    case = CASES / "gen_cartpole_1"
    subs = {}
    for key in ("crash-1", "flaky-1", "hang-1", "ok-1", "ok-2"):
        subs[key] = tmp_path / key / "app"
        shutil.copytree(case / "reference", subs[key])
    items = [Item(key, str(case), str(path)) for key, path in subs.items()]
    results = {r.key: r for r in _FaultyPool(2, time_limit=3.0).run(items)}
    assert sorted(results) == sorted(subs)
    grades = {key: json.loads(r.grade_text) for key, r in results.items()}
    assert grades["crash-1"]["status"] == "infrastructure_error" and results["crash-1"].attempts == 2
    assert "died" in grades["crash-1"]["infrastructure_error"]
    assert grades["hang-1"]["infrastructure_error"] == "time limit of 3 s exceeded: the grade did not finish"
    assert json.loads(results["hang-1"].reward_text) == {"authored_usd": 0.0}
    for key in ("flaky-1", "ok-1", "ok-2"):
        assert grades[key]["status"] == "graded" and grades[key]["authored_usd"] == 1.0, key
    assert results["flaky-1"].attempts == 2


@pytest.mark.slow
def test_a_timed_out_item_does_not_stop_its_pool(tmp_path):
    """One worker: the item after a hang can only be graded by the worker that replaced it."""
    case = CASES / "gen_cartpole_1"
    items = []
    for key in ("hang-1", "ok-1"):
        app = tmp_path / key / "app"
        shutil.copytree(case / "reference", app)
        items.append(Item(key, str(case), str(app)))
    results = {r.key: r for r in _FaultyPool(1, time_limit=3.0).run(items)}
    hung, after = json.loads(results["hang-1"].grade_text), json.loads(results["ok-1"].grade_text)
    assert hung["status"] == "infrastructure_error" and results["hang-1"].exit_code == 3
    assert hung["infrastructure_error"] == "time limit of 3 s exceeded: the grade did not finish"
    assert after["status"] == "graded" and after["authored_usd"] == 1.0


def _job(root: Path, trials: list[tuple[str, Path, float | None, str]]) -> Path:
    job = root / "job-1"
    for n, (case, package, previous, model) in enumerate(trials):
        trial = job / f"trial-{n}"
        shutil.copytree(package, trial / "artifacts" / "app")
        (trial / "verifier").mkdir(parents=True)
        (trial / "result.json").write_text(json.dumps({"id": f"id-{n}", "trial_name": trial.name, "task_name": case,
                                                       "config": {"agent": {"model_name": model}}}))
        if previous is not None:
            (trial / "verifier" / "reward.json").write_text(json.dumps({"authored_usd": previous}))
    return job


def _regrade(*args: str) -> tuple[int, str, str]:
    import subprocess

    proc = subprocess.run([sys.executable, "-m", "usd_repair_verifier.commands.cli", "regrade", *args, "--no-progress"],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.slow
def test_regrade_job_folders_resumes_selects_and_summarises(tmp_path):
    job = _job(tmp_path, [
        ("ant_two_joint_faults", DEMO, 0.5, "m1"),
        ("ant_two_joint_faults", CASES / "ant_two_joint_faults" / "reference", 0.25, "m1"),
        ("gen_cartpole_1", CASES / "gen_cartpole_1" / "input", 0.0, "m2"),
        ("no_such_case", DEMO, None, "m2"),
    ])
    shutil.copytree(job / "trial-0", job / "trial-9")
    shutil.rmtree(job / "trial-9" / "artifacts")          # Harbor kept no submission
    out = tmp_path / "out"
    code, stdout, stderr = _regrade(str(job), "--cases", str(CASES), "--out", str(out), "-j", "2", "--where", "model=m1")
    assert code == 0, stderr
    assert "2 to grade" in stderr
    assert "rewards moved: 1 of 2" in stdout and "job-1/trial-1: 0.2500 -> 1.0000 (+0.7500)" in stdout
    graded = sorted(p.parent.name for p in out.rglob("grade.json"))
    assert graded == ["trial-0", "trial-1"]
    fresh = _fresh(CASES / "ant_two_joint_faults", job / "trial-0" / "artifacts" / "app", tmp_path / "fresh")
    (version,) = [p for p in out.iterdir() if p.is_dir()]   # beside it: the output folder's marker file
    assert _without_timings((version / "job-1" / "trial-0" / "grade.json").read_text()) == _without_timings(fresh)

    code, stdout, stderr = _regrade(str(job), "--cases", str(CASES), "--out", str(out), "-j", "2")
    assert code == 0, stderr
    assert "1 to grade, 2 already graded at this version, 2 cannot be graded" in stderr
    assert "no case 'no_such_case'" in stderr and "no stored submission" in stderr
    assert sorted(p.parent.name for p in out.rglob("grade.json")) == ["trial-0", "trial-1", "trial-2"]


def test_regrade_refuses_a_bad_selection(tmp_path):
    code, _, stderr = _regrade(str(tmp_path), "--cases", str(CASES), "--where", "colour=red")
    assert code == 2 and "--where" in stderr
    code, _, stderr = _regrade("--cases", str(CASES))
    assert code == 2 and "job folders or --db" in stderr


@pytest.mark.slow
def test_regrade_the_records_store(tmp_path):
    """Episodes ingested into the store are re-graded into new grade rows, once."""
    store_module = pytest.importorskip("usd_repair_verifier.records.store", reason="the records store is not in this checkout")
    from usd_repair_verifier.records.ingest import ingest

    job = _job(tmp_path, [
        ("ant_two_joint_faults", DEMO, 0.5, "m1"),
        ("gen_cartpole_1", CASES / "gen_cartpole_1" / "reference", 0.0, "m2"),
    ])
    url = f"sqlite:///{tmp_path / 'records.sqlite'}"
    store = store_module.open_store(url)
    ingest(store, [job])
    episodes = [e.episode_id for e in store.iter_episodes()]
    store.close()
    assert len(episodes) == 2
    code, stdout, stderr = _regrade("--db", url, "--cases", str(CASES), "--where", "model=m2", "-j", "1",
                                    "--out", str(tmp_path / "out"))
    assert code == 0, stderr
    assert "1 to grade" in stderr and "graded 1 in" in stdout
    code, stdout, stderr = _regrade("--db", url, "--cases", str(CASES), "-j", "1", "--out", str(tmp_path / "out"))
    assert code == 0 and "1 to grade, 1 already graded" in stderr, stderr
    store = store_module.open_store(url)
    try:
        for episode_id in episodes:
            grades = [g for g in store.grades(episode_id) if g["origin"] == "regrade"]
            assert len(grades) == 1, episode_id
        rewards = sorted(g["authored_usd"] for e in episodes for g in store.grades(e) if g["origin"] == "regrade")
        assert rewards == [0.5, 1.0]
    finally:
        store.close()


@pytest.mark.slow
def test_refreeze_a_case_of_an_older_scoring_version(tmp_path):
    cases = tmp_path / "cases"
    shutil.copytree(CASES / "gen_cartpole_1", cases / "gen_cartpole_1")
    profile_path = cases / "gen_cartpole_1" / "profile.json"
    profile = json.loads(profile_path.read_text())
    profile["scoring_version"] = "0"
    # Optional fields the case was frozen with survive the re-freeze.
    profile["preserved_namespaces"] = ["myengine"]
    profile["allowed_urls"] = ["https://example.org/instructions"]
    profile_path.write_text(json.dumps(profile))
    job = _job(tmp_path, [("gen_cartpole_1", CASES / "gen_cartpole_1" / "reference", 1.0, "m")])

    code, stdout, stderr = _regrade(str(job), "--cases", str(cases), "--out", str(tmp_path / "plain"), "-j", "1")
    assert code == 0, stderr
    stale = json.loads(next((tmp_path / "plain").rglob("grade.json")).read_text())
    assert stale["status"] == "infrastructure_error" and "re-freeze" in stale["infrastructure_error"]

    code, stdout, stderr = _regrade(str(job), "--cases", str(cases), "--out", str(tmp_path / "fresh"), "-j", "1",
                                    "--refreeze")
    assert code == 0, stderr
    grade = json.loads(next((tmp_path / "fresh").rglob("trial-0/grade.json")).read_text())
    assert grade["status"] == "graded" and grade["authored_usd"] == 1.0
    refrozen = json.loads(next((tmp_path / "fresh").rglob("cases/gen_cartpole_1/profile.json")).read_text())
    assert refrozen["scoring_version"] != "0" and refrozen["version"] == f"{profile['version']}+scoring-{refrozen['scoring_version']}"
    assert grade["profile"]["version"] == refrozen["version"]
    assert refrozen["preserved_namespaces"] == ["myengine"]
    assert refrozen["allowed_urls"] == ["https://example.org/instructions"]


def test_a_grade_that_leaves_a_layer_open_asks_for_its_worker_to_be_replaced(grader, monkeypatch, tmp_path):
    """Recycling is about what the grade left behind, not what the host process already held."""
    from pxr import Sdf

    held_by_host = Sdf.Layer.FindOrOpen(str(CASES / "ant_two_joint_faults" / "reference" / "ant.usda"))
    assert held_by_host is not None
    clean = grader.grade(Item("clean", str(CASES / "ant_two_joint_faults"), str(DEMO)))
    assert clean.exit_code == 0 and not clean.recycle

    leaked = []
    real_main = pytest.main
    planted = tmp_path / "kept.usda"
    planted.write_text("#usda 1.0\n")

    def main_that_leaks(*args, **kwargs):
        code = real_main(*args, **kwargs)
        leaked.append(Sdf.Layer.FindOrOpen(str(planted)))   # kept past the grade
        return code

    monkeypatch.setattr(pytest, "main", main_that_leaks)
    leaking = grader.grade(Item("leaks", str(CASES / "ant_two_joint_faults"), str(DEMO)))
    assert leaked and leaked[0] is not None
    assert leaking.recycle and leaking.exit_code == 0
    del held_by_host


class _EchoPool(pool_module.LocalPool):
    from regrade_workers import echo_worker as _echo

    worker = staticmethod(_echo)


def test_a_worker_gets_its_next_item_before_the_caller_sees_its_result(tmp_path):
    """A slow caller (writing a store, drawing progress) must not leave the workers idle."""
    items = []
    for n in range(3):
        (tmp_path / f"s{n}").mkdir()
        items.append(Item(f"i{n}", str(tmp_path), str(tmp_path / f"s{n}")))
    results = _EchoPool(1, time_limit=60.0).run(items)
    first = next(results)
    assert first.key == "i0"
    # The one worker already holds the second item while the caller holds the first result.
    deadline = time.monotonic() + 30
    while not (tmp_path / "s1" / "received").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (tmp_path / "s1" / "received").exists()
    assert [r.key for r in results] == ["i1", "i2"]


def test_a_cached_reference_carries_its_free_space_samples(tmp_path):
    """Every hit is a copy with the reference-only samples already made, equal to a lazy first use."""
    from usd_repair_verifier.profiles.case import load_case
    from usd_repair_verifier.scoring.reference_cache import ReferenceCache
    from usd_repair_verifier.stage_snapshot.parts import free_space
    from usd_repair_verifier.stage_snapshot.read import read_snapshot

    case = load_case(CASES / "cabinet_drawer_door")
    def read():
        return read_snapshot(case.reference_root_layer, case.profile.sampling, case.profile.preserved_namespaces)
    cache = ReferenceCache()
    key = ReferenceCache.key(case)
    cache.put(key, read())
    copy = cache.get(key)
    bodies = sorted({c.body for c in copy.colliders.values() if c.body})
    assert bodies and sorted(copy.free_space) == bodies
    lazy = read()
    for body in bodies:
        assert np.array_equal(copy.free_space[body], free_space(lazy, body)), body
    assert any(len(copy.free_space[b]) for b in bodies)
