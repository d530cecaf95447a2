"""Renders sample textures: a UsdUVTexture's pattern shows, per pixel, where the st primvar puts it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from usd_repair_verifier.visual import render, textures

REPO = Path(__file__).resolve().parent.parent
CASES = REPO / "fixtures" / "cases"
SIZE = 128
RED, GREEN, BLUE, WHITE = (255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 255)
# a quad in the XZ plane, facing the front camera (which stands at -Y, +X to the right, +Z up)
QUAD_POINTS = [(-1.0, 0.0, -1.0), (1.0, 0.0, -1.0), (1.0, 0.0, 1.0), (-1.0, 0.0, 1.0)]
QUAD_ST = [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)]      # st follows x and z: (0, 0) lower left


def _image(path: Path, cells, cell: int = 16):
    """A PNG of solid cells: ``cells`` lists rows top to bottom, each a list of RGB tuples."""
    from PIL import Image

    rows = len(cells)
    cols = len(cells[0])
    image = Image.new("RGB", (cols * cell, rows * cell))
    for r, row in enumerate(cells):
        for c, colour in enumerate(row):
            image.paste(colour, (c * cell, r * cell, (c + 1) * cell, (r + 1) * cell))
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path)


def _quad_package(root: Path, *, cells=((RED, BLUE),), texture_file: str | None = "textures/checker.png",
                  st=QUAD_ST, st_indices=None, interpolation="faceVarying", varname="st",
                  primvar_name="st", extra_primvars=None, wrap=("repeat", "repeat"), colour_space="raw",
                  scale=None, bias=None, output="rgb", faces=None, points=None, transform2d=None):
    """A package with one textured quad mesh (or ``faces``/``points``) and its texture."""
    from pxr import Gf, Sdf, Usd, UsdGeom, UsdShade, Vt

    root.mkdir(parents=True, exist_ok=True)
    if cells is not None and texture_file is not None:
        _image(root / texture_file, [list(r) for r in cells])
    stage = Usd.Stage.CreateNew(str(root / "quad.usda"))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    mesh = UsdGeom.Mesh.Define(stage, "/a/quad")
    pts = points or QUAD_POINTS
    counts, indices = faces or ([4], [0, 1, 2, 3])
    mesh.CreatePointsAttr([Gf.Vec3f(*p) for p in pts])
    mesh.CreateFaceVertexCountsAttr(counts)
    mesh.CreateFaceVertexIndicesAttr(indices)
    primvars = UsdGeom.PrimvarsAPI(mesh)
    for name, values, interp in [(primvar_name, st, interpolation)] + list(extra_primvars or []):
        primvar = primvars.CreatePrimvar(name, Sdf.ValueTypeNames.TexCoord2fArray, interp)
        primvar.Set([Gf.Vec2f(*v) for v in values])
        if name == primvar_name and st_indices is not None:
            primvar.SetIndices(Vt.IntArray(st_indices))
    material = UsdShade.Material.Define(stage, "/a/look")
    surface = UsdShade.Shader.Define(stage, "/a/look/surface")
    surface.CreateIdAttr("UsdPreviewSurface")
    reader = UsdShade.Shader.Define(stage, "/a/look/reader")
    reader.CreateIdAttr("UsdPrimvarReader_float2")
    reader.CreateInput("varname", Sdf.ValueTypeNames.String).Set(varname)
    reader.CreateOutput("result", Sdf.ValueTypeNames.Float2)
    texture = UsdShade.Shader.Define(stage, "/a/look/texture")
    texture.CreateIdAttr("UsdUVTexture")
    if texture_file is not None:
        texture.CreateInput("file", Sdf.ValueTypeNames.Asset).Set("./" + texture_file)
    texture.CreateInput("fallback", Sdf.ValueTypeNames.Float4).Set(Gf.Vec4f(0.0, 0.5, 0.0, 1.0))
    texture.CreateInput("sourceColorSpace", Sdf.ValueTypeNames.Token).Set(colour_space)
    for name, mode in zip(("wrapS", "wrapT"), wrap):
        if mode is not None:
            texture.CreateInput(name, Sdf.ValueTypeNames.Token).Set(mode)
    if scale is not None:
        texture.CreateInput("scale", Sdf.ValueTypeNames.Float4).Set(Gf.Vec4f(*scale))
    if bias is not None:
        texture.CreateInput("bias", Sdf.ValueTypeNames.Float4).Set(Gf.Vec4f(*bias))
    st_input = texture.CreateInput("st", Sdf.ValueTypeNames.Float2)
    if transform2d is not None:
        t2d = UsdShade.Shader.Define(stage, "/a/look/transform")
        t2d.CreateIdAttr("UsdTransform2d")
        t2d.CreateInput("in", Sdf.ValueTypeNames.Float2).ConnectToSource(reader.ConnectableAPI(), "result")
        (sx, sy), degrees, (tx, ty) = transform2d
        t2d.CreateInput("scale", Sdf.ValueTypeNames.Float2).Set(Gf.Vec2f(sx, sy))
        t2d.CreateInput("rotation", Sdf.ValueTypeNames.Float).Set(degrees)
        t2d.CreateInput("translation", Sdf.ValueTypeNames.Float2).Set(Gf.Vec2f(tx, ty))
        t2d.CreateOutput("result", Sdf.ValueTypeNames.Float2)
        st_input.ConnectToSource(t2d.ConnectableAPI(), "result")
    else:
        st_input.ConnectToSource(reader.ConnectableAPI(), "result")
    channel_type = Sdf.ValueTypeNames.Float3 if output == "rgb" else Sdf.ValueTypeNames.Float
    texture.CreateOutput(output, channel_type)
    surface.CreateInput("diffuseColor", Sdf.ValueTypeNames.Color3f).ConnectToSource(texture.ConnectableAPI(), output)
    material.CreateSurfaceOutput().ConnectToSource(surface.ConnectableAPI(), "surface")
    UsdShade.MaterialBindingAPI.Apply(mesh.GetPrim()).Bind(material)
    stage.Save()
    return root


def _render(scene: render.Scene, supersample: int = 1):
    cam = render.camera("front", np.array([[-1.0, 0.0, -1.0], [1.0, 0.0, 1.0]]), SIZE)
    return render.rasterize(scene, cam, supersample), cam


def _pixel(cam: dict, fx: float, fz: float) -> tuple[int, int]:
    """(row, column) of the point at fractions (fx along +X, fz along +Z) of the quad."""
    scale = cam["size"] / (2.0 * cam["half_extent"])
    return int(cam["size"] * 0.5 - (2 * fz - 1) * scale), int(cam["size"] * 0.5 + (2 * fx - 1) * scale)


def _flat(scene: render.Scene, linear_rgb) -> np.ndarray:
    """The same triangles drawn in one linear colour: what a texel of that colour must look like."""
    colours = np.broadcast_to(np.array(linear_rgb, dtype=np.float64), scene.colors.shape).copy()
    return _render(render.Scene(scene.triangles, colours, scene.part_ids, scene.gprims))[0]


def _srgb_linear(c8):
    c = np.asarray(c8, dtype=np.float64) / 255.0
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _colours_at(pkg: Path, points) -> list[tuple[int, ...]]:
    scene = render.load_scene(pkg)
    image, cam = _render(scene)
    return [tuple(int(v) for v in image[_pixel(cam, fx, fz)]) for fx, fz in points]


def _expected(scene, linear_rgb, cam_point):
    image, cam = _flat(scene, linear_rgb), _render(scene)[1]
    return tuple(int(v) for v in image[_pixel(cam, *cam_point)])


def test_a_checker_texture_shows_both_colours_on_its_halves(tmp_path):
    pkg = _quad_package(tmp_path / "pkg")
    scene = render.load_scene(pkg)
    assert scene.colour_sources == {"texture": 1} and scene.textured_parts == {"/a/quad": "texture"}
    image, cam = _render(scene)
    for (fx, fz), colour in (((0.25, 0.5), (1.0, 0.0, 0.0)), ((0.75, 0.5), (0.0, 0.0, 1.0)),
                             ((0.1, 0.2), (1.0, 0.0, 0.0)), ((0.9, 0.8), (0.0, 0.0, 1.0))):
        got = image[_pixel(cam, fx, fz)].astype(int)
        want = _flat(scene, colour)[_pixel(cam, fx, fz)].astype(int)
        assert np.abs(got - want).max() <= 1, ((fx, fz), got, want)
    # the mean colour (what the renders used to show) appears nowhere on the quad
    mean = _flat(scene, (0.5, 0.0, 0.5))[_pixel(cam, 0.5, 0.5)].astype(int)
    assert not np.any(np.all(np.abs(image.astype(int) - mean) <= 2, axis=-1))
    # supersampled renders show the same pattern (and a blend only along the seam)
    smooth, _ = _render(scene, 3)
    assert smooth[_pixel(cam, 0.25, 0.5)][0] > 150 > smooth[_pixel(cam, 0.25, 0.5)][2]
    assert smooth[_pixel(cam, 0.75, 0.5)][2] > 150 > smooth[_pixel(cam, 0.75, 0.5)][0]


def test_st_zero_is_the_image_lower_left(tmp_path):
    """Rows top to bottom in the file: red green / blue white. st (0, 0) is the lower left, so blue
    shows at the quad's lower left and red at its upper left."""
    pkg = _quad_package(tmp_path / "pkg", cells=((RED, GREEN), (BLUE, WHITE)))
    scene = render.load_scene(pkg)
    points = {(0.25, 0.75): (1, 0, 0), (0.75, 0.75): (0, 1, 0), (0.25, 0.25): (0, 0, 1), (0.75, 0.25): (1, 1, 1)}
    got = _colours_at(pkg, points)
    assert got == [_expected(scene, rgb, p) for p, rgb in points.items()]


def test_primvar_indices_and_vertex_interpolation_are_honoured(tmp_path):
    cells = ((RED, GREEN), (BLUE, WHITE))
    points = [(0.25, 0.75), (0.75, 0.75), (0.25, 0.25), (0.75, 0.25)]
    plain = _colours_at(_quad_package(tmp_path / "plain", cells=cells), points)
    assert len(set(plain)) == 4
    # the same coordinates, stored out of order and put back in order by indices
    shuffled = [QUAD_ST[2], QUAD_ST[0], QUAD_ST[3], QUAD_ST[1]]
    indexed = _colours_at(_quad_package(tmp_path / "indexed", cells=cells, st=shuffled, st_indices=[1, 3, 0, 2]),
                          points)
    assert indexed == plain
    # indices that mirror s: left and right swap
    mirrored = _colours_at(_quad_package(tmp_path / "mirrored", cells=cells, st=QUAD_ST, st_indices=[1, 0, 3, 2]),
                           points)
    assert mirrored == [plain[1], plain[0], plain[3], plain[2]]
    # vertex interpolation: one value per point, in point order (here the points are listed in reverse)
    reversed_points = list(reversed(QUAD_POINTS))
    per_point = list(reversed(QUAD_ST))
    vertex = _colours_at(_quad_package(tmp_path / "vertex", cells=cells, points=reversed_points,
                                       faces=([4], [3, 2, 1, 0]), st=per_point, interpolation="vertex"), points)
    assert vertex == plain
    # faceVarying values follow the corners in face-vertex order, not the points
    corner_order = _colours_at(_quad_package(tmp_path / "fv", cells=cells, points=reversed_points,
                                             faces=([4], [3, 2, 1, 0]), st=QUAD_ST, interpolation="faceVarying"),
                               points)
    assert corner_order == plain


def test_uniform_interpolation_gives_each_face_its_own_coordinate(tmp_path):
    """Two faces, left and right; one st per face pointing into the blue then the red half."""
    pts = [(-1.0, 0.0, -1.0), (0.0, 0.0, -1.0), (1.0, 0.0, -1.0), (1.0, 0.0, 1.0), (0.0, 0.0, 1.0), (-1.0, 0.0, 1.0)]
    pkg = _quad_package(tmp_path / "pkg", points=pts, faces=([4, 4], [0, 1, 4, 5, 1, 2, 3, 4]),
                        st=[(0.75, 0.5), (0.25, 0.5)], interpolation="uniform")
    scene = render.load_scene(pkg)
    got = _colours_at(pkg, [(0.25, 0.5), (0.75, 0.5)])
    assert got == [_expected(scene, (0, 0, 1), (0.25, 0.5)), _expected(scene, (1, 0, 0), (0.75, 0.5))]


def test_the_readers_varname_picks_the_primvar(tmp_path):
    """An 'st' primvar that would show red-blue and a 'uvmap' one that shows blue-red: the reader
    reads 'uvmap'."""
    flipped = [(1.0, 0.0), (0.0, 0.0), (0.0, 1.0), (1.0, 1.0)]
    pkg = _quad_package(tmp_path / "pkg", varname="uvmap", primvar_name="uvmap", st=flipped,
                        extra_primvars=[("st", QUAD_ST, "faceVarying")])
    scene = render.load_scene(pkg)
    got = _colours_at(pkg, [(0.25, 0.5), (0.75, 0.5)])
    assert got == [_expected(scene, (0, 0, 1), (0.25, 0.5)), _expected(scene, (1, 0, 0), (0.75, 0.5))]
    # a varname naming no primvar: every corner reads the reader's fallback st (0, 0), the corner of
    # the (repeating) image, where bilinear filtering mixes red and blue: one purple everywhere
    missing = _quad_package(tmp_path / "missing", varname="nothing_here")
    assert _colours_at(missing, [(0.25, 0.5), (0.75, 0.5)]) == [_expected(scene, (0.5, 0, 0.5), (0.25, 0.5))] * 2


@pytest.mark.parametrize("wrap, expected", [
    ("repeat", ["R", "B", "R", "B"]),
    ("clamp", ["R", "B", "B", "B"]),
    ("mirror", ["R", "B", "B", "R"]),
    ("black", ["R", "B", "K", "K"]),
    (None, ["R", "B", "K", "K"]),                   # useMetadata: a PNG has no opinion, black outside
])
def test_wrap_modes(tmp_path, wrap, expected):
    """s runs 0..2 across the quad over a red | blue texture; samples at s = 0.25, 0.75, 1.25, 1.75."""
    st = [(0.0, 0.0), (2.0, 0.0), (2.0, 1.0), (0.0, 1.0)]
    pkg = _quad_package(tmp_path / "pkg", st=st, wrap=(wrap, "clamp"))
    scene = render.load_scene(pkg)
    points = [(0.125, 0.5), (0.375, 0.5), (0.625, 0.5), (0.875, 0.5)]
    colours = {"R": (1, 0, 0), "B": (0, 0, 1), "K": (0, 0, 0)}
    assert _colours_at(pkg, points) == [_expected(scene, colours[c], p) for c, p in zip(expected, points)]


def test_wrap_t_is_separate_from_wrap_s(tmp_path):
    """t runs -1..1 up the quad over a texture red on top, blue below; wrapT black blanks t < 0."""
    st = [(0.0, -1.0), (1.0, -1.0), (1.0, 1.0), (0.0, 1.0)]
    pkg = _quad_package(tmp_path / "pkg", cells=((RED,), (BLUE,)), st=st, wrap=("repeat", "black"))
    scene = render.load_scene(pkg)
    points = [(0.5, 0.125), (0.5, 0.625), (0.5, 0.875)]       # t = -0.75, 0.25, 0.75
    assert _colours_at(pkg, points) == [_expected(scene, c, p) for c, p in zip([(0, 0, 0), (0, 0, 1), (1, 0, 0)], points)]


def test_an_srgb_texture_is_linearised_and_raw_is_not(tmp_path):
    grey = (128, 128, 128)
    srgb = render.load_scene(_quad_package(tmp_path / "srgb", cells=((grey,),), colour_space="sRGB"))
    raw = render.load_scene(_quad_package(tmp_path / "raw", cells=((grey,),), colour_space="raw"))
    auto = render.load_scene(_quad_package(tmp_path / "auto", cells=((grey,),), colour_space="auto"))
    centre = (0.5, 0.5)
    srgb_pixel, raw_pixel, auto_pixel = (_render(s)[0][_pixel(_render(s)[1], *centre)] for s in (srgb, raw, auto))
    assert tuple(int(v) for v in srgb_pixel) == _expected(srgb, _srgb_linear(grey), centre)
    assert tuple(int(v) for v in raw_pixel) == _expected(raw, np.array(grey) / 255.0, centre)
    assert np.array_equal(auto_pixel, srgb_pixel)          # 8-bit images are sRGB under "auto"
    assert int(srgb_pixel[0]) < int(raw_pixel[0])          # linearising darkens a mid grey


def test_scale_bias_and_a_single_channel_output(tmp_path):
    colour = (200, 100, 50)
    scaled = render.load_scene(_quad_package(tmp_path / "scaled", cells=((colour,),), scale=(0.5, 0.5, 2.0, 1.0),
                                             bias=(0.1, 0.0, 0.05, 0.0)))
    want = np.array(colour) / 255.0 * np.array([0.5, 0.5, 2.0]) + np.array([0.1, 0.0, 0.05])
    got = _render(scaled)[0][_pixel(_render(scaled)[1], 0.5, 0.5)]
    assert tuple(int(v) for v in got) == _expected(scaled, want, (0.5, 0.5))
    red_channel = render.load_scene(_quad_package(tmp_path / "r", cells=((colour,),), output="r"))
    got = _render(red_channel)[0][_pixel(_render(red_channel)[1], 0.5, 0.5)]
    assert tuple(int(v) for v in got) == _expected(red_channel, (200 / 255.0,) * 3, (0.5, 0.5))


def test_a_uv_transform_moves_the_pattern(tmp_path):
    """UsdTransform2d translating s by 0.5 (repeat): the red and blue halves trade places."""
    pkg = _quad_package(tmp_path / "pkg", transform2d=((1.0, 1.0), 0.0, (0.5, 0.0)))
    scene = render.load_scene(pkg)
    got = _colours_at(pkg, [(0.25, 0.5), (0.75, 0.5)])
    assert got == [_expected(scene, (0, 0, 1), (0.25, 0.5)), _expected(scene, (1, 0, 0), (0.75, 0.5))]


@pytest.mark.parametrize("how", ["missing", "not_an_image", "too_many_pixels"])
def test_a_texture_that_does_not_load_shows_its_fallback(tmp_path, monkeypatch, how):
    pkg = _quad_package(tmp_path / "pkg")
    png = pkg / "textures" / "checker.png"
    if how == "missing":
        png.unlink()
    elif how == "not_an_image":
        png.write_bytes(b"not a png at all")
    else:                                       # the decompression-bomb guard: over the pixel cap
        monkeypatch.setattr(textures, "MAX_TEXTURE_PIXELS", 16 * 16)
    scene = render.load_scene(pkg)
    assert scene.colour_sources == {"texture_fallback": 1} and not scene.textures
    assert scene.textured_parts == {"/a/quad": "texture_fallback"}
    assert np.allclose(scene.colors, (0.0, 0.5, 0.0))
    assert _colours_at(pkg, [(0.25, 0.5), (0.75, 0.5)]) == [_expected(scene, (0.0, 0.5, 0.0), (0.5, 0.5))] * 2


def test_a_large_texture_is_reduced_and_still_shows_its_pattern(tmp_path, monkeypatch):
    monkeypatch.setattr(textures, "MAX_SAMPLED_SIDE", 8)
    pkg = _quad_package(tmp_path / "pkg", cells=((RED, BLUE),), wrap=("clamp", "clamp"))
    scene = render.load_scene(pkg)
    assert scene.textures[0].texels.shape[:2] == (4, 8)           # 32 x 16 reduced by 4
    got = _colours_at(pkg, [(0.1, 0.5), (0.9, 0.5)])
    assert got == [_expected(scene, (1, 0, 0), (0.1, 0.5)), _expected(scene, (0, 0, 1), (0.9, 0.5))]


def test_a_texture_inside_a_usdz_package_is_sampled(tmp_path):
    from pxr import UsdUtils

    staging = _quad_package(tmp_path / "staging", cells=((RED, GREEN), (BLUE, WHITE)))
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    assert UsdUtils.CreateNewUsdzPackage(str(staging / "quad.usda"), str(pkg / "quad.usdz"))
    packed, loose = render.load_scene(pkg), render.load_scene(staging)
    assert packed.colour_sources == {"texture": 1}
    assert np.array_equal(_render(packed, 3)[0], _render(loose, 3)[0])


@pytest.mark.slow
def test_textured_renders_are_the_same_in_a_fresh_interpreter(tmp_path):
    pkg = _quad_package(tmp_path / "pkg", cells=((RED, GREEN), (BLUE, WHITE)), colour_space="sRGB",
                        st=[(0.0, 0.0), (3.0, 0.0), (3.0, 2.0), (0.0, 2.0)], wrap=("mirror", "repeat"))
    code = ("import sys, numpy as np; from usd_repair_verifier.visual import render; s = render.load_scene(sys.argv[1]); "
            "c = render.camera('three_quarter', render.union_bounds(s), 96); "
            "print(render.sha256(render.encode_png(render.rasterize(s, c, 3))))")
    scene = render.load_scene(pkg)
    here = render.sha256(render.encode_png(render.rasterize(scene, render.camera(
        "three_quarter", render.union_bounds(scene), 96), 3)))
    env = dict(os.environ, PYTHONHASHSEED="7", PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", code, str(pkg)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == here


@pytest.mark.slow
def test_the_fixture_cabinet_door_shows_its_wood_grain(tmp_path):
    """The reference's door and drawer front are textured with a 16 x 16 wood image: the renders show
    its grain (many shades of brown), not one average brown; the candidate's door is plain laminate."""
    case = CASES / "cabinet_hierarchy_and_visual"
    result = render.render_pair(case / "reference", case / "input", tmp_path, views=("front",))
    assert result["colour_sources"]["reference"] == {"material": 12, "texture": 2}
    assert set(result["textured_parts"]["reference"].values()) == {"texture"}
    assert len(result["textured_parts"]["reference"]) == 2 and len(result["textured_parts"]["candidate"]) == 1
    reference = render.decode_png((tmp_path / "reference_front.png").read_bytes()).astype(int)
    candidate = render.decode_png((tmp_path / "candidate_front.png").read_bytes()).astype(int)
    brown = (reference[..., 0] > reference[..., 1] + 25) & (reference[..., 1] > reference[..., 2] + 10)
    assert brown.mean() > 0.2                                   # the wooden fronts fill much of the view
    shades = np.unique(reference[brown], axis=0)
    assert len(shades) > 100                                   # grain, not one flat colour
    assert np.ptp(reference[brown][:, 0]) > 40                 # dark and light streaks
    # the door is wood in the reference and not in the candidate: the difference shows there
    assert (brown & np.any(reference != candidate, axis=-1)).mean() > 0.1
