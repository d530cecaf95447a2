#!/bin/bash
# Harbor verifier entry point, written by `usdgrade task` (re-generate it, do not edit it).
# Grades the submission in /app against the case in /tests/case and leaves
# /logs/verifier/reward.json ({"authored_usd": R}) and grade.json.
#
# Nothing in the environment changes what runs or where: every path below is fixed, the
# interpreter runs isolated with an empty environment, and the only pytest settings, plugins
# and conftests are the verifier's own (scoring/sealed.py in the verifier).
set -u
umask 077
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

VERIFIER=/opt/usdgrade/verifier
PYTHON=/opt/usdgrade/venv/bin/python
CASE=/tests/case
SUBMISSION=/app
OUT=/logs/verifier
# Shorter than task.toml's [verifier] timeout_sec: a slow grade ends as an explicit
# infrastructure error (exit 3, numeric fallback reward) instead of nothing.
TIME_LIMIT=540
# Closed-book grading: the agent's trajectory, as task.toml's collect hook left it (empty when open book).
GRADE_EXTRA=(--trajectory=/var/lib/usdgrade-trajectory/trajectory.json)
BOOTSTRAP='import sys; sys.path.insert(0, sys.argv[1]); from usd_repair_verifier.scoring.sealed import main; sys.exit(main(sys.argv[2:]))'
# grade.json -> reward-details.json (shipped beside this script).
DETAILS=/tests/reward_details.py
# One line for Harbor's log of this script (test-stdout.txt): the status, the reward, and for an
# infrastructure error that its 0.0 is a fallback.
SUMMARY='import json, sys
grade = json.load(open(sys.argv[1]))
status = str(grade.get("status"))
note = "; the 0.0 is a fallback, not a measured repair: rerun this trial" if status == "infrastructure_error" else ""
cause = ": " + str(grade.get("infrastructure_error")) if note else ""
print("usdgrade: " + status + cause + "; authored_usd " + str(grade.get("authored_usd")) + note)'

# 1. End every process the agent may have left running (shared mode: one that would rewrite
#    reward.json after the grade, or swap the submission during it), until none is left. Kept:
#    the container's own command, which is every process of PID 1's session (Harbor's keep-alive:
#    PID 1 is `sh -c "sleep infinity"`, `sleep` its child; ending it stops the container and this
#    script with it), and this script's own ancestry. Everything Harbor runs in a container, the
#    agent included, comes in through `docker exec`, which starts a session of its own; a
#    session can be left but never joined, so no process of the agent's is in session 1, even
#    one orphaned to PID 1. A separate verifier's container holds no process of the agent's:
#    there the sweep finds nothing to end. No subshell runs while processes are ended.
end_other_processes() {
    local keep=" 1 $$ " pid=$$ line pass p survivors
    while [ "$pid" -gt 1 ] && read -r line < "/proc/$pid/stat"; do
        set -- ${line##*) }   # state ppid pgrp session ...
        pid=$2
        keep="$keep$pid "
    done
    for pass in 1 2 3 4 5 6 7 8 9 10; do
        survivors=0
        for p in /proc/[0-9]*; do
            p=${p#/proc/}
            case "$keep" in *" $p "*) continue ;; esac
            read -r line < "/proc/$p/stat" 2>/dev/null || continue
            set -- ${line##*) }
            [ "$4" = 1 ] && continue   # session 1: the container's own command
            kill -KILL "$p" 2>/dev/null && survivors=1
        done
        [ "$survivors" = 0 ] && return 0
    done
}
end_other_processes

# 2. The output folder holds only what this script writes: everything else goes first (a
#    planted reward.json, reward.txt, conftest.py...). Harbor's own log of this script's
#    output, which is this script's stdout, is kept.
mkdir -p "$OUT"
own_log=$(readlink -f /proc/$$/fd/1 2>/dev/null || true)
for entry in "$OUT"/* "$OUT"/.[!.]* "$OUT"/..?*; do
    [ -e "$entry" ] || [ -L "$entry" ] || continue
    [ "$(readlink -f "$entry")" = "$own_log" ] && [ ! -L "$entry" ] && continue
    rm -rf -- "$entry"
done

# 3. A private copy of the submission and a private output folder, both the verifier's alone.
WORK=$(mktemp -d /tmp/usdgrade.XXXXXXXX) || exit 3
trap 'rm -rf -- "$WORK"' EXIT
mkdir "$WORK/out" "$WORK/tmp"
status=0
if [ -d "$SUBMISSION" ] && [ ! -L "$SUBMISSION" ]; then
    cp -a -- "$SUBMISSION" "$WORK/submission" || status=3
else
    # Nothing submitted, or a link to somewhere else (the case's reference...): graded as an
    # empty package, which is invalid.
    mkdir "$WORK/submission"
fi

# 4. The grade: the verifier's interpreter, isolated (-I -B), with an empty environment, reading
#    bytecode only from the tree compiled into the verifier's image when it was built (read-only,
#    never written here; a planted __pycache__/*.pyc beside any source is never loaded).
if [ "$status" = 0 ]; then
    cd "$WORK" || exit 3
    env -i PATH="$PATH" HOME="$WORK" TMPDIR="$WORK/tmp" LANG=C.UTF-8 \
        "$PYTHON" -I -B -X pycache_prefix=/opt/usdgrade/pycache -c "$BOOTSTRAP" "$VERIFIER" \
        --case="$CASE" --submission="$WORK/submission" --out="$WORK/out" \
        --time-limit="$TIME_LIMIT" "${GRADE_EXTRA[@]}"
    status=$?
fi

# 5. Publish: reward-details.json (the per-check view Harbor's viewer shows) and grade.json,
#    then reward.json, each renamed into place inside OUT; reward.json last. A run that left no
#    reward is an infrastructure error with the fallback reward 0; test-stdout.txt and
#    reward-details.json say that this 0.0 is a fallback, not a measured repair.
if [ ! -s "$WORK/out/grade.json" ] || [ ! -s "$WORK/out/reward.json" ]; then
    printf '{"authored_usd": 0.0, "infrastructure_error": "the verifier left no reward (exit %s)", "reasons": [], "status": "infrastructure_error"}\n' \
        "$status" > "$WORK/out/grade.json"
    printf '{"authored_usd": 0.0}\n' > "$WORK/out/reward.json"
    status=3
fi
env -i PATH="$PATH" LANG=C.UTF-8 "$PYTHON" -I -B "$DETAILS" "$WORK/out/grade.json" "$WORK/out/reward-details.json" \
    || rm -f -- "$WORK/out/reward-details.json"
env -i PATH="$PATH" LANG=C.UTF-8 "$PYTHON" -I -B -c "$SUMMARY" "$WORK/out/grade.json" || status=3
for name in reward-details.json grade.json reward.json; do
    [ -e "$WORK/out/$name" ] || continue
    cp -- "$WORK/out/$name" "$OUT/.$name.partial" && mv -f -- "$OUT/.$name.partial" "$OUT/$name" || status=3
done
chmod 644 "$OUT/grade.json" "$OUT/reward.json" "$OUT/reward-details.json" 2>/dev/null
exit "$status"
