"""Harbor's own terminus-2 agent on the ant task (closed book), its model a scripted server on
127.0.0.1 (tests_harbor/scripted_model.py): one run repairs one fault offline, one first tries
to fetch the reference from a server on this machine."""
from __future__ import annotations

import subprocess
from pathlib import Path

from tests_harbor.harbor_client import Stack, concurrently, harbor_run
from tests_harbor.scripted_model import CountingServer, ScriptedModel, terminus_reply

# The ant's moved joint frame, repaired by hand: the same edit as the fixture submission
# fixtures/submissions/ant_two_joint_faults_one_repair (one of its two faults: 0.5).
REPAIR = ("sed -i 's/physics:localPos1 = (0.08320544, 0.0012113871, -0.042976666)/physics:localPos1 = (0, 0, 0)/'"
          " /app/Payload/Physics.usda\n")
MODEL_INFO = '{"max_input_tokens": 200000, "max_output_tokens": 8192, "input_cost_per_token": 0, "output_cost_per_token": 0}'


def _terminus_job(stack: Stack, task: Path, jobs: Path, name: str, commands: list[str]):
    """One terminus-2 trial: the scripted model types `commands` in one turn, then says the task
    is complete (twice: terminus asks for a confirmation). Returns (job, requests the model saw)."""
    replies = [terminus_reply(commands, False), terminus_reply([], True), terminus_reply([], True)]
    with ScriptedModel(replies) as model:
        job = harbor_run(stack, task, "terminus-2", jobs, f"terminus-{name}", "-m", "openai/scripted",
                         "--ak", f"api_base={model.base_url}", "--ak", "enable_summarize=false",
                         "--ak", "record_terminal_session=false", "--ak", "max_turns=6",
                         "--ak", f"model_info={MODEL_INFO}", concurrent=1)
    return job, len(model.requests)


def terminus_runs(stack: Stack, task: Path, jobs: Path, gateway: str) -> dict:
    """Both runs at once, the fetch's target a counting server on the Docker bridge's host
    address. First the control: a container without a network policy reaches that server."""
    runs = {}
    with CountingServer(gateway) as target:
        probe = f"import urllib.request; print(urllib.request.urlopen({target.url!r}, timeout=10).read())"
        r = subprocess.run(["docker", "run", "--rm", stack.base_image, "python3", "-c", probe],
                           capture_output=True, text=True, timeout=300)
        runs["control"] = (r.returncode, r.stdout + r.stderr, target.hits)
        fetch = f"curl -sS -m 5 {target.url} -o /tmp/reference.usda; echo curl-exit-$?\n"
        # The same fetch with its address assembled at run time: the rule can flag the call
        # (urlopen) but read no address from it; the network policy is what stops it.
        host, port = target.server.server_address[:2]
        hidden = (f"python3 -c \"import urllib.request as u; p={host.split('.')!r}; "
                  f"u.urlopen('ht'+'tp:/'+'/'+'.'.join(p)+':{port}/x', timeout=5)\"; echo py-exit-$?\n")
        runs.update(concurrently(repair=lambda: _terminus_job(stack, task, jobs, "repair", [REPAIR]),
                                 fetch=lambda: _terminus_job(stack, task, jobs, "fetch", [fetch, hidden, REPAIR])))
        runs["target_hits"] = target.hits - runs["control"][2]
    return runs
