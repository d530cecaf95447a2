#!/bin/bash
# The oracle: restore the intact package (solution/reference) in place of the broken one, then
# record that one step as an ATIF trajectory. Harbor's oracle agent writes no trajectory of its
# own, and a closed-book grade with none is `closed_book_unverified` (0): this record lets the
# task's own oracle be graded by the same rule as any agent (docs/closed-book.md says why an
# agent gains nothing by writing one: Harbor replaces it with the harness's own record).
set -euo pipefail
find /app -mindepth 1 -delete
cp -R /solution/reference/. /app/
mkdir -p /logs/agent
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
cat > /logs/agent/trajectory.json <<JSON
{"schema_version": "ATIF-v1.6", "session_id": "oracle", "agent": {"name": "oracle", "version": "1"},
 "steps": [{"step_id": 1, "timestamp": "$now", "source": "agent",
            "message": "Restore the intact package in place of the broken one.",
            "tool_calls": [{"tool_call_id": "oracle-1", "function_name": "bash_command",
                            "arguments": {"keystrokes": "find /app -mindepth 1 -delete && cp -R /solution/reference/. /app/\n"}}],
            "observation": {"results": [{"source_call_id": "oracle-1", "content": ""}]}}]}
JSON
