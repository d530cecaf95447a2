"""Write a pair of large trajectory files of one shape, or read them and print the peak memory.

    python tests/trajectory_memory_probe.py write FOLDER SHAPE MIB
    python tests/trajectory_memory_probe.py read FOLDER CASE_INPUT

Run as separate processes by tests/test_closed_book_memory.py, so that what the writer held is
not in the reader's peak. The reader's baseline is taken after the closed-book code and the
input package's URLs are loaded; the peak is the process's maximum resident set size.
"""
from __future__ import annotations

import json
import resource
import sys
from pathlib import Path

HEAD = b'{"schema_version":"ATIF-v1.6","agent":{"name":"probe"},'
CALL = b'{"tool_call_id":"c","function_name":"Bash","arguments":{"command":"ls /app/Payload"}}'
LAST = b'{"step_id":2,"tool_calls":[' + CALL + b']}]}'


def write(folder: Path, shape: str, mib: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    size = mib << 20
    for name, cont in (("trajectory.json", True), ("trajectory.cont-1.json", False)):
        with open(folder / name, "wb") as out:
            out.write(HEAD + (b'"continued_trajectory_ref":"trajectory.cont-1.json",' if cont else b"") + b'"steps":[')
            if shape == "ordinary":       # steps with a call and a 1 MiB observation each
                step = (b'{"step_id":1,"tool_calls":[' + CALL + b'],"observation":{"results":[{"content":"'
                        + b"x" * (1 << 20) + b'"}]}},')
                for _ in range(size // len(step)):
                    out.write(step)
            elif shape == "small_values":  # one empty object per three bytes: 20 times the file when parsed
                out.write(b'{"step_id":1,"x":[' + b"{}," * (size // 3) + b"{}]},")
            elif shape == "worst_within_limits":   # just under every limit: values, decoded text, one call
                out.write(b'{"step_id":1,"x":[' + b"{}," * 990_000 + b'{}],"tool_calls":[{"tool_call_id":"c",'
                          b'"function_name":"Bash","arguments":{"command":"' + b"x" * (15 << 20)
                          + "\U0001F600".encode() + b'"}}],"observation":{"results":[{"content":"'
                          + b"y" * (44 << 20) + b'"}]}},')
            out.write(LAST)


def read(folder: Path, case_input: Path) -> None:
    from usd_repair_verifier import closed_book
    from usd_repair_verifier.closed_book.allowed import allowed_urls

    allowed_urls(case_input)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    verdict = closed_book.evaluate(folder / "trajectory.json", case_input)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"status": verdict.status, "reason": verdict.reason, "above_baseline_mib": (peak - base) // 1024}))


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
    else:
        read(Path(sys.argv[2]), Path(sys.argv[3]))
