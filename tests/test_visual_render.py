"""Trusted renders: deterministic pixels and PNG bytes, readable, framed alike, fast."""
from __future__ import annotations

import json
import os
import subprocess
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from usd_repair_verifier.stage_snapshot.content_cache import CACHE
from usd_repair_verifier.visual import raster, render

REPO = Path(__file__).resolve().parent.parent
CASES = REPO / "fixtures" / "cases"


def test_png_is_valid_and_round_trips():
    image = (np.arange(7 * 5 * 3) % 256).astype(np.uint8).reshape(7, 5, 3)
    png = render.encode_png(image)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos = 8
    while pos < len(png):                                   # every chunk's CRC is right
        (length,) = struct.unpack(">I", png[pos:pos + 4])
        kind_data = png[pos + 4:pos + 8 + length]
        (crc,) = struct.unpack(">I", png[pos + 8 + length:pos + 12 + length])
        assert crc == zlib.crc32(kind_data) & 0xFFFFFFFF
        pos += 12 + length
    assert np.array_equal(render.decode_png(png), image)
    assert render.encode_png(image) == png


def test_views_are_512_png_and_readable(tmp_path):
    """Every view at a quarter of the size (the same pipeline), and one at the real size: files,
    digests, PNG decoding, the asset framed and shaded."""
    case = CASES / "cabinet_drawer_door"
    small = render.render_pair(case / "reference", case / "input", tmp_path / "small", size=render.SIZE // 4)
    assert set(small["views"]) >= {"front", "side", "top", "three_quarter"}
    full = render.render_pair(case / "reference", case / "input", tmp_path / "full", views=("three_quarter",))
    background = np.round(np.array(raster.BACKGROUND) * 255).astype(np.uint8)
    for result, folder, size in ((small, tmp_path / "small", render.SIZE // 4), (full, tmp_path / "full", 512)):
        for role in ("reference", "candidate"):
            for view in result["views"]:
                entry = result[role][view]
                data = (folder / entry["file"]).read_bytes()
                assert render.sha256(data) == entry["digest"] == render.sha256(entry["png"])
                pixels = render.decode_png(data)
                assert pixels.shape == (size, size, 3)
                covered = np.any(pixels != background, axis=2).mean()
                assert 0.05 < covered < 0.95, (role, view, covered)      # the asset fills a good part of the frame
                assert len(np.unique(pixels.reshape(-1, 3), axis=0)) >= 3  # shaded, not a flat silhouette


# Determinism does not depend on the image size: these tests render at a quarter of it (the
# same pipeline, a sixteenth of the pixels); the test above checks the real size too.
SMALL = render.SIZE // 4


@pytest.mark.slow
def test_same_bytes_same_pixels_in_process_and_in_a_fresh_interpreter(tmp_path):
    case = CASES / "ant_two_joint_faults"
    CACHE.clear()   # drawn anew each time, not served from the content cache
    first = render.render_pair(case / "reference", case / "reference", size=SMALL)
    CACHE.clear()
    second = render.render_pair(case / "reference", case / "reference", size=SMALL)
    digests = {f"{r}/{v}": first[r][v]["digest"] for r in ("reference", "candidate") for v in first["views"]}
    assert digests == {f"{r}/{v}": second[r][v]["digest"] for r in ("reference", "candidate") for v in second["views"]}
    # same package on both sides: identical images
    assert all(first["reference"][v]["digest"] == first["candidate"][v]["digest"] for v in first["views"])
    code = ("import json, sys; from usd_repair_verifier.visual import render; r = render.render_pair(sys.argv[1], sys.argv[1], size=int(sys.argv[2])); "
            "print(json.dumps({f'{k}/{v}': r[k][v]['digest'] for k in ('reference', 'candidate') for v in r['views']}))")
    env = dict(os.environ, PYTHONHASHSEED="123", OMP_NUM_THREADS="2", OPENBLAS_NUM_THREADS="2")
    proc = subprocess.run([sys.executable, "-c", code, str(case / "reference"), str(SMALL)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == digests


def test_a_visual_fault_changes_the_candidate_views_only():
    case = CASES / "cheetah_visual_and_shape"
    result = render.render_pair(case / "reference", case / "input", size=SMALL)
    same = [result["reference"][v]["digest"] == result["candidate"][v]["digest"] for v in result["views"]]
    assert not all(same)
    # framing is on the union bounds: re-rendering the reference alone against itself gives other pixels
    # only if the bounds differ; either way, reference renders do not depend on render order
    again = render.render_pair(case / "reference", case / "input", size=SMALL)
    assert [again["reference"][v]["digest"] for v in again["views"]] == [result["reference"][v]["digest"] for v in result["views"]]


def test_colour_comes_from_the_material_or_display_colour(tmp_path):
    from pxr import Usd, UsdGeom, UsdShade, Sdf, Gf

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    stage = Usd.Stage.CreateNew(str(pkg / "a.usda"))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    red = UsdGeom.Cube.Define(stage, "/a/red")
    red.CreateDisplayColorAttr([(1.0, 0.0, 0.0)])
    blue = UsdGeom.Cube.Define(stage, "/a/blue")
    UsdGeom.XformCommonAPI(blue).SetTranslate(Gf.Vec3d(3, 0, 0))
    material = UsdShade.Material.Define(stage, "/a/mat")
    shader = UsdShade.Shader.Define(stage, "/a/mat/s")
    shader.CreateIdAttr("UsdPreviewSurface")
    shader.CreateInput("diffuseColor", Sdf.ValueTypeNames.Color3f).Set((0.0, 0.0, 1.0))
    material.CreateSurfaceOutput().ConnectToSource(shader.ConnectableAPI(), "surface")
    UsdShade.MaterialBindingAPI.Apply(blue.GetPrim()).Bind(material)
    UsdGeom.Plane.Define(stage, "/a/floor")                      # ground planes are left out
    stage.Save()
    scene = render.load_scene(pkg)
    assert scene.gprims == 2 and scene.skipped_planes == 1
    colours = {tuple(c) for c in scene.colors}
    assert colours == {(1.0, 0.0, 0.0), (0.0, 0.0, 1.0)}
    pixels = render.rasterize(scene, render.camera("front", render.union_bounds(scene)))
    reds = (pixels[..., 0] > 150) & (pixels[..., 2] < 60)
    blues = (pixels[..., 2] > 150) & (pixels[..., 0] < 60)
    assert reds.any() and blues.any()
    assert np.nonzero(reds)[1].mean() < np.nonzero(blues)[1].mean()   # red left of blue seen from the front


def test_ten_thousand_triangles_render_in_every_view():
    """A large soup draws in every view (its speed is measured in bench/, not asserted here)."""
    rng = np.random.default_rng(0)
    centers = rng.uniform(-1, 1, (10_000, 1, 3))
    triangles = centers + rng.normal(0, 0.04, (10_000, 3, 3))
    scene = render.Scene(triangles, np.full((10_000, 3), 0.6), np.arange(10_000) // 100, 100)
    bounds = render.union_bounds(scene)
    for view in ("front", "side", "top", "three_quarter"):
        image = render.rasterize(scene, render.camera(view, bounds))
        background = image[0, 0]
        covered = np.any(image != background, axis=-1).mean()
        assert 0.2 < covered < 1.0, (view, covered)


def test_a_package_without_one_root_layer_is_refused(tmp_path):
    (tmp_path / "a.usda").write_text("#usda 1.0\n")
    (tmp_path / "b.usda").write_text("#usda 1.0\n")
    with pytest.raises(render.RenderError):
        render.load_scene(tmp_path)


def _textured_package(tmp_path, *, write_texture: bool):
    """A cube whose diffuseColor comes from a UsdUVTexture (a solid 8x8 sRGB PNG), fallback green."""
    from PIL import Image
    from pxr import Gf, Sdf, Usd, UsdGeom, UsdShade

    pkg = tmp_path / "pkg"
    (pkg / "textures").mkdir(parents=True)
    if write_texture:
        Image.new("RGB", (8, 8), (200, 100, 50)).save(pkg / "textures" / "wood.png")
    stage = Usd.Stage.CreateNew(str(pkg / "a.usda"))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    cube = UsdGeom.Cube.Define(stage, "/a/door")
    material = UsdShade.Material.Define(stage, "/a/mat")
    surface = UsdShade.Shader.Define(stage, "/a/mat/s")
    surface.CreateIdAttr("UsdPreviewSurface")
    texture = UsdShade.Shader.Define(stage, "/a/mat/tex")
    texture.CreateIdAttr("UsdUVTexture")
    texture.CreateInput("file", Sdf.ValueTypeNames.Asset).Set("./textures/wood.png")
    texture.CreateInput("fallback", Sdf.ValueTypeNames.Float4).Set(Gf.Vec4f(0.0, 0.5, 0.0, 1.0))
    texture.CreateOutput("rgb", Sdf.ValueTypeNames.Float3)
    surface.CreateInput("diffuseColor", Sdf.ValueTypeNames.Color3f).ConnectToSource(texture.ConnectableAPI(), "rgb")
    material.CreateSurfaceOutput().ConnectToSource(surface.ConnectableAPI(), "surface")
    UsdShade.MaterialBindingAPI.Apply(cube.GetPrim()).Bind(material)
    stage.Save()
    return pkg


def test_a_textured_part_takes_the_texture_colour(tmp_path):
    scene = render.load_scene(_textured_package(tmp_path, write_texture=True))
    srgb = np.array([200, 100, 50]) / 255.0
    linear = np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)
    assert np.allclose(scene.colors[0], linear, atol=1e-9)
    assert scene.colour_sources == {"texture": 1}
    pixels = render.rasterize(scene, render.camera("front", render.union_bounds(scene)))
    centre = pixels[256, 256].astype(int)
    assert centre[0] > centre[1] > centre[2]                     # orange-brown, not the default grey


def test_a_texture_that_does_not_load_shows_its_fallback(tmp_path):
    scene = render.load_scene(_textured_package(tmp_path, write_texture=False))
    assert np.allclose(scene.colors[0], (0.0, 0.5, 0.0)) and scene.colour_sources == {"texture_fallback": 1}


def _box(center, half, part):
    """12 triangles of an axis-aligned box."""
    c, h = np.asarray(center, float), np.asarray(half, float)
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * h + c
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    tris = [corners[[a, b, d]] for a, b, cc, d in quads] + [corners[[b, cc, d]] for a, b, cc, d in quads]
    return np.array(tris), np.full(len(tris), part)


def test_front_is_the_side_that_shows_the_most_parts():
    """A cabinet body with two knobs on its +X face: the front camera stands at +X, whatever -Y holds."""
    parts = [_box((0, 0, 0), (0.5, 0.5, 0.5), 0), _box((0.55, 0.2, 0.2), (0.05, 0.05, 0.05), 1),
             _box((0.55, -0.2, 0.2), (0.05, 0.05, 0.05), 2)]
    triangles = np.concatenate([p[0] for p in parts])
    scene = render.Scene(triangles, np.full((len(triangles), 3), 0.5), np.concatenate([p[1] for p in parts]), 3)
    views = render.asset_views(scene, render.union_bounds(scene))
    assert views["front"][0] == (-1.0, -0.0, 0.0)                 # looking along -X: the camera is at +X
    cam = render.camera("front", render.union_bounds(scene), 128, views)
    assert render.visible_parts(scene, cam) == 3


def test_supersampling_smooths_edges_and_stays_deterministic():
    tri = np.array([[[-1.0, 0.0, -1.0], [1.0, 0.0, -0.7], [0.0, 0.0, 1.0]]])
    scene = render.Scene(tri, np.array([[0.2, 0.2, 0.2]]), np.zeros(1, dtype=np.int64), 1)
    cam = render.camera("front", render.union_bounds(scene), 64)
    sharp, smooth = render.rasterize(scene, cam), render.rasterize(scene, cam, 3)
    levels = lambda img: len(np.unique(img.reshape(-1, 3), axis=0))
    assert levels(smooth) > levels(sharp) + 3                     # intermediate shades along the edges
    assert np.array_equal(smooth, render.rasterize(scene, cam, 3))


def test_difference_image_marks_a_moved_part_only():
    body, knob = _box((0, 0, 0), (0.5, 0.5, 0.5), 0), _box((0, -0.55, 0.2), (0.05, 0.05, 0.05), 1)
    moved = _box((0.02, -0.55, 0.2), (0.05, 0.05, 0.05), 1)      # 2 cm to the side
    make = lambda k: render.Scene(np.concatenate([body[0], k[0]]), np.full((24, 3), 0.5),
                                  np.concatenate([body[1], k[1]]), 2)
    ref, cand = make(knob), make(moved)
    cam = render.camera("front", render.union_bounds(ref, cand), 256)
    a, b = render.rasterize(ref, cam, 3), render.rasterize(cand, cam, 3)
    diff = render.difference(a, b)
    changed = np.any(diff != 0, axis=-1)
    assert changed.sum() > 20 and not np.any(render.difference(a, a))
    assert np.all(diff[changed].max(axis=-1) >= 64)                # every difference is visible against black


def _owners_by_whole_boxes(screen, size: int) -> np.ndarray:
    """The z-buffer's owners with every pixel of each triangle's box tested (the plain method the
    row spans of raster._nearest_triangles must agree with), one triangle at a time."""
    za, zc, zk = screen.z
    zbuf = np.full((size, size), np.inf)
    owner = np.full((size, size), -1, dtype=np.int64)
    for t in screen.keep:
        ys, xs = np.mgrid[screen.ymin[t]:screen.ymax[t] + 1, screen.xmin[t]:screen.xmax[t] + 1]
        qx, qy = xs + 0.5, ys + 0.5
        b0, b1 = screen.barycentrics(np.full(qx.shape, t), qx, qy)
        inside = (b0 >= 0) & (b1 >= 0) & (b0 + b1 <= 1.0)
        z = za[t] * qx + zc[t] * qy + zk[t]
        nearer = inside & (z < zbuf[ys, xs])          # ties keep the lower triangle index
        zbuf[ys[nearer], xs[nearer]] = z[nearer]
        owner[ys[nearer], xs[nearer]] = t
    return owner.reshape(-1)


@pytest.mark.parametrize("kind", ["soup", "slivers", "axis_aligned", "fans"])
def test_row_spans_find_every_pixel_the_whole_box_finds(kind):
    """The rasterizer tests only a run of each row of a triangle's box; the owners are those of
    testing the whole box, for large, thin, axis-aligned and shared-edge triangles alike."""
    rng = np.random.default_rng(7)
    n = 300
    if kind == "soup":
        triangles = rng.uniform(-1, 1, (n, 1, 3)) + rng.normal(0, 0.3, (n, 3, 3))
    elif kind == "slivers":   # nearly degenerate: one corner almost on the opposite edge
        a, b = rng.uniform(-1, 1, (n, 3)), rng.uniform(-1, 1, (n, 3))
        c = 0.5 * (a + b) + rng.normal(0, 1e-4, (n, 3))
        triangles = np.stack([a, b, c], axis=1)
    elif kind == "axis_aligned":   # horizontal and vertical edges on the screen (zero gradients)
        corners = np.round(rng.uniform(-1, 1, (n, 3, 3)) * 8) / 8
        corners[:, 1, 2] = corners[:, 0, 2]
        corners[:, 2, 1] = corners[:, 0, 1]
        triangles = corners
    else:   # triangle fans sharing edges and vertices: pixels on a shared edge go to one of them
        angles = np.linspace(0, 2 * np.pi, n + 1)
        rim = np.stack([np.zeros(n + 1), np.cos(angles), np.sin(angles)], axis=1)
        triangles = np.stack([np.zeros((n, 3)), rim[:-1], rim[1:]], axis=1)
    scene = render.Scene(triangles, np.full((n, 3), 0.5), np.arange(n), n)
    bounds = render.union_bounds(scene)
    for view in ("front", "three_quarter"):
        cam = render.camera(view, bounds, 96)
        screen = raster._screen(scene, cam)
        assert np.array_equal(raster._nearest_triangles(screen, 96), _owners_by_whole_boxes(screen, 96)), view


def test_a_drawing_met_again_is_the_drawing_made_before(tmp_path):
    """rasterize and the front probe are served from the content cache for the same scene and
    camera (the very pixels a fresh drawing gives); another colour, texture or camera is drawn."""
    import dataclasses

    scene = render.load_scene(_textured_package(tmp_path, write_texture=True))
    cam = render.camera("front", render.union_bounds(scene), SMALL)
    CACHE.clear()
    first = render.rasterize(scene, cam, 2)
    again = render.rasterize(scene, cam, 2)
    assert CACHE.hits == 1 and again is not first and np.array_equal(first, again)
    assert np.array_equal(first, render._rasterize(scene, cam, 2))
    assert render.visible_parts(scene, cam) == render.visible_parts(scene, cam) == 1 and CACHE.hits == 2
    recoloured = dataclasses.replace(scene, colors=scene.colors * 0.5)
    other_texture = dataclasses.replace(scene, textures=tuple(
        dataclasses.replace(t, scale=np.asarray(t.scale) * 0.5) for t in scene.textures))
    for other, other_cam, shows in ((recoloured, cam, False), (other_texture, cam, True),
                                    (scene, {**cam, "half_extent": cam["half_extent"] * 2}, True)):
        misses = CACHE.misses
        drawn = render.rasterize(other, other_cam, 2)
        assert CACHE.misses == misses + 1 and np.array_equal(drawn, render._rasterize(other, other_cam, 2))
        assert np.array_equal(drawn, first) is not shows   # the texture covers the flat colour
