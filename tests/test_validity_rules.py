"""Tests for gates/validity/: one hostile package per offence, built in the test.

Every package is generated here (small usda text or bytes, no network).  Each
case's report is computed once (lazily, per module) and shared by the case's
own test and by ``test_never_raises_on_any_case``.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import json
import os
import resource
import struct
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from tests.variants import crate_claiming_points, usdz_bytes, write_file
from usd_repair_verifier.gates.validity import (
    RULES,
    ResourceLimits,
    RuleResult,
    ValidityReport,
    check_submission,
)

# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def write(base: Path, rel: str, text: str | bytes) -> Path:
    return write_file(base / rel, text)


def usda(body: str = "", header: str = "") -> str:
    head = f"#usda 1.0\n(\n{header}\n)\n" if header else "#usda 1.0\n"
    return head + body + "\n"


def make_clean(pkg: Path) -> Path:
    """Root sublayers a layer that references another and payloads a third; a texture."""
    write(pkg, "robot.usda", usda('def Xform "World" {}', "    subLayers = [@./layers/body.usda@]"))
    write(pkg, "layers/body.usda", usda(
        'def Xform "World" (\n'
        '    prepend references = @./parts/arm.usda@</Arm>\n'
        '    prepend payload = @../payloads/heavy.usda@</Heavy>\n'
        ') {\n}'
    ))
    write(pkg, "layers/parts/arm.usda", usda(
        'def Mesh "Arm" {\n'
        '    point3f[] points = [(0,0,0), (1,0,0), (0,1,0)]\n'
        '    int[] faceVertexCounts = [3]\n'
        '    int[] faceVertexIndices = [0, 1, 2]\n'
        '    def Shader "Tex" {\n'
        '        uniform token info:id = "UsdUVTexture"\n'
        '        asset inputs:file = @../../textures/steel.png@\n'
        '    }\n'
        '}'
    ))
    write(pkg, "payloads/heavy.usda", usda('def Xform "Heavy" {\n    def Cube "C" {}\n}'))
    write(pkg, "textures/steel.png", b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
    return pkg


WORLD = 'def Xform "World" {}'


def root_with(pkg: Path, body: str = WORLD, header: str = "") -> Path:
    return write(pkg, "root.usda", usda(body, header))


def patch_count(data: bytes, old: int, new: int) -> bytes:
    needle = struct.pack("<Q", old)
    assert needle in data, "array count not found in crate"
    return data.replace(needle, struct.pack("<Q", new))


# ---------------------------------------------------------------------------
# cases: (builder -> submission path, limits, failing rule, substrings)
# ---------------------------------------------------------------------------


@dataclass
class Case:
    build: Callable[[Path], Path]
    rule: str | None                   # the rule expected to fail (None: valid)
    needles: tuple[str, ...] = ()      # must all appear in reason + details
    limits: ResourceLimits = ResourceLimits()


def package(files: dict[str, str | bytes], outside: dict[str, str | bytes] | None = None,
            links: dict[str, str] | None = None) -> Callable[[Path], Path]:
    """A builder of the package tmp/pkg: its files (path in the package -> text or bytes), files
    written beside it (`outside`: path in tmp -> text or bytes) and symbolic links in it (path in
    the package -> path in tmp)."""
    def build(tmp: Path) -> Path:
        for rel, data in (outside or {}).items():
            write(tmp, rel, data)
        pkg = tmp / "pkg"
        pkg.mkdir()
        for rel, data in files.items():
            write(pkg, rel, data)
        for rel, target in (links or {}).items():
            (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(tmp / target, pkg / rel)
        return pkg
    return build


def referencing(asset: str, prim: str = "") -> str:
    """A root layer's body: a prim referencing the asset path (and a prim in it)."""
    return 'def "A" (\n    references = @' + asset + "@" + prim + "\n) {\n}"


def sublayering(asset: str) -> str:
    """A root layer's header: the asset path as its sublayer."""
    return f"    subLayers = [@{asset}@]"


def _udim_shader(path: str) -> str:
    return 'def Shader "Tex" {\n    asset inputs:file = @' + path + '@\n}'


def _not_a_directory(tmp: Path) -> Path:
    return write(tmp, "submission.usda", usda('def "A" {}'))


def _absolute_outside(tmp: Path) -> Path:
    outside = write(tmp, "outside/evil.usda", usda('def "Evil" {}'))
    return package({"root.usda": usda(WORLD, sublayering(str(outside)))})(tmp)


def _sparse_2gb(tmp: Path) -> Path:
    pkg = package({"root.usda": usda(WORLD)})(tmp)
    with open(pkg / "cache.bin", "wb") as fh:
        fh.truncate(2 * 1024**3)
    return pkg


def _agent_reward_files(tmp: Path) -> Path:
    pkg = make_clean(tmp / "pkg")
    write(pkg, "reward.json", json.dumps({"authored_usd": 1.0}))
    write(pkg, "grade.json", json.dumps({"status": "graded", "authored_usd": 1.0}))
    write(pkg, "logs/reward.json", "{not json")
    return pkg


def _crate_claims_billions(tmp: Path) -> Path:
    pkg = package({"root.usda": usda(referencing("./geo/hull.usdc", "</M>"))})(tmp)
    (pkg / "geo").mkdir()
    crate_claiming_points(pkg / "geo" / "hull.usdc", 5000, 3_000_000_000)
    return pkg


def _usdz_crate_claims_billion_vec3(tmp: Path) -> Path:
    from pxr import Sdf, Vt

    work = tmp / "work"
    work.mkdir()
    layer = Sdf.Layer.CreateNew(str(work / "m.usdc"))
    prim = Sdf.PrimSpec(layer, "M", Sdf.SpecifierDef, "Mesh")
    attr = Sdf.AttributeSpec(prim, "points", Sdf.ValueTypeNames.Point3fArray)
    attr.default = Vt.Vec3fArray([(i, i + 0.5, i * 2.25) for i in range(1000)])
    layer.Save()
    del layer
    data = patch_count((work / "m.usdc").read_bytes(), 1000, 1_000_000_000)
    # Member data at offset 39 (not 4-byte aligned): usd-core cannot mmap it and
    # reads through a copy, allocating the claimed 12 GB before checking (measured:
    # 11.5 GB RSS, 12-31 s uncapped).  An aligned member (e.g. offset 36) is mmapped
    # and rejected at once, which would not exercise the cap.
    pkg = package({"geo/hull.usdz": usdz_bytes({"root.usdc": data}),
                   "root.usda": usda(referencing("./geo/hull.usdz", "</M>"))})(tmp)
    with zipfile.ZipFile(pkg / "geo" / "hull.usdz") as zf:
        info = zf.infolist()[0]
        assert (info.header_offset + 30 + len(info.filename) + len(info.extra)) % 4 != 0
    return pkg


EVIL = {"outside/evil.usda": usda('def "Evil" {}')}
STOLEN = {"outside/stolen.png": b"png"}
MISSING_VARIANT_PAYLOAD = (
    'def Xform "Robot" (\n'
    '    variants = { string lod = "low" }\n'
    '    prepend variantSets = "lod"\n'
    ') {\n'
    '    variantSet "lod" = {\n'
    '        "low" {\n'
    '            def "Geo" ( payload = @./payloads/low.usda@ ) {}\n'
    '        }\n'
    '        "high" {\n'
    '            def "Geo" ( payload = @./payloads/high.usda@ ) {}\n'
    '        }\n'
    '    }\n'
    '}'
)
TEXTURE_ESCAPE = (
    'def Material "M" {\n'
    '    def Shader "Tex" {\n'
    '        asset inputs:file = @textures/../../outside/stolen.png@\n'
    '    }\n'
    '}'
)

CASES: dict[str, Case] = {
    "clean": Case(lambda t: make_clean(t / "pkg"), None),
    "not_a_directory": Case(_not_a_directory, "local_package", ("submission.usda", "regular file")),
    "empty_folder": Case(package({}), "single_root_layer", ("empty",)),
    "no_root_layer": Case(package({"sub/model.usda": usda('def "A" {}'), "README.txt": "hello"}),
                          "single_root_layer", ("no root layer",)),
    "two_root_layers": Case(package({"robot.usda": usda('def "A" {}'), "Robot_fixed.USDC": b"PXR-USDC"}),
                            "single_root_layer", ("robot.usda", "Robot_fixed.USDC")),
    "malformed_usda": Case(package({"root.usda": usda(WORLD, sublayering("./layers/broken.usda")),
                                    "layers/broken.usda": '#usda 1.0\ndef Xform "World" {\n    float x = \n'}),
                           "layers_parse", ("layers/broken.usda",)),
    "random_usdc": Case(package({"root.usda": usda(referencing("./geo/junk.usdc")), "geo/junk.usdc": os.urandom(4096)}),
                        "layers_parse", ("geo/junk.usdc",)),
    "empty_usda": Case(package({"scene.usda": ""}), "layers_parse", ("scene.usda", "not a valid usda layer")),
    "usdz_not_zip": Case(package({"root.usda": usda(referencing("./assets/props.usdz")),
                                  "assets/props.usdz": "this is not a zip archive\n"}),
                         "layers_parse", ("assets/props.usdz", "not a zip")),
    # The secret exists, but not inside the zip.
    "usdz_member_escape": Case(package({
        "assets/props.usdz": usdz_bytes({"props.usda": usda('def "P" {}'), "tex/a.png": b"png"}),
        "assets/secret.usda": usda('def "S" {}'),
        "root.usda": usda(referencing("./assets/props.usdz[../secret.usda]"))}),
        "dependencies_inside", ("root.usda", "assets/props.usdz[../secret.usda]", "escapes")),
    # The texture is next to the .usdz, but outside the zip.
    "usdz_inner_escape": Case(package({
        "assets/props.usdz": usdz_bytes({"props.usda": usda('def "P" {\n    asset inputs:file = @../outside.png@\n}')}),
        "assets/outside.png": b"png",
        "root.usda": usda(referencing("./assets/props.usdz"))}),
        "dependencies_inside", ("assets/props.usdz[props.usda]", "@../outside.png@", "escapes its .usdz")),
    "self_sublayer": Case(package({"root.usda": usda(WORLD, sublayering("./root.usda"))}),
                          "layers_parse", ("root.usda", "sublayers itself", "cycle")),
    "absolute_outside": Case(_absolute_outside, "dependencies_inside",
                             ("root.usda", "outside/evil.usda", "absolute")),
    "dotdot_escape": Case(package({"root.usda": usda(WORLD, sublayering("../outside/evil.usda"))}, EVIL),
                          "dependencies_inside", ("root.usda", "@../outside/evil.usda@", "escapes the package")),
    "symlink_file_outside": Case(package(
        {"root.usda": usda('def Shader "T" {\n    asset inputs:file = @./textures/wood.png@\n}')},
        {"outside/secret.png": b"png"}, {"textures/wood.png": "outside/secret.png"}),
        "resource_limits", ("textures/wood.png", "outside the package")),
    "symlink_dir_outside": Case(package({"root.usda": usda(referencing("./lib/parts.usda", "</Part>"))},
                                        {"outside/lib/parts.usda": usda('def "Part" {}')}, {"lib": "outside/lib"}),
                                "resource_limits", ("lib", "outside the package")),
    "http_reference": Case(package({"root.usda": usda(referencing("http://example.com/robot.usda", "</Robot>"))}),
                           "dependencies_inside", ("root.usda", "http://example.com/robot.usda", "URL")),
    "file_url": Case(package({"root.usda": usda(WORLD, sublayering("file:///etc/robot.usda"))}),
                     "dependencies_inside", ("root.usda", "file:///etc/robot.usda", "URL")),
    # An asset path that is a variable expression: USD evaluates it with the layer's
    # expressionVariables (here to a file outside the package), so the gate refuses the form itself.
    "variable_expression_outside": Case(package(
        {"root.usda": usda(referencing('`"${DIR}/evil.usda"`', "</Evil>"),
                           '    expressionVariables = {\n        string DIR = "../outside"\n    }')}, EVIL),
        "dependencies_inside", ("root.usda", '`"${DIR}/evil.usda"`', "variable-expression")),
    # File-format arguments change how a file is read (and what it names): refused whatever they say.
    "format_arguments": Case(package({"layers/body.usda": usda('def "Body" {}'),
                                      "root.usda": usda(WORLD, sublayering("./layers/body.usda:SDF_FORMAT_ARGS:target=usd"))}),
                             "dependencies_inside", ("root.usda", "SDF_FORMAT_ARGS", "not allowed")),
    # Not a tile: four digits, then the rest of the name.
    "udim_without_tiles": Case(package({"tex/body.1001.png.bak": b"png",
                                        "root.usda": usda(_udim_shader("./tex/body.<UDIM>.png"))}),
                               "dependencies_inside", ("root.usda", "./tex/body.<UDIM>.png", "no UDIM tile matching")),
    "udim_in_a_folder_name": Case(package({"tex/1001/body.png": b"png",
                                           "root.usda": usda(_udim_shader("./tex/<UDIM>/body.png"))}),
                                  "dependencies_inside", ("./tex/<UDIM>/body.png", "only supported in the file name")),
    # The walk finds the link first (any symlink out of the package); the texture's own check
    # would refuse the tile too.
    "udim_tile_linked_outside": Case(package({"root.usda": usda(_udim_shader("./tex/body.<UDIM>.png"))}, STOLEN,
                                             {"tex/body.1001.png": "outside/stolen.png"}),
                                     "resource_limits", ("tex/body.1001.png", "outside the package")),
    "package_path_into_a_plain_file": Case(package({"assets/props.usda": usda('def "P" {}'),
                                                    "root.usda": usda(referencing("./assets/props.usda[inner.usda]"))}),
                                           "dependencies_inside", ("assets/props.usda", "which is not a .usdz")),
    "search_path_name": Case(package({"root.usda": usda(referencing("shared_parts.usda", "</Part>"))}),
                             "dependencies_inside", ("root.usda", "@shared_parts.usda@", "search path")),
    # A file missing *inside* the package is not an escape: valid, and graded as a composition error.
    "missing_variant_payload": Case(package({"payloads/low.usda": usda('def "Low" {}'),
                                             "root.usda": usda(MISSING_VARIANT_PAYLOAD)}), None),
    "texture_escape": Case(package({"root.usda": usda(TEXTURE_ESCAPE)}, STOLEN), "dependencies_inside",
                           ("root.usda", "textures/../../outside/stolen.png", "/M/Tex.inputs:file",
                            "escapes the package")),
    "sparse_2gb": Case(_sparse_2gb, "resource_limits", ("cache.bin", "max_file_bytes")),
    "too_many_files": Case(package({"root.usda": usda(WORLD), **{f"junk/f{i:02d}.txt": "x" for i in range(12)}}),
                           "resource_limits", ("more than 8 files",), ResourceLimits(max_files=8)),
    "too_many_prims": Case(package({"layers/prims.usda": usda("\n".join(f'def "P{i}" {{}}' for i in range(10))),
                                    "root.usda": usda(WORLD, sublayering("./layers/prims.usda"))}),
                           "resource_limits", ("max_prims=5", "layers/prims.usda"), ResourceLimits(max_prims=5)),
    "too_many_points": Case(package({
        "geo/mesh.usda": usda('def Mesh "Hull" {\n    point3f[] points = ['
                              + ", ".join(f"({i},0,0)" for i in range(40)) + "]\n}"),
        "root.usda": usda(referencing("./geo/mesh.usda", "</Hull>"))}),
        "resource_limits", ("max_points=10", "geo/mesh.usda", "/Hull.points"), ResourceLimits(max_points=10)),
    "agent_reward_files": Case(_agent_reward_files, None),
    "crate_claims_billions": Case(_crate_claims_billions, "layers_parse", ("geo/hull.usdc",)),
    "usdz_crate_claims_billion_vec3": Case(_usdz_crate_claims_billion_vec3, "layers_parse",
                                           ("geo/hull.usdz",)),
}


@dataclass
class Outcome:
    submission: Path
    report: ValidityReport | None
    error: BaseException | None
    seconds: float
    parent_rss_growth_mb: float


class _Cache:
    def __init__(self, factory):
        self.factory = factory
        self.outcomes: dict[str, Outcome] = {}

    def get(self, name: str, around_check=contextlib.nullcontext, fresh: bool = False) -> Outcome:
        if fresh or name not in self.outcomes:
            case = CASES[name]
            tmp = self.factory.mktemp(name)
            submission = case.build(tmp)
            rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            start = time.monotonic()
            try:
                with around_check():
                    report, error = check_submission(submission, case.limits), None
            except BaseException as exc:  # noqa: BLE001 - recorded and asserted on
                report, error = None, exc
            seconds = time.monotonic() - start
            rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            self.outcomes[name] = Outcome(submission, report, error, seconds, (rss1 - rss0) / 1024)
        return self.outcomes[name]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> _Cache:
    return _Cache(tmp_path_factory)


def _text(result: RuleResult) -> str:
    return result.reason + "\n" + "\n".join(result.details)


def _assert_shape(report: ValidityReport) -> None:
    assert isinstance(report, ValidityReport)
    assert tuple(r.rule for r in report.rules) == RULES
    for r in report.rules:
        assert r.reason.strip(), f"{r.rule} has no reason"
        assert len(r.details) <= 50
    json.dumps(report.to_json())  # serialisable


# ---------------------------------------------------------------------------
# tests
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.rule is not None])
def test_offence_fails_the_specific_rule(outcomes: _Cache, name: str) -> None:
    case = CASES[name]
    out = outcomes.get(name)
    assert out.error is None, f"check_submission raised {out.error!r}"
    report = out.report
    _assert_shape(report)
    assert not report.valid
    assert report.infrastructure_error is None
    failed = report.rule(case.rule)
    assert not failed.passed, report.to_json()
    text = _text(failed)
    for needle in case.needles:
        assert needle in text, f"{needle!r} not in {case.rule} reason:\n{text}"
    # every rule before the expected one passed, except resource_limits which may
    # report on the walk without a root layer
    index = RULES.index(case.rule)
    for earlier in report.rules[:index]:
        assert earlier.passed, f"{earlier.rule} failed unexpectedly: {earlier.reason}"
    # rules after a failure say why they were not checked (or report their own offences)
    for later in report.rules[index + 1:]:
        assert not later.passed or later.rule == "dependencies_inside"
    assert out.seconds < 20


def test_missing_file_inside_the_package_is_valid_and_named(outcomes: _Cache) -> None:
    out = outcomes.get("missing_variant_payload")
    assert out.error is None
    report = out.report
    assert report.valid, json.dumps(report.to_json(), indent=1)
    rule = report.rule("dependencies_inside")
    text = _text(rule)
    for needle in ("root.usda", "./payloads/high.usda", "{lod=high}", "missing inside the package"):
        assert needle in text, f"{needle!r} not in {text}"


def test_clean_package_passes_every_rule(outcomes: _Cache) -> None:
    out = outcomes.get("clean")
    assert out.error is None
    report = out.report
    _assert_shape(report)
    assert report.valid, json.dumps(report.to_json(), indent=1)
    assert report.root_layer == os.path.join(os.path.realpath(out.submission), "robot.usda")
    assert report.layer_count == 4
    reasons = {r.rule: r.reason for r in report.rules}
    assert "4 layers" in reasons["layers_parse"]
    assert "3 points" in reasons["resource_limits"]
    assert "1 asset path " in reasons["dependencies_inside"]
    assert report.to_json()["valid"] is True


def test_agent_written_reward_files_are_ordinary_and_never_read(outcomes) -> None:
    opened: list[str] = []

    @contextlib.contextmanager
    def spy_on_opens():
        real_open, real_io_open, real_os_open = builtins.open, io.open, os.open

        def spy(path, *a, **k):
            opened.append(str(os.fspath(path)) if isinstance(path, (str, bytes, os.PathLike)) else str(path))
            return real_open(path, *a, **k)

        def spy_os(path, *a, **k):
            opened.append(str(os.fspath(path)))
            return real_os_open(path, *a, **k)

        builtins.open, io.open, os.open = spy, spy, spy_os
        try:
            yield
        finally:
            builtins.open, io.open, os.open = real_open, real_io_open, real_os_open

    out = outcomes.get("agent_reward_files", around_check=spy_on_opens, fresh=True)
    assert opened  # the spy did see the gate's own files
    assert out.error is None
    report = out.report
    _assert_shape(report)
    assert report.valid, json.dumps(report.to_json(), indent=1)
    assert "8 files" in report.rule("resource_limits").reason  # 5 package files + 3 agent files
    assert not [p for p in opened if str(p).endswith(("reward.json", "grade.json"))]
    assert "authored_usd" not in json.dumps(report.to_json())


def test_sparse_2gb_file_fails_fast_without_reading(outcomes) -> None:
    out = outcomes.get("sparse_2gb")
    assert out.seconds < 0.5, out.seconds
    assert "2147483648 bytes" in _text(out.report.rule("resource_limits"))
    assert out.report.rule("layers_parse").reason == "not checked: resource_limits failed"


@pytest.mark.parametrize("name", ["crate_claims_billions", "usdz_crate_claims_billion_vec3"])
def test_crafted_crate_counts_do_not_allocate_in_the_caller(outcomes, name) -> None:
    out = outcomes.get(name)
    assert out.seconds < 10, out.seconds          # uncapped usd-core: ~35 s and 11+ GB
    assert out.parent_rss_growth_mb < 300, out.parent_rss_growth_mb
    assert "layers_parse" in out.report.failed_rules


def test_self_sublayer_does_not_hang(outcomes) -> None:
    out = outcomes.get("self_sublayer")
    assert out.seconds < 10
    assert out.report.rule("dependencies_inside").reason.startswith("not checked: layers_parse failed")


def test_later_rules_say_not_checked(outcomes) -> None:
    report = outcomes.get("not_a_directory").report
    for r in report.rules[1:]:
        assert not r.passed and r.reason == "not checked: local_package failed"
    report = outcomes.get("symlink_dir_outside").report
    assert report.rule("layers_parse").reason == "not checked: resource_limits failed"
    report = outcomes.get("too_many_prims").report
    assert report.rule("dependencies_inside").reason == "not checked: resource_limits failed"


def test_never_raises_on_any_case(outcomes) -> None:
    for name in CASES:
        out = outcomes.get(name)
        assert out.error is None, f"{name}: {out.error!r}"
        _assert_shape(out.report)


def test_never_raises_on_degenerate_arguments(tmp_path) -> None:
    fifo_pkg = tmp_path / "fifo"
    fifo_pkg.mkdir()
    os.mkfifo(fifo_pkg / "root.usda")  # opening it would block forever
    link = tmp_path / "link"
    os.symlink(tmp_path / "fifo", link)
    inputs = [None, 123, "", "http://example.com/pkg", "file:///tmp", "bad\0path",
              str(tmp_path / "missing"), os.fsencode(str(tmp_path / "missing")), fifo_pkg, link]
    for submission in inputs:
        start = time.monotonic()
        report = check_submission(submission, ResourceLimits())
        assert time.monotonic() - start < 2
        _assert_shape(report)
        assert not report.valid
    fifo_report = check_submission(fifo_pkg, ResourceLimits())
    assert "root.usda" in _text(fifo_report.rule("resource_limits"))
    assert "FIFO" in _text(fifo_report.rule("resource_limits"))
    assert "symlink" in check_submission(link, ResourceLimits()).rule("local_package").reason


def test_internal_symlinks_are_allowed(tmp_path) -> None:
    """Decision: a symlink is fine when it resolves to a file or folder inside the package."""
    pkg = tmp_path / "pkg"
    root_with(pkg, 'def Shader "S" {\n    asset inputs:file = @./tex/link.png@\n}\n'
                   'def "R" (\n    references = @./alias/part.usda@\n) {\n}')
    write(pkg, "real/wood.png", b"png")
    write(pkg, "real/part.usda", usda('def "P" {}'))
    (pkg / "tex").mkdir()
    os.symlink("../real/wood.png", pkg / "tex" / "link.png")
    os.symlink("real", pkg / "alias")
    report = check_submission(pkg, ResourceLimits())
    assert report.valid, json.dumps(report.to_json(), indent=1)
    assert "2 symlinks, all resolving inside" in report.rule("resource_limits").reason


def test_udim_texture_with_tiles_inside_passes(tmp_path) -> None:
    pkg = tmp_path / "pkg"
    root_with(pkg, _udim_shader("./tex/body.<UDIM>.png"))
    write(pkg, "tex/body.1001.png", b"png")
    write(pkg, "tex/body.1002.png", b"png")
    report = check_submission(pkg, ResourceLimits())
    assert report.valid, json.dumps(report.to_json(), indent=1)


def test_usdz_root_layer_with_relative_members_passes(tmp_path) -> None:
    pkg = tmp_path / "pkg"
    write(pkg, "robot.usdz", usdz_bytes({
        "main.usda": usda('def "M" (\n    references = @sub/part.usda@\n) {\n    asset f = @tex/t.png@\n}'),
        "sub/part.usda": usda('def "P" {\n    asset g = @../tex/t.png@\n}'),
        "tex/t.png": b"png",
    }))
    report = check_submission(pkg, ResourceLimits())
    assert report.valid, json.dumps(report.to_json(), indent=1)
    assert report.layer_count == 2


def _use_faulty_worker(monkeypatch, fault: str) -> None:
    """Every worker of this test is tests/faulty_validity_worker.py, started fresh (never forked)."""
    from usd_repair_verifier.gates.validity import runner

    script = str(Path(__file__).with_name("faulty_validity_worker.py"))
    monkeypatch.setattr(runner, "worker_command", lambda cfg_path: [sys.executable, script, fault, cfg_path])
    monkeypatch.setattr(runner, "_forked_worker", lambda *args: None)


def test_usd_crash_names_the_layer_being_read(tmp_path, monkeypatch) -> None:
    pkg = make_clean(tmp_path / "pkg")
    _use_faulty_worker(monkeypatch, "crash")
    report = check_submission(pkg, ResourceLimits())
    assert report.infrastructure_error is None
    reason = report.rule("layers_parse").reason
    assert not report.rule("layers_parse").passed
    assert "SIGSEGV" in reason and "robot.usda" in reason, reason


@pytest.mark.slow
def test_usd_hang_is_killed_and_reported(tmp_path, monkeypatch) -> None:
    pkg = make_clean(tmp_path / "pkg")
    _use_faulty_worker(monkeypatch, "hang")
    start = time.monotonic()
    report = check_submission(pkg, ResourceLimits(), timeout_s=1.5)
    assert time.monotonic() - start < 3
    assert report.infrastructure_error is None  # the worker was ready: the submission's layer hung
    reason = report.rule("layers_parse").reason
    assert "did not finish within 1.5 s" in reason and "robot.usda" in reason, reason


def test_resource_limits_from_dict() -> None:
    limits = ResourceLimits.from_dict({"max_files": 10, "max_total_bytes": 2e8})
    assert limits.max_files == 10 and limits.max_total_bytes == 200_000_000
    assert limits.max_points == ResourceLimits().max_points
    with pytest.raises(ValueError, match="unknown resource limit key.*max_byte"):
        ResourceLimits.from_dict({"max_byte": 5})
    with pytest.raises(ValueError, match="max_files"):
        ResourceLimits.from_dict({"max_files": -1})
    with pytest.raises(ValueError, match="max_prims"):
        ResourceLimits.from_dict({"max_prims": True})
