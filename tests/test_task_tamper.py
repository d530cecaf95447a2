"""The tamper suite: the example task laid out the way Harbor lays it out, attacked, graded.

A private mount and PID namespace (`unshare -m -p -f --mount-proc`, root only) holds a root
folder on a tmpfs with the machine's system folders bound in, and the task's folders where
Harbor puts them: the submission at /app, the task's tests/ at /tests, the verifier's logs at
/logs/verifier, the verifier at /opt/usdgrade/verifier (a copy, so it may be poisoned) and its
interpreter at /opt/usdgrade/venv. Inside a chroot there, the "agent" (root, as in shared mode,
the weaker layout) plants everything it can, then runs the shipped tests/test.sh unchanged, as
Harbor does. Every attack must end with the unrepaired input's honest grade (0.0, graded) and no
planted code imported (each planted file leaves a mark in /pwned if it runs).

Attacks that need the agent's container to hold the verifier or the case are impossible in the
separate layout: tests/test_harbor_example.py asserts what the agent's image contains.
"""
from __future__ import annotations

import importlib.util
import json
import marshal
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harbor_task_support import CASE, CLEAN_TRAJECTORY, TASK, read_json, unavailable

PAYLOAD = ("open('/pwned/{name}', 'w').write('imported')\n"
           "import usd_repair_verifier.scoring.reward as r\n"
           "r.reward_from = lambda *a, **k: 1.0\n")

SUBMISSION_PLANTS = {
    "conftest.py": PAYLOAD.format(name="app-conftest"),
    "sitecustomize.py": PAYLOAD.format(name="app-sitecustomize"),
    "usercustomize.py": PAYLOAD.format(name="app-usercustomize"),
    "tests/conftest.py": PAYLOAD.format(name="app-tests-conftest"),
    "pwned_plugin.py": PAYLOAD.format(name="app-plugin"),
    "pytest.ini": "[pytest]\naddopts = -p pwned_plugin\npythonpath = /app\n",
}

# The agent's moves, as root in the same container (shared mode), before the verifier runs: one
# `docker exec` of the agent's phase. The two processes it leaves behind outlive it (orphaned to
# PID 1, as in a container) and are running when the verifier starts.
AGENT_SCRIPT = r"""
set -u
printf '[pytest]\naddopts = -p pwned_plugin\npythonpath = /app\n' > /pytest.ini
printf '%s' "$PAYLOAD_VERIFIER" > /opt/usdgrade/verifier/conftest.py
printf '%s' "$PAYLOAD_OUT" > /logs/verifier/conftest.py
echo '{"authored_usd": 1.0}' > /logs/verifier/reward.json
echo 1.0 > /logs/verifier/reward.txt
mkdir -p /logs/verifier/planted && echo x > /logs/verifier/planted/file
# A process that keeps rewriting the reward, and one that waits for the grade to end. Each says
# when it runs, so that the grade starts with both alive.
nohup bash -c 'touch /pwned-status/rewriter; while true; do echo "{\"authored_usd\": 1.0}" > /logs/verifier/reward.json; sleep 0.2; done' >/dev/null 2>&1 &
nohup bash -c 'touch /pwned-status/waiter; until [ -e /pwned-status/exit ]; do sleep 0.2; done; echo "{\"authored_usd\": 1.0}" > /logs/verifier/reward.json; echo 1.0 > /logs/verifier/reward.txt' >/dev/null 2>&1 &
for _ in $(seq 200); do [ -e /pwned-status/rewriter ] && [ -e /pwned-status/waiter ] && break; sleep 0.05; done
"""

# Harbor's `docker exec` of the verifier's entry point, with its output in the verifier log folder.
# The variables stand for what a login shell would pick up from profile files the agent can write.
VERIFY_SCRIPT = r"""
export USDGRADE_SUBMISSION=/tests/case/reference USDGRADE_OUT=/pwned/out USDGRADE_PYTHON=/bin/false
export PYTEST_ADDOPTS='-p pwned_plugin' PYTEST_PLUGINS=pwned_plugin PYTHONPATH=/app PYTHONSTARTUP=/app/conftest.py
export PYTHONUSERBASE=/app PYTHONINSPECT=1
bash /tests/test.sh > /logs/verifier/test-stdout.txt 2>&1
echo "test.sh exit $?" > /pwned-status/exit
# The container's keep-alive survived (a killed one stays a zombie until PID 1 reaps it: state Z).
read -r line < "/proc/$KEEPALIVE/stat" && set -- ${line##*) } && [ "$1" != Z ] && touch /pwned-status/keepalive
sleep 1   # time for any survivor to act (each polls every 0.2 s)
"""

OUTER_SCRIPT = r"""
set -eu
R="$ROOTFS"
mount -t tmpfs tmpfs "$R"
for d in /bin /sbin /lib /lib32 /lib64 /libx32 /usr /etc /root /work /dev; do
    if [ -L "$d" ]; then ln -s "$(readlink "$d")" "$R$d"
    elif [ -d "$d" ]; then mkdir -p "$R$d"; mount --rbind "$d" "$R$d"; fi
done
mkdir -p "$R/proc" "$R/tmp" "$R/app" "$R/tests" "$R/logs/verifier" "$R/opt/usdgrade/verifier" \
         "$R/opt/usdgrade/venv" "$R/pwned" "$R/pwned-status" "$R/solution"
chmod 1777 "$R/tmp"
mount -t proc proc "$R/proc"
mount --bind "$APP" "$R/app"
mount --bind "$TESTS" "$R/tests"
mount --bind "$LOGS" "$R/logs/verifier"
mount --bind "$VERIFIER" "$R/opt/usdgrade/verifier"
mount --bind "$VENV" "$R/opt/usdgrade/venv"
mount --bind "$PWNED" "$R/pwned"
mount --bind "$STATUS" "$R/pwned-status"
mount --bind "$SOLUTION" "$R/solution"
# What the collect hook leaves for a closed-book grade: the agent's (clean) trajectory.
mkdir -p "$R/var/lib/usdgrade-trajectory"
cp "$TRAJECTORY" "$R/var/lib/usdgrade-trajectory/trajectory.json"
if [ -n "${APP_LINK:-}" ]; then umount "$R/app"; rmdir "$R/app"; ln -s "$APP_LINK" "$R/app"; fi
# As in Harbor's container: PID 1 (this shell, a session leader: `setsid` below) and its keep-alive
# child are the container's command, in session 1; the agent's phase and then the verifier each
# come in as one `docker exec`, which runs in a session of its own.
sleep infinity &
export KEEPALIVE=$!
setsid -w chroot "$R" /bin/bash -c "$AGENT_SCRIPT"
setsid -w chroot "$R" /bin/bash -c "$VERIFY_SCRIPT"
exit $?   # so that the line above is not the last command, which bash would run in place of PID 1
"""


def namespaces_available() -> None:
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("chroot"):
        unavailable("the tamper suite needs root, unshare and chroot (mount and PID namespaces)")
    probe = subprocess.run(["unshare", "-m", "-p", "-f", "--mount-proc", "true"], capture_output=True)
    if probe.returncode != 0:
        unavailable(f"mount/PID namespaces are not available here: {probe.stderr.decode()[-300:]}")


def poison_bytecode(module: Path) -> None:
    """A __pycache__ entry whose header matches the byte-identical source but whose code is the attacker's."""
    source = module.read_text()
    code = compile(source + "\nopen('/pwned/poisoned-pyc', 'w').write('imported')\nreward = lambda *a, **k: 1.0\n",
                   str(module), "exec")
    st = module.stat()
    header = importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little") + \
        int(st.st_mtime).to_bytes(4, "little") + (st.st_size & 0xFFFFFFFF).to_bytes(4, "little")
    cache = Path(importlib.util.cache_from_source(str(module)))
    cache.parent.mkdir(exist_ok=True)
    cache.write_bytes(header + marshal.dumps(code))


@pytest.fixture()
def layout(tmp_path):
    from usd_repair_verifier.authoring.task import _copy_verifier

    namespaces_available()
    folders = {name: tmp_path / name for name in ("rootfs", "app", "tests", "logs", "verifier", "pwned", "status")}
    for name in ("rootfs", "logs", "pwned", "status"):
        folders[name].mkdir()
    shutil.copytree(CASE / "input", folders["app"])
    for relative, text in SUBMISSION_PLANTS.items():
        (folders["app"] / relative).parent.mkdir(parents=True, exist_ok=True)
        (folders["app"] / relative).write_text(text)
    shutil.copytree(TASK / "tests", folders["tests"], ignore=shutil.ignore_patterns("verifier"))
    _copy_verifier(folders["verifier"])
    poison_bytecode(folders["verifier"] / "usd_repair_verifier" / "scoring" / "reward.py")
    return folders


ORACLE_SCRIPT = r"""
bash /solution/solve.sh
"""


def run_attack(layout, app_link: str = "", agent_script: str = AGENT_SCRIPT, reward: float = 0.0) -> tuple[dict, str]:
    env = {
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "ROOTFS": str(layout["rootfs"]), "APP": str(layout["app"]),
        "TESTS": str(layout["tests"]), "LOGS": str(layout["logs"]), "VERIFIER": str(layout["verifier"]),
        "VENV": sys.prefix, "PWNED": str(layout["pwned"]), "STATUS": str(layout["status"]),
        "SOLUTION": str(TASK / "solution"), "AGENT_SCRIPT": agent_script, "VERIFY_SCRIPT": VERIFY_SCRIPT,
        "PAYLOAD_VERIFIER": PAYLOAD.format(name="verifier-conftest"),
        "PAYLOAD_OUT": PAYLOAD.format(name="out-conftest"), "APP_LINK": app_link,
        "TRAJECTORY": str(CLEAN_TRAJECTORY),
    }
    r = subprocess.run(["unshare", "-m", "-p", "-f", "--mount-proc", "setsid", "bash", "-c", OUTER_SCRIPT], env=env,
                       capture_output=True, text=True, timeout=600)
    logs = layout["logs"]
    log = (logs / "test-stdout.txt").read_text() if (logs / "test-stdout.txt").exists() else ""
    exit_file = layout["status"] / "exit"
    assert exit_file.exists() and exit_file.read_text().strip() == "test.sh exit 0", r.stderr[-2000:] + log[-3000:]
    if agent_script is AGENT_SCRIPT:   # both planted processes ran before the grade began
        assert (layout["status"] / "rewriter").exists() and (layout["status"] / "waiter").exists()
    assert (layout["status"] / "keepalive").exists(), "the sweep ended the container's keep-alive"
    assert sorted(os.listdir(logs)) == ["grade.json", "reward-details.json", "reward.json", "test-stdout.txt"], \
        (sorted(os.listdir(logs)), log[-2000:])
    assert read_json(logs / "reward.json") == {"authored_usd": reward}
    assert sorted(os.listdir(layout["pwned"])) == [], "planted code ran"
    return read_json(logs / "grade.json"), log


@pytest.mark.slow
def test_every_planted_door_leaves_the_unrepaired_input_at_zero(layout):
    grade, _ = run_attack(layout)
    assert grade["status"] == "graded" and grade["authored_usd"] == 0.0, json.dumps(grade)[:2000]


@pytest.mark.slow
def test_a_submission_that_is_a_link_to_the_reference_is_an_empty_package(layout):
    grade, _ = run_attack(layout, app_link="/tests/case/reference")
    assert grade["status"] == "invalid" and grade["authored_usd"] == 0.0, json.dumps(grade)[:2000]


@pytest.mark.slow
def test_the_oracle_solution_scores_one(layout):
    """Harbor's oracle agent runs solution/solve.sh in the agent's container (planted files and all)."""
    grade, _ = run_attack(layout, agent_script=ORACLE_SCRIPT, reward=1.0)
    assert grade["status"] == "graded" and grade["objective_success"] is True


SWEEP_SCRIPT = r"""
# PID 1 is `sh`, a session leader, and `sleep` its keep-alive child: Harbor's `sh -c "sleep infinity"`.
sleep 1000 &
# The agent's phase (a `docker exec`: a session of its own) leaves two processes behind, both
# orphaned to PID 1: one of them looks exactly like the keep-alive.
setsid -w sh -c 'sleep 999 & sleep 1000 & exit 0'
# test.sh, in another `docker exec`.
setsid -w bash "$SWEEP"
sleep 0.3
ps -eo pid,ppid,sid,args > "$OUT"
"""


def test_the_sweep_ends_what_the_agent_left_and_keeps_the_containers_keep_alive(tmp_path):
    """test.sh's process sweep in a PID namespace laid out as Harbor's container: PID 1 `sh` and
    its `sleep` keep-alive (session 1: ending it stops the container, and test.sh with it)
    survive; what the agent left behind is ended, even orphaned to PID 1 and named like the
    keep-alive."""
    from usd_repair_verifier.authoring.task import render_test_sh

    namespaces_available()
    text = render_test_sh()
    sweep = tmp_path / "sweep.sh"
    sweep.write_text(text[text.index("end_other_processes() {"):text.index("\nend_other_processes\n")]
                     + "\nend_other_processes\n")
    out = tmp_path / "ps.txt"
    r = subprocess.run(["unshare", "-p", "-f", "--mount-proc", "setsid", "sh", "-c", SWEEP_SCRIPT], capture_output=True,
                       text=True, timeout=60, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "SWEEP": str(sweep), "OUT": str(out)})
    processes = out.read_text()
    rows = [line.split(None, 3) for line in processes.splitlines()[1:]]
    sleeps = [(ppid, sid, args) for _, ppid, sid, args in rows if args.startswith("sleep ")]
    assert r.returncode == 0, r.stderr + processes
    assert sleeps == [("1", "1", "sleep 1000")], processes   # only the keep-alive; nothing the agent left
