"""The physical grade: gate, engine probe, the runtime pytest session in a process of its own, OUT/physical.json.

Separate from the reward: never reads or writes reward.json/grade.json, never touches authored_usd,
never combines scores. Statuses (each with a reason when not graded):
  ``graded``                every property measured or null with its reason (engine refusals included)
  ``not_run``               nothing ran: invalid submission, engine not installed, engine versions other
                            than the pins; every property null
  ``infrastructure_error``  the verifier or the runtime session failed; properties null; not a score
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from usd_repair_verifier import IMPORT_ROOT
from usd_repair_verifier.gates.validity.fork import kill_group
from usd_repair_verifier.profiles.digest import tree_digest
from usd_repair_verifier.scoring.outputs import prepare_separate_output, write_json
from usd_repair_verifier.scoring.progress import working

from . import runtime_server
from .property_results import PROPERTIES, TESTS, nulls
from .record import PhysicalRecord
from .settings import ENGINE_MODULES, SETTINGS, THRESHOLDS, pinned_versions

PHYSICAL_FILE = "physical.json"
RECORD_VERSION = "3"   # 3: corrections, slope_drop, grasp_and_lift
RUNTIME_DIR = Path(__file__).resolve().parent / "runtime_tests"
CACHE_ENV = "WARP_CACHE_PATH"


def default_kernel_cache() -> Path:
    """Where compiled Warp kernels go (about 20 s to build once) without WARP_CACHE_PATH: the user's
    cache folder ($XDG_CACHE_HOME, else ~/.cache), never the source tree or the installed package."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "usd-repair-verifier" / "warp"


DEFAULT_CACHE = default_kernel_cache()
RUNTIME_TIMEOUT_S = 900

PROBE = (
    "import importlib.util, json, sys\n"
    "from importlib import metadata\n"
    "modules, dists = json.loads(sys.argv[1]), json.loads(sys.argv[2])\n"
    "missing = [m for m in modules if importlib.util.find_spec(m) is None]\n"
    "def version(name):\n"
    "    try:\n"
    "        return metadata.version(name)\n"
    "    except metadata.PackageNotFoundError:\n"
    "        return None\n"
    "print(json.dumps({'missing': missing, 'versions': {d: version(d) for d in dists},\n"
    "                  'python': sys.version.split()[0], 'executable': sys.executable}))\n"
)


def probe_engine(python: list[str]) -> dict:
    """Which engine modules the runtime interpreter lacks, and the versions of the pinned distributions
    it holds (a subprocess: the very interpreter that will run)."""
    done = subprocess.run([*python, "-c", PROBE, json.dumps(list(ENGINE_MODULES)), json.dumps(sorted(pinned_versions()))],
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        return {"missing": list(ENGINE_MODULES), "error": done.stderr.strip()[-500:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def version_mismatches(found: dict) -> list[str]:
    """'name found (pinned X)' for every pinned distribution whose installed version differs."""
    return [f"{name} {found.get(name)} (pinned {pin})" for name, pin in sorted(pinned_versions().items())
            if found.get(name) != pin]


def _properties(results: list[dict]) -> dict:
    """{test: {property: result}} in the fixed order of results.PROPERTIES."""
    by_key = {(r["test"], r["name"]): r for r in results}
    return {t: {n: by_key.get((t, n)) for n in PROPERTIES[t]} for t in TESTS}


def _summary(properties: dict) -> dict:
    flat = [r for t in properties.values() for r in t.values() if r is not None]
    return {"measured": sum(r["passed"] is not None for r in flat), "passed": sum(r["passed"] is True for r in flat),
            "failed": sum(r["passed"] is False for r in flat), "null": sum(r["passed"] is None for r in flat),
            "failed_properties": [f"{r['test']}.{r['name']}" for r in flat if r["passed"] is False]}


class _Stop(Exception):
    """A step ended the grade: the record's status and reason."""

    def __init__(self, status: str, reason: str):
        super().__init__(reason)
        self.status, self.reason = status, reason


def run_physical(case: Path, submission: Path, out: Path, *, python: list[str] | None = None,
                 validity_timeout_s: float | None = None) -> dict:
    """Grade and write OUT/physical.json; returns the record. python: the runtime interpreter argv
    (a fresh one); None: this interpreter, forked from the runtime server when one runs."""
    started = time.monotonic()
    case, submission, out = Path(case), Path(submission), Path(out)
    prepare_separate_output(out, submission, PHYSICAL_FILE, [("case", case)])
    record: dict = {
        "record_version": RECORD_VERSION, "status": None, "reason": None,
        "case": str(case), "submission": str(submission),
        "authored_usd_changed": False,   # never: a separate grade
        "validity": None, "engine": None, "settings": SETTINGS.to_json(), "thresholds": THRESHOLDS.to_json(),
        "digests": None, "correspondence": None, "summary": None,
        "tests": _properties([]), "timings": {},
    }
    try:
        loaded = _load_case(case, submission, record)
        candidate_root = _check_validity(submission, loaded, record, validity_timeout_s)
        _check_engine(python or [sys.executable], record)
        payload, exit_code = _run_session(python, loaded.reference_root_layer, candidate_root, record,
                                          loaded.profile.variant_selections)
        _check_payload(payload, exit_code, submission, loaded, record)
        status, reason, results = "graded", _refusal(payload), payload["results"]
    except _Stop as stop:
        status, reason, results = stop.status, stop.reason, [r.to_json() for r in nulls(stop.reason)]
    record["status"], record["reason"] = status, reason
    record["tests"] = _properties(results)
    record["summary"] = _summary(record["tests"])
    record["timings"]["total_s"] = round(time.monotonic() - started, 3)
    # Written from its model (physical/record.py, which the published schema is generated from).
    write_json(out / PHYSICAL_FILE, PhysicalRecord.model_validate(record).model_dump(exclude_unset=True))
    return record


def _load_case(case: Path, submission: Path, record: dict):
    """Step 1: the case, and the digests of the exact bytes that will be tested."""
    try:
        from usd_repair_verifier.profiles.case import load_case

        loaded = load_case(case, verify_digests=True)
    except Exception as error:  # CaseError, DigestMismatch, a malformed profile
        raise _Stop("infrastructure_error", f"case unusable: {type(error).__name__}: {error}") from error
    try:
        candidate_digest = tree_digest(submission)
    except OSError as error:
        raise _Stop("not_run", f"cannot read the submission: {error}") from error
    record["digests"] = {"reference": loaded.profile.reference.digest, "candidate": candidate_digest}
    record["variant_selections"] = dict(loaded.profile.variant_selections)
    return loaded


def _check_validity(submission: Path, loaded, record: dict, timeout_s: float | None) -> Path:
    """Step 2: the validity gate of the authored-USD grade (the physical grade runs only on a valid
    package); returns the candidate's root layer."""
    from usd_repair_verifier.gates.validity import check_submission

    t0 = time.monotonic()
    validity = check_submission(submission, loaded.profile.limits or None, timeout_s=timeout_s,
                                reference=loaded.reference_root_layer,
                                variant_selections=loaded.profile.variant_selections)
    record["timings"]["validity_s"] = round(time.monotonic() - t0, 3)
    record["validity"] = {"valid": validity.valid, "reason": validity.reason}
    if validity.infrastructure_error:
        raise _Stop("infrastructure_error", f"validity gate: {validity.infrastructure_error}")
    if not validity.valid:
        raise _Stop("not_run", f"the submission is not valid: {validity.reason}")
    return Path(validity.root_layer)


def _check_engine(python: list[str], record: dict) -> None:
    """Step 3: the engine, in the runtime interpreter, at the pinned versions."""
    try:
        probe = probe_engine(python)
    except (OSError, subprocess.SubprocessError) as error:
        probe = {"missing": list(ENGINE_MODULES), "error": f"{type(error).__name__}: {error}"}
    record["engine"] = {"name": "newton", "solver": SETTINGS.solver, "device": SETTINGS.device,
                        "interpreter": python, "python": probe.get("python"), "versions": None,
                        "versions_pinned": pinned_versions(), "versions_probed": probe.get("versions")}
    if probe.get("missing"):
        raise _Stop("not_run", "engine not installed: missing " + ", ".join(probe["missing"])
                    + " in " + " ".join(python) + " (pip install -e '.[physical]')"
                    + (f"; {probe['error']}" if probe.get("error") else ""))
    # the thresholds were calibrated on the pinned versions: another version's numbers mean nothing here
    mismatched = version_mismatches(probe.get("versions") or {})
    if mismatched:
        raise _Stop("not_run", "engine version differs from the pins the thresholds were calibrated on: "
                    + ", ".join(mismatched) + " (pip install -e '.[physical]')")


def session_env() -> dict:
    """The runtime session's environment, but for its config file: this process's, with the
    kernel cache, the verifier first on the import path and no installed pytest plugin (the
    runtime tests need none but their conftest; hypothesis alone cost a second per run)."""
    env = dict(os.environ)
    env.setdefault(CACHE_ENV, str(DEFAULT_CACHE))
    env["PYTHONPATH"] = os.pathsep.join([str(IMPORT_ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return env


def _run_session(python: list[str] | None, reference_root: Path, candidate_root: Path, record: dict,
                 variant_selections: dict | None = None) -> tuple[dict, int]:
    """Step 4: the runtime tests in their own pytest session, in a process of their own (an engine
    crash cannot take the grade down with it, and the authored-USD grade never imports the engine):
    forked from this process's runtime server when it runs one and no other interpreter was asked
    for (physical/runtime_server.py), else a fresh interpreter. Returns the results the session
    wrote and its exit code."""
    env = session_env()
    record["engine"]["kernel_cache"] = env[CACHE_ENV]
    with tempfile.TemporaryDirectory(prefix="usdgrade-physical-") as tmp:
        config_path, results_path = Path(tmp) / "config.json", Path(tmp) / "results.json"
        config_path.write_text(json.dumps({"reference": str(reference_root), "candidate": str(candidate_root),
                                           "results": str(results_path),
                                           "variant_selections": dict(variant_selections or {})}), encoding="utf-8")
        env["USDGRADE_PHYSICAL_CONFIG"] = str(config_path)
        args = [str(RUNTIME_DIR), "-c", str(RUNTIME_DIR / "pytest.ini"), "--rootdir", str(RUNTIME_DIR), "-q",
                "-p", "no:randomly", "-p", "no:xdist"]
        server = runtime_server.server_for(env) if python is None else None
        t0 = time.monotonic()
        cache = Path(env[CACHE_ENV])
        first = not cache.is_dir() or not any(cache.iterdir())
        note = "the first run compiles the engine's kernels, about a minute" if first else "about 5 to 10 s"
        # cwd: the temporary folder, where MuJoCo writes its MUJOCO_LOG.TXT on a refusal
        with working("physical: runtime tests of reference and candidate in Newton", note):
            exit_code, output, forked = (_forked_session(server, args, env, tmp) if server is not None else
                                         _fresh_session([*(python or [sys.executable]), "-m", "pytest", *args], env, tmp))
        record["timings"]["runtime_session_s"] = round(time.monotonic() - t0, 3)
        record["runtime_session"] = {"argv": ["-m", "pytest", *args], "exit_code": exit_code,
                                     "output_tail": _tail(output), "forked": forked}
        try:
            return json.loads(results_path.read_text(encoding="utf-8")), exit_code
        except (OSError, ValueError) as error:
            raise _Stop("infrastructure_error", f"the runtime session wrote no results (exit {exit_code}): "
                                                f"{type(error).__name__}: {error}") from error


def _fresh_session(argv: list[str], env: dict, cwd: str) -> tuple[int, str, bool]:
    """(exit code, output, forked: False)"""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=RUNTIME_TIMEOUT_S)
    except subprocess.TimeoutExpired as error:
        raise _Stop("infrastructure_error", f"the runtime session ran past {RUNTIME_TIMEOUT_S} s") from error
    return done.returncode, done.stdout + done.stderr, False


def _forked_session(server, args: list[str], env: dict, cwd: str) -> tuple[int, str, bool]:
    """The session forked from the server: its config holds argv and environment, its output goes
    to a file; past the time limit its process group is killed."""
    request, output = Path(cwd) / "session.json", Path(cwd) / "session-output.txt"
    request.write_text(json.dumps({"argv": args, "env": env}), encoding="utf-8")
    output.touch()
    try:
        child = server.spawn(str(request), str(output), cwd)
    except OSError:  # the server is gone: this session runs fresh
        return _fresh_session([sys.executable, "-m", "pytest", *args], env, cwd)
    try:
        code = child.wait(timeout=RUNTIME_TIMEOUT_S)
    except subprocess.TimeoutExpired as error:
        kill_group(child)
        raise _Stop("infrastructure_error", f"the runtime session ran past {RUNTIME_TIMEOUT_S} s") from error
    return code, output.read_text(encoding="utf-8", errors="replace"), True


def _check_payload(payload: dict, exit_code: int, submission: Path, loaded, record: dict) -> None:
    """Step 5: record what the session reports; the bytes tested must still be the bytes recorded,
    and every property must be reported."""
    record["engine"]["versions"] = payload["versions"]
    record["settings"] = payload["settings"]
    record["thresholds"] = payload["thresholds"]
    record["correspondence"] = payload["correspondence"]
    record["engine"]["warnings"] = payload["engine_warnings"]
    record["engine"]["ground_m"] = payload["ground_m"]
    record["corrections"] = payload["corrections"]
    record["engine"]["refusals"] = {"reference": payload["reference_refusal"], "candidate": payload["candidate_refusal"]}
    record["timings"].update({f"runtime_{k}": v for k, v in payload["timings"].items()})
    if tree_digest(submission) != record["digests"]["candidate"] \
            or tree_digest(loaded.paths.reference) != record["digests"]["reference"]:
        raise _Stop("infrastructure_error", "a package changed while it was being tested")
    if payload["errors"]:
        raise _Stop("infrastructure_error",
                    "a runtime test raised: " + " | ".join(e.splitlines()[0] for e in payload["errors"]))
    missing = [f"{t}.{n}" for t, props in _properties(payload["results"]).items() for n, r in props.items() if r is None]
    if missing:
        raise _Stop("infrastructure_error", f"the runtime session did not report {', '.join(missing)} "
                                            f"(exit {exit_code})")


def _refusal(payload: dict) -> str | None:
    """A graded record's reason: the engine refused the reference or the candidate."""
    if payload["reference_refusal"]:
        return f"reference itself unloadable: {payload['reference_refusal']}"
    if payload["candidate_refusal"]:
        return f"engine refused the candidate: {payload['candidate_refusal']}"
    return None


def _tail(text: str, limit: int = 3000) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]
