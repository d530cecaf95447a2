"""Tasks written by `usdgrade task`, run by the real Harbor 0.26.0 with real Docker containers.

Oracle and nop on three tasks (textures, closed book, a mass and collision fault); Harbor's own
terminus-2 agent driven by a scripted model (one run repairs offline, one tries to fetch a URL);
`harbor job regrade`, `usdgrade records ingest` and `usdgrade regrade` on those jobs.
"""
from __future__ import annotations

import json
import sqlite3

from tests_harbor.harbor_client import TASKS, harbor, usdgrade, write_task

CLOSED_BOOK = {"cabinet_drawer_door": True, "ant_two_joint_faults": True, "gripper_hull_and_mass": False}


def test_oracle_scores_one_on_every_task(oracle_job):
    trials = oracle_job.by_task()
    assert sorted(t.split("/")[-1] for t in trials) == sorted(CLOSED_BOOK), oracle_job.output[-2000:]
    for name, trial in trials.items():
        case = name.split("/")[-1]
        assert trial.exception is None and trial.rewards == {"authored_usd": 1.0}, trial.describe()
        grade = trial.grade
        assert grade["status"] == "graded" and grade["objective_success"] is True, trial.describe()
        # Closed book: the oracle's own one-step trajectory, read like any agent's.
        verdict = grade["closed_book"]
        if CLOSED_BOOK[case]:
            assert verdict["status"] == "clean" and verdict["run"]["agent"] == "oracle", verdict
        else:
            assert verdict == {"required": False}
        details = trial.verifier_file("reward-details.json")["authored_usd"]
        assert details["kind"] == "graded" and details["score"] == 1.0 and details["criteria"]
        assert "usdgrade: graded; authored_usd 1.0" in trial.log()


def test_nop_scores_zero_on_every_task(nop_job):
    for name, trial in nop_job.by_task().items():
        case = name.split("/")[-1]
        assert trial.exception is None and trial.rewards == {"authored_usd": 0.0}, trial.describe()
        grade = trial.grade
        # The nop agent leaves the input untouched and writes no trajectory: closed book fails
        # closed (unverified); open book grades the unrepaired input at 0.
        expected = "closed_book_unverified" if CLOSED_BOOK[case] else "graded"
        assert grade["status"] == expected and grade["raw_authored_usd"] == 0.0, trial.describe()


def test_the_task_has_a_semantic_version_harbor_reads(oracle_job):
    for trial in oracle_job.trials():
        lock = json.loads((trial.folder / "lock.json").read_text())
        assert lock["task"]["version"] == "1.0.0", lock["task"]   # what `harbor run --diff` compares
        assert trial.task.startswith("usdgrade/"), trial.task


def test_harbor_run_diff_reuses_regrades_or_reruns_by_the_task_version(harbor_stack, oracle_job, tmp_path):
    """`usdgrade task --task-version`: Harbor's `run --diff` against the oracle's job reuses a
    patch change, re-grades a minor one and reruns a major one (a dry run: the preview only)."""
    versions = {"cabinet_drawer_door": "1.0.1", "ant_two_joint_faults": "1.1.0", "gripper_hull_and_mass": "2.0.0"}
    for case, version in versions.items():
        write_task(case, tmp_path / "tasks" / case, harbor_stack.base_image, *TASKS[case], "--task-version", version)
    r = harbor(harbor_stack, "run", "-p", str(tmp_path / "tasks"), "-a", "oracle", "-e", "docker", "-o",
               str(tmp_path / "jobs"), "--diff", str(oracle_job.folder), "--dry-run", timeout=600, env={"COLUMNS": "300"})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    actions = {line.split("│")[3].strip(): line.split("│")[1].strip() for line in r.stdout.splitlines()
               if line.startswith("│") and "usdgrade/" in line}
    assert actions == {"usdgrade/cabinet_drawer_door": "reuse", "usdgrade/ant_two_joint_faults": "regrade",
                       "usdgrade/gripper_hull_and_mass": "rerun"}, r.stdout[-3000:]
    assert not (tmp_path / "jobs").exists() or not any((tmp_path / "jobs").rglob("result.json"))


def test_a_terminus_repair_grades_at_its_measured_reward(terminus_jobs, tmp_path):
    job, requests = terminus_jobs["repair"]
    (trial,) = job.trials()
    assert trial.exception is None and requests >= 3, trial.describe()
    assert trial.rewards == {"authored_usd": 0.5}, trial.describe()
    grade = trial.grade
    assert grade["status"] == "graded" and grade["closed_book"]["status"] == "clean"
    assert grade["closed_book"]["run"]["agent"] == "terminus-2"
    # The same bytes graded here, outside Harbor, give the same reward.
    r = usdgrade("grade", str(trial.folder / "artifacts" / "app"), "--case",
                 str(trial.folder.parent.parent.parent / "dataset" / "ant_two_joint_faults" / "tests" / "case"),
                 "--out", str(tmp_path / "out"), "--trajectory", str(trial.folder / "agent" / "trajectory.json"))
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "out" / "reward.json").read_text()) == {"authored_usd": 0.5}


def test_a_fetch_is_stopped_by_the_network_and_zeroed_by_the_rule(terminus_jobs):
    job, _ = terminus_jobs["fetch"]
    (trial,) = job.trials()
    assert trial.exception is None and trial.rewards == {"authored_usd": 0.0}, trial.describe()
    grade = trial.grade
    assert grade["status"] == "closed_book_violation" and grade["raw_authored_usd"] == 0.5, trial.describe()
    violations = grade["network_violations"]
    trajectory = json.loads((trial.folder / "agent" / "trajectory.json").read_text())
    curl_steps = [s["step_id"] for s in trajectory["steps"]
                  if any("curl" in json.dumps(c.get("arguments")) for c in s.get("tool_calls") or [])]
    assert curl_steps and {v["step_id"] for v in violations} == set(curl_steps), violations
    # Two calls, two violations: curl's address read from the keystrokes, and the Python fetch,
    # whose address is assembled at run time, flagged as a network call with no address to read.
    by_kind = {v["kind"]: v for v in violations}
    assert len(violations) == 2 and set(by_kind) == {"url", "network_command"}, violations
    assert by_kind["url"]["url"].endswith("/reference/ant.usda"), violations
    assert by_kind["network_command"]["url"] is None and "urlopen" in by_kind["network_command"]["excerpt"], violations
    # The network policy stopped the fetch itself: the server, which a container without the
    # policy reaches (the control), never saw it, and curl failed.
    returncode, output, control_hits = terminus_jobs["control"]
    assert returncode == 0 and control_hits == 1, output
    assert terminus_jobs["target_hits"] == 0
    # Both attempts failed: curl, and the Python fetch of an address no pattern can read.
    observed = json.dumps(trajectory)
    assert "curl-exit-0" not in observed and "curl-exit-" in observed
    assert "py-exit-0" not in observed and "py-exit-" in observed


def test_harbor_job_regrade_reproduces_every_reward(regraded):
    for name, (source, regrade) in regraded.items():
        before = {t.task: t.rewards for t in source.trials()}
        after = {t.task: t.rewards for t in regrade.trials()}
        assert len(after) == len(source.trials()) and after == before, (name, regrade.output[-2000:])
        assert all(t.exception is None for t in regrade.trials()), [t.describe() for t in regrade.trials()]
        # Only the verifier ran again, on each source trial's stored artifacts: no agent ran.
        sources = {str(t.folder) for t in source.trials()}
        for t in regrade.trials():
            origin = t.result["config"]["source_trial"]
            assert origin["action"] == "regrade" and origin["path"] in sources and not t.result["agent_execution"]


def test_records_ingest_of_the_job_folders_matches_harbor(tmp_path, graded_jobs):
    db = tmp_path / "records.sqlite"
    r = usdgrade("records", "ingest", *(str(j.folder) for j in graded_jobs), "--db", str(db))
    assert r.returncode == 0, r.stdout + r.stderr
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT e.episode_id, e.job_name, e.trial_name, e.task_name, g.authored_usd "
                                  "FROM episodes e JOIN grades g ON g.episode_id = e.episode_id").fetchall()
    stored = {(job, trial): (episode, task, reward) for episode, job, trial, task, reward in rows}
    expected = {(j.folder.name, t.folder.name): (t.result["id"], t.task, t.rewards["authored_usd"])
                for j in graded_jobs for t in j.trials()}
    assert len(rows) == len(expected) and stored == expected


def test_usdgrade_regrade_of_the_job_folders_reproduces_them(tmp_path, dataset, graded_jobs):
    out = tmp_path / "regraded"
    r = usdgrade("regrade", *(str(j.folder) for j in graded_jobs), "--cases", str(dataset), "--out", str(out),
                 "--no-progress", timeout=1800)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    for job in graded_jobs:
        for trial in job.trials():
            found = list(out.glob(f"*/{job.folder.name}/{trial.folder.name}/reward.json"))
            assert len(found) == 1, (job.folder.name, trial.folder.name, r.stdout[-2000:])
            assert json.loads(found[0].read_text()) == trial.rewards, trial.describe()
