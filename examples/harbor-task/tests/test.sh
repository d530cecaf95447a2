#!/usr/bin/env bash
# Harbor verifier entry point: grade /app against the case in /tests/case and leave
# /logs/verifier/reward.json ({"authored_usd": R}) and grade.json.
# Every path can be redirected (tests/test_harbor_example.py runs this outside Docker).
set -u
VERIFIER="${USDGRADE_HOME:-/opt/usd-repair-verifier}"
CASE="${USDGRADE_CASE:-/tests/case}"
SUBMISSION="${USDGRADE_SUBMISSION:-/app}"
OUT="${USDGRADE_OUT:-/logs/verifier}"
# Shorter than task.toml's [verifier] timeout_sec (600): a slow grade ends as an
# explicit infrastructure error (exit 3, numeric fallback reward) instead of nothing.
TIME_LIMIT="${USDGRADE_TIME_LIMIT:-540}"
PYTHON="${USDGRADE_PYTHON:-python3}"

mkdir -p "$OUT"
cd "$VERIFIER" || exit 3
"$PYTHON" -m pytest checks --case "$CASE" --submission "$SUBMISSION" --out "$OUT" \
    --time-limit "$TIME_LIMIT" -p no:cacheprovider -q
status=$?
if [ ! -s "$OUT/reward.json" ]; then
    # Only a verifier that never started leaves no outputs: say so in Harbor's terms.
    echo '{"authored_usd": 0.0}' > "$OUT/reward.json"
    status=3
fi
exit "$status"
