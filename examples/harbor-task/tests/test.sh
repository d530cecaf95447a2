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

# 1. Shared mode: end every process the agent may have left running (one that would rewrite
#    reward.json after the grade, or swap the submission during it): all but PID 1 and this
#    script's own ancestry, until none is left. No subshell runs during the sweep.
end_other_processes() {
    local keep=" 1 $$ " pid=$$ line rest pass p survivors
    while [ "$pid" -gt 1 ] && read -r line < "/proc/$pid/stat"; do
        rest=${line##*) }
        set -- $rest
        pid=$2
        keep="$keep$pid "
    done
    for pass in 1 2 3 4 5 6 7 8 9 10; do
        survivors=0
        for p in /proc/[0-9]*; do
            p=${p#/proc/}
            case "$keep" in *" $p "*) continue ;; esac
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
#    bytecode only from a private, empty cache (a planted __pycache__/*.pyc is never loaded).
if [ "$status" = 0 ]; then
    cd "$WORK" || exit 3
    env -i PATH="$PATH" HOME="$WORK" TMPDIR="$WORK/tmp" LANG=C.UTF-8 \
        "$PYTHON" -I -B -X pycache_prefix="$WORK/pycache" -c "$BOOTSTRAP" "$VERIFIER" \
        --case="$CASE" --submission="$WORK/submission" --out="$WORK/out" \
        --time-limit="$TIME_LIMIT" "${GRADE_EXTRA[@]}"
    status=$?
fi

# 5. Publish: grade.json, then reward.json, each renamed into place inside OUT; reward.json last.
#    A run that left no reward is an infrastructure error with the fallback reward 0.
if [ ! -s "$WORK/out/grade.json" ] || [ ! -s "$WORK/out/reward.json" ]; then
    printf '{"authored_usd": 0.0, "infrastructure_error": "the verifier left no reward (exit %s)", "status": "infrastructure_error"}\n' \
        "$status" > "$WORK/out/grade.json"
    printf '{"authored_usd": 0.0}\n' > "$WORK/out/reward.json"
    status=3
fi
for name in grade.json reward.json; do
    cp -- "$WORK/out/$name" "$OUT/.$name.partial" && mv -f -- "$OUT/.$name.partial" "$OUT/$name" || status=3
done
chmod 644 "$OUT/grade.json" "$OUT/reward.json" 2>/dev/null
exit "$status"
