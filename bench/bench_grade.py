"""How long a full `pytest checks` grade takes, against the floor and a peer validator.

    python -m bench.bench_grade [--quick] [--repeat N] [--sizes 20x50000,50x200000] [--no-peer] [--no-dog] [--format usda]

Per asset (the reference package graded as the candidate of a case):
  grade    wall time of the operator's exact command, `python -m pytest checks ...`, in a child,
           run by the operator's install: a venv holding only the verifier and its dependencies
           (/tmp/usdgrade-bench-venv, `pip install -e .`, made on demand; `--python PATH` picks
           another interpreter: a machine with more pytest plugins starts slower), with the
           verifier's bytecode compiled first as an install has it
  floor    a fresh python that imports pxr, opens both stages and runs the UsdPhysics parser on both
  peer     omniverse-asset-validator's `omni_asset_validate` on the candidate root layer (own venv in
           /tmp/oav-venv, created on demand; "unavailable" with the reason when it cannot be installed)
  peak     peak resident memory of the grade (/usr/bin/time -v, else getrusage of the children)
  split    by stage, from grade.json "timings" (reference and candidate summed): outside (grade -
           in-session total: interpreter, pytest, exit), imports (the measuring code), validity,
           open, snapshot (bodies and joints), sampling (visible parts: tessellation, surface
           samples), colliders, mass, correspondence, checks (the tests' calls, plus the shared
           measuring under -n), scoring; start-up alone = `python -c 'import pxr, scipy, trimesh'`
Assets: committed suite cases (cartpole, ant, cheetah), the real robots baxter (415k triangles) and
kitchen_franka (fixtures/robot_cases), dm_control's dog converted with the
converter venv (/tmp/convenv) when available, and generated chains (bench/generate.py) at several
sizes. Cases for dog and the generated assets are made on the fly: a joint_frame fault injected
with usd_repair_verifier.authoring.inject, the profile built with usd_repair_verifier.authoring.freeze.build_profile (not self-graded).
Last, the largest asset is graded serially and with `-n 2` (the workers share the work:
scoring/work_share.py).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
from bench.grade_table import fmt, print_table  # noqa: E402

OAV_VENV = Path(os.environ.get("OAV_VENV", "/tmp/oav-venv"))
GRADE_VENV = Path(os.environ.get("USDGRADE_BENCH_VENV", "/tmp/usdgrade-bench-venv"))
PYTHON = sys.executable  # the grading interpreter: set in main()
CONVENV = Path(os.environ.get("CONVENV", "/tmp/convenv"))
TIME_BIN = "/usr/bin/time"
SUITE = [  # (label, committed case)
    ("small:cartpole", "gen_cartpole_1"),
    ("suite:ant", "ant_two_joint_faults"),
    ("medium:cheetah", "gen_cheetah_1"),
]
ROBOT_ROWS = [  # (label, committed real-robot case)
    ("robot:baxter 415k", "baxter_roots_and_arm"),
    ("robot:kitchen 182k", "kitchen_density_and_redundant"),
]
FULL_SIZES = [(20, 50_000), (50, 200_000), (100, 500_000), (200, 1_000_000)]
QUICK_SIZES = [(20, 50_000)]
FLOOR_CODE = """
import sys
from pxr import Sdf, Usd, UsdPhysics
for root in sys.argv[1:]:
    stage = Usd.Stage.Open(root, Usd.Stage.LoadAll)
    UsdPhysics.UsdPhysicsLoadStageFromPrimRange(stage, [Sdf.Path.absoluteRootPath])
    del stage  # the next open reads its layers again (the grade reads the same package twice too)
"""


@dataclass
class Row:
    label: str
    bodies: int | None = None
    triangles: int | None = None
    grade: float | None = None
    floor: float | None = None
    peer: float | None = None
    peak_mb: float | None = None
    split: dict = field(default_factory=dict)
    reward: object = None
    notes: list = field(default_factory=list)


class ChildFailed(Exception):
    pass


def run_child(command: list[str], timeout: float, cwd: Path = REPO, measure_memory: bool = False,
              env: dict | None = None) -> tuple[float, float | None, subprocess.CompletedProcess]:
    """Run a child; return (wall seconds, peak RSS in MB or None, process). Raises ChildFailed on timeout."""
    use_time = measure_memory and os.access(TIME_BIN, os.X_OK)
    full = [TIME_BIN, "-v", *command] if use_time else command
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    try:
        proc = subprocess.run(full, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})})
    except subprocess.TimeoutExpired as error:
        raise ChildFailed(f"timed out after {timeout:.0f} s: {' '.join(command[:4])} ...") from error
    wall = time.perf_counter() - start
    peak = None
    if use_time:
        found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
        peak = int(found.group(1)) / 1024 if found else None
    elif measure_memory:
        after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        # ru_maxrss of the children is a running maximum: only a new maximum is attributable.
        peak = after / 1024 if after > before else None
    return wall, peak, proc


def compile_verifier() -> None:
    """The verifier's bytecode, compiled before anything is timed, as an install has it (pip
    install . compiles it, a Harbor task's image compiles a grade's; the children below run with
    PYTHONDONTWRITEBYTECODE and the sealed grade with -B, so without this every timed grade of a
    checkout compiled the verifier's modules from source)."""
    folders = sorted(str(p.parent) for p in REPO.glob("*/__init__.py")   # the packages, usd_repair_verifier/ too
                     if p.parent.name not in ("bench", "tests", "tests_harbor"))
    _, _, proc = run_child([PYTHON, "-m", "compileall", "-q", *folders], 300)
    if proc.returncode != 0:
        print(f"compileall: {(proc.stdout + proc.stderr).strip()[-300:]}")


def root_layer(package: Path) -> Path:
    from usd_repair_verifier.authoring.inject import root_layer_of
    return root_layer_of(package)


def count_geometry(root: Path) -> tuple[int, int]:
    """(rigid bodies, triangles of meshes) of a composed stage, in this process (cheap)."""
    from pxr import Usd, UsdGeom, UsdPhysics
    stage = Usd.Stage.Open(str(root), Usd.Stage.LoadAll)
    bodies = triangles = 0
    for prim in stage.Traverse():
        if prim.HasAPI(UsdPhysics.RigidBodyAPI):
            bodies += 1
        if prim.IsA(UsdGeom.Mesh):
            counts = UsdGeom.Mesh(prim).GetFaceVertexCountsAttr().Get() or []
            triangles += sum(max(0, c - 2) for c in counts)
    return bodies, triangles


# ---------------------------------------------------------------- cases made on the fly

def first_joint(root: Path) -> str:
    from pxr import Sdf, Usd, UsdPhysics
    stage = Usd.Stage.Open(str(root), Usd.Stage.LoadAll)
    parsed = UsdPhysics.UsdPhysicsLoadStageFromPrimRange(stage, [Sdf.Path.absoluteRootPath])
    joints = []
    for kind, (paths, _descs) in parsed.items():
        if str(kind).endswith("Joint") and "Fixed" not in str(kind):
            joints += [str(p) for p in paths]
    if not joints:
        raise ChildFailed(f"no joint in {root}")
    return sorted(joints)[0]


def make_case(reference: Path, case: Path, case_id: str) -> str:
    """Inject a joint_frame fault into a copy of `reference`, build the profile, write CASE. Returns the joint."""
    from usd_repair_verifier.authoring.freeze import build_profile, write_case
    from usd_repair_verifier.authoring.inject import inject
    from usd_repair_verifier.profiles.schema import Fault

    joint = first_joint(root_layer(reference))
    with tempfile.TemporaryDirectory(prefix="bench_input_") as tmp:
        broken = Path(tmp) / "input"
        inject(reference, broken, [("joint_frame", joint)], seed=0)
        profile = build_profile(case_id, reference, broken, [Fault(id="f1", kind="joint_frame", target=joint)])
        write_case(case, reference, broken, profile)
    return joint


def make_case_child(reference: Path, case: Path, case_id: str, timeout: float) -> str:
    """make_case in a child process (a timeout cannot stop work done in this one)."""
    code = ("import sys; from bench.bench_grade import make_case; "  # run in the checkout: its folder heads sys.path
            
            "print(make_case(*map(__import__('pathlib').Path, sys.argv[2:4]), sys.argv[4]))")
    _, _, proc = run_child([sys.executable, "-c", code, str(REPO), str(reference), str(case), case_id], timeout)
    if proc.returncode != 0:
        raise ChildFailed(f"case not built: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else proc.returncode}")
    return proc.stdout.strip().splitlines()[-1]


def generated_package(work: Path, bodies: int, triangles: int, fmt: str, timeout: float) -> Path:
    out = work / f"gen_{bodies}x{triangles}"
    code = ("import sys; from pathlib import Path; from bench.generate import generate; "  # run in the checkout
            
            "generate(Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])")
    _, _, proc = run_child([sys.executable, "-c", code, str(REPO), str(out), str(bodies), str(triangles), fmt], timeout)
    if proc.returncode != 0:
        raise ChildFailed(f"generate failed: {proc.stderr.strip()[-300:]}")
    return out


def converted_dog(work: Path, timeout: float) -> Path:
    exe = CONVENV / "bin" / "mujoco_usd_converter"
    if not exe.exists():
        raise ChildFailed(f"no converter at {exe} (see fixtures/README.md)")
    _, _, proc = run_child([str(CONVENV / "bin" / "python"), "-c",
                            "import dm_control, os; print(os.path.dirname(dm_control.__file__))"], 60)
    if proc.returncode != 0:
        raise ChildFailed("dm_control is not installed in the converter venv")
    src = Path(proc.stdout.strip()) / "suite" / "dog.xml"
    out = work / "dog_conv"
    shutil.rmtree(out, ignore_errors=True)
    _, _, proc = run_child([str(exe), str(src), str(out)], timeout, cwd=work)
    if proc.returncode != 0:
        raise ChildFailed(f"converter failed ({proc.returncode}): {proc.stderr.strip()[-300:]}")
    tops = [p for p in out.iterdir() if p.is_file() and p.suffix in (".usd", ".usda", ".usdc", ".usdz")]
    if len(tops) != 1:
        raise ChildFailed(f"converter wrote {len(tops)} root layers")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    if size > 150_000_000:
        raise ChildFailed(f"converted dog is {size / 1e6:.0f} MB")
    return out


# ---------------------------------------------------------------- measurements

def grade(case: Path, out: Path, timeout: float, extra: tuple[str, ...] = ()) -> tuple[float, float | None, dict]:
    shutil.rmtree(out, ignore_errors=True)
    command = [PYTHON, "-m", "pytest", "checks", "--case", str(case), "--submission", str(case / "reference"),
               "--out", str(out), "-q", "-p", "no:cacheprovider", *extra]
    wall, peak, proc = run_child(command, timeout, measure_memory=True)
    try:
        result = json.loads((out / "grade.json").read_text())
    except (OSError, ValueError):
        raise ChildFailed(f"no grade.json (exit {proc.returncode}): {proc.stdout.strip()[-300:]}")
    if proc.returncode not in (0, 1):
        raise ChildFailed(f"grade exited {proc.returncode}: {result.get('infrastructure_error')}")
    return wall, peak, result


def floor(case: Path, timeout: float) -> float:
    roots = [str(root_layer(case / "reference")), str(root_layer(case / "reference"))]
    wall, _, proc = run_child([PYTHON, "-c", FLOOR_CODE, *roots], timeout)
    if proc.returncode != 0:
        raise ChildFailed(f"floor failed: {proc.stderr.strip()[-300:]}")
    return wall


def startup(timeout: float) -> float:
    wall, _, proc = run_child([PYTHON, "-c", "import pxr, scipy, trimesh"], timeout)
    if proc.returncode != 0:
        raise ChildFailed(proc.stderr.strip()[-300:])
    return wall


def ensure_grading_venv(timeout: float) -> str:
    """The operator's install: a venv with only the verifier (editable, so this checkout) and its deps."""
    py = GRADE_VENV / "bin" / "python"
    if not py.exists():
        print(f"installing the verifier in {GRADE_VENV} ...", flush=True)
        _, _, proc = run_child([sys.executable, "-m", "venv", str(GRADE_VENV)], timeout)
        if proc.returncode != 0:
            raise ChildFailed(f"venv failed: {proc.stderr.strip()[-200:]}")
    # Run from outside the checkout: from inside it `import scoring` succeeds without any install.
    # pxr stands for the dependencies (an interrupted install can leave the verifier without them).
    _, _, proc = run_child([str(py), "-c", "import pxr, scoring, sys; print(scoring.__file__)"], 120,
                           cwd=Path(tempfile.gettempdir()))
    if proc.returncode != 0 or not proc.stdout.strip().startswith(str(REPO)):
        _, _, proc = run_child([str(py), "-m", "pip", "install", "-q", "-e", str(REPO)], timeout)
        if proc.returncode != 0:
            raise ChildFailed(f"pip install -e failed: {proc.stderr.strip().splitlines()[-1:]}")
    return str(py)


def ensure_peer(timeout: float) -> Path:
    """The peer's CLI, installed on demand in its own venv; raises ChildFailed with the reason."""
    exe = OAV_VENV / "bin" / "omni_asset_validate"
    py = OAV_VENV / "bin" / "python"
    if not exe.exists():
        print(f"installing omniverse-asset-validator in {OAV_VENV} ...", flush=True)
        if not py.exists():
            _, _, proc = run_child([sys.executable, "-m", "venv", str(OAV_VENV)], timeout)
            if proc.returncode != 0:
                raise ChildFailed(f"venv failed: {proc.stderr.strip()[-200:]}")
        # The validator imports pxr without declaring it: usd-core comes along.
        _, _, proc = run_child([str(py), "-m", "pip", "install", "-q", "omniverse-asset-validator", "usd-core"], timeout)
        if proc.returncode != 0 or not exe.exists():
            raise ChildFailed(f"pip install failed: {proc.stderr.strip().splitlines()[-1:]}")
    _, _, proc = run_child([str(exe), "--version"], 120)
    if proc.returncode != 0:
        raise ChildFailed(f"omni_asset_validate does not start: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return exe


def peer(exe: Path, case: Path, timeout: float) -> tuple[float, str]:
    wall, _, proc = run_child([str(exe), str(root_layer(case / "reference"))], timeout)
    # It exits non-zero when it reports issues; that is a result, not a failure.
    return wall, f"exit {proc.returncode}"


def parse_sizes(text: str) -> list[tuple[int, int]]:
    sizes = []
    for item in text.split(","):
        if item.strip():
            b, t = item.lower().split("x")
            sizes.append((int(b), int(float(t))))
    return sizes


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small asset and one generated size only (< 60 s)")
    parser.add_argument("--record", action=argparse.BooleanOptionalAction, default=None,
                        help="append the results to docs/performance.md (default: yes, except with --quick)")
    parser.add_argument("--sizes", type=parse_sizes, default=None,
                        help="generated sizes as BODIESxTRIANGLES,... (default 20x50000,50x200000,100x500000,200x1000000)")
    parser.add_argument("--format", choices=("usda", "usdc"), default="usda", help="layer format of generated assets")
    parser.add_argument("--no-peer", action="store_true", help="skip omniverse-asset-validator")
    parser.add_argument("--no-dog", action="store_true", help="skip dm_control's dog")
    parser.add_argument("--no-parallel", action="store_true", help="skip serial against -n 2")
    parser.add_argument("--repeat", type=int, default=1,
                        help="grade, floor and peer of each asset this many times in turn; medians (a busy machine)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds allowed to each child process")
    parser.add_argument("--keep", type=Path, default=None, help="work folder to keep (default: a temporary one)")
    parser.add_argument("--python", default=None,
                        help=f"grading interpreter (default: the verifier alone in {GRADE_VENV}, made on demand)")
    return parser.parse_args()


def peer_executable(args: argparse.Namespace, timeout: float) -> str | None:
    """omniverse-asset-validator's command, or None (skipped, or it cannot be installed)."""
    if args.no_peer:
        print("peer: skipped (--no-peer)")
        return None
    try:
        peer_exe = ensure_peer(max(timeout, 300.0))
        print(f"peer: {peer_exe}")
        return peer_exe
    except ChildFailed as error:
        print(f"peer: unavailable ({error})")
        return None


def bench_cases(args: argparse.Namespace, work: Path, timeout: float, skipped: list[str]) -> list[tuple[Row, Path]]:
    """The committed suite cases, then dog, then the generated sizes (cases made on the fly); what
    cannot be made is noted in ``skipped``."""
    sizes = args.sizes if args.sizes is not None else (QUICK_SIZES if args.quick else FULL_SIZES)
    cases: list[tuple[Row, Path]] = []
    for label, name in SUITE[:1] if args.quick else SUITE:
        case = REPO / "fixtures" / "cases" / name
        if not (case / "profile.json").exists():
            skipped.append(f"{label}: skipped: no case {case}")
            continue
        cases.append((Row(label), case))
    if not args.quick:   # real robots made of meshes (fixtures/robot_cases): the largest and a mid-size one
        for label, name in ROBOT_ROWS:
            cases.append((Row(label), REPO / "fixtures" / "robot_cases" / name))
    if not (args.quick or args.no_dog):
        try:
            pkg = converted_dog(work, timeout)
            case = work / "case_dog"
            make_case_child(pkg, case, "bench_dog", timeout)
            cases.append((Row("large:dog"), case))
        except ChildFailed as error:
            skipped.append(f"large:dog: skipped: {error}")
    for bodies, triangles in sizes:
        label = f"gen:{bodies}x{triangles // 1000}k"
        try:
            t0 = time.perf_counter()
            pkg = generated_package(work, bodies, triangles, args.format, timeout)
            case = work / f"case_{bodies}x{triangles}"
            make_case_child(pkg, case, f"bench_{bodies}x{triangles}", timeout)
            row = Row(label)
            row.notes.append(f"generated + case built in {time.perf_counter() - t0:.1f} s ({args.format})")
            cases.append((row, case))
        except ChildFailed as error:
            skipped.append(f"{label}: skipped: {error}")
    return cases


def measure(row: Row, case: Path, repeat: int, work: Path, timeout: float, peer_exe: str | None) -> None:
    """Fill one row: grade, floor and peer, ``repeat`` times in turn (a load change hits all three);
    medians."""
    print(f"grading {row.label} ...", flush=True)
    grades, floors, peers = [], [], []
    for _ in range(repeat):
        try:
            row.bodies, row.triangles = count_geometry(root_layer(case / "reference"))
            wall, row.peak_mb, result = grade(case, work / f"out_{row.label.replace(':', '_')}", timeout)
            grades.append(wall)
            row.split = result.get("timings") or {}
            row.reward = result.get("authored_usd")
            if row.reward != 1.0:
                row.notes.append(f"reference scored {row.reward} ({result.get('status')})")
        except ChildFailed as error:
            row.notes.append(f"grade skipped: {error}")
        try:
            floors.append(floor(case, timeout))
        except ChildFailed as error:
            row.notes.append(f"floor skipped: {error}")
        if peer_exe is not None:
            try:
                wall, note = peer(peer_exe, case, timeout)
                peers.append(wall)
                if f"peer {note}" not in row.notes:
                    row.notes.append(f"peer {note}")
            except ChildFailed as error:
                row.notes.append(f"peer skipped: {error}")
    row.grade, row.floor, row.peer = (statistics.median(v) if v else None for v in (grades, floors, peers))


def serial_vs_parallel(cases: list[tuple[Row, Path]], work: Path, timeout: float) -> None:
    """The largest graded asset again with `-n 2`, against its serial grade."""
    graded = [(r, c) for r, c in cases if r.grade is not None]
    if not graded:
        print("serial vs -n 2: skipped: nothing was graded")
        return
    row, case = max(graded, key=lambda rc: (rc[0].triangles or 0, rc[0].bodies or 0))
    try:
        par, par_peak, result = grade(case, work / "out_parallel", timeout, ("-n", "2"))
        print(f"serial vs -n 2 on {row.label}: serial {row.grade:.2f} s ({fmt(row.peak_mb, '.0f')} MB), "
              f"-n 2 {par:.2f} s ({fmt(par_peak, '.0f')} MB largest process), "
              f"-n 2 / serial = {par / row.grade:.2f}x; reward {result.get('authored_usd')}")
    except ChildFailed as error:
        print(f"serial vs -n 2: skipped: {error}")


def main() -> int:
    args = parse_args()
    from bench.performance_log import recorded
    with recorded("bench/bench_grade.py", args.record if args.record is not None else not args.quick):
        return run(args)


def run(args: argparse.Namespace) -> int:
    global PYTHON
    PYTHON = args.python or ensure_grading_venv(max(args.timeout, 300.0))
    print(f"grading with {PYTHON}")
    compile_verifier()
    timeout = min(args.timeout, 50.0) if args.quick else args.timeout
    work_ctx = tempfile.TemporaryDirectory(prefix="bench_grade_") if args.keep is None else None
    work = Path(work_ctx.name) if work_ctx else args.keep
    work.mkdir(parents=True, exist_ok=True)
    skipped: list[str] = []
    start_up = None
    try:
        try:
            start_up = startup(timeout)
        except ChildFailed as error:
            skipped.append(f"start-up: {error}")
        peer_exe = peer_executable(args, timeout)
        cases = bench_cases(args, work, timeout, skipped)
        rows: list[Row] = []
        for row, case in cases:
            measure(row, case, args.repeat, work, timeout, peer_exe)
            rows.append(row)
        print_table(rows, start_up)
        for line in skipped:
            print(line)
        if not args.no_parallel:
            serial_vs_parallel(cases, work, timeout)
    finally:
        if work_ctx:
            work_ctx.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
