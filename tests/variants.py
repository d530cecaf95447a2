"""Build equivalent and hostile variants of a package for the verifier's own tests."""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from pxr import Sdf, Usd

from usd_repair_verifier.authoring.inject import root_layer_of


def copy_package(src: Path, dst: Path) -> Path:
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, symlinks=True)
    return dst


def flatten(src: Path, dst: Path) -> Path:
    """One single-layer package with the same composed stage (and the same non-USD files)."""
    root = root_layer_of(src)
    stage = Usd.Stage.Open(str(root), Usd.Stage.LoadAll)
    text = stage.Flatten().ExportToString()
    # Flatten anchors asset paths to absolute ones: make them package-relative again.
    text = text.replace("@" + str(src.resolve()) + "/", "@./")
    dst.mkdir(parents=True)
    for path in src.rglob("*"):
        if path.is_file() and path.suffix.lower() not in (".usd", ".usda", ".usdc"):
            target = dst / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
    (dst / f"{root.stem}_flat.usda").write_text(text)
    return dst


def regroup(src: Path, dst: Path, group: str = "Regrouped") -> Path:
    """Flatten, then move every child of the default prim under a new Xform `group` below it
    (relationship targets and connections follow: UsdNamespaceEditor fixes them up)."""
    from pxr import UsdGeom

    flatten(src, dst)
    stage = Usd.Stage.Open(str(root_layer_of(dst)), Usd.Stage.LoadAll)
    top = stage.GetDefaultPrim() or next(iter(stage.GetPseudoRoot().GetChildren()))
    parent = top.GetPath().AppendChild(group)
    children = [c.GetPath() for c in top.GetChildren()]
    UsdGeom.Xform.Define(stage, parent)
    editor = Usd.NamespaceEditor(stage)
    for child in children:
        if not (editor.MovePrimAtPath(child, parent.AppendChild(child.name)) and editor.ApplyEdits()):
            raise RuntimeError(f"cannot move {child} under {parent}")
    stage.GetRootLayer().Save()
    return dst


SIMULATOR_NAMESPACES = ("physics:", "physx", "mjc:", "newton:", "drive:", "limit:")


def split_physics_layer(src: Path, dst: Path) -> Path:
    """Flatten, then move every property in a simulator namespace into a sublayer of its own:
    the same composed stage, its physics authored in another layer."""
    flatten(src, dst)
    root = Sdf.Layer.FindOrOpen(str(root_layer_of(dst)))
    (dst / "layers").mkdir(exist_ok=True)
    physics = Sdf.Layer.CreateNew(str(dst / "layers" / "physics.usda"))
    moved = []

    def visit(path):
        if not path.IsPrimPath():
            return
        spec = root.GetPrimAtPath(path)
        for prop in list(spec.properties):
            if prop.name.startswith(SIMULATOR_NAMESPACES):
                Sdf.CreatePrimInLayer(physics, path)
                Sdf.CopySpec(root, prop.path, physics, prop.path)
                moved.append(prop)
    root.Traverse(Sdf.Path.absoluteRootPath, visit)
    if not moved:
        raise RuntimeError(f"{src} authors nothing in a simulator namespace")
    for prop in moved:
        prop.owner.RemoveProperty(prop)
    physics.Save()
    root.subLayerPaths.append("./layers/physics.usda")
    root.Save()
    return dst


def rename_namespace(src: Path, dst: Path, renames: dict[str, str]) -> Path:
    """Flatten, then rename prims (whole path components) everywhere they are named."""
    flatten(src, dst)
    flat = root_layer_of(dst)
    text = flat.read_text()
    for old, new in renames.items():
        text = re.sub(rf'(?<=[/"]){re.escape(old)}(?=[/">\]\s])', new, text)
    flat.unlink()
    (dst / "renamed.usda").write_text(text)
    return dst


def _layer_with_strongest_spec(stage: Usd.Stage, prim_path: str, attribute: str) -> Sdf.Layer:
    attr = stage.GetPrimAtPath(prim_path).GetAttribute(attribute)
    return attr.GetPropertyStack()[0].layer


def _sublayering_parent(package: Path, layer: Sdf.Layer) -> tuple[Sdf.Layer, int]:
    for path in sorted(package.rglob("*.usd*")):
        parent = Sdf.Layer.FindOrOpen(str(path))
        for i, sub in enumerate(parent.subLayerPaths):
            if os.path.realpath(os.path.join(path.parent, sub)) == os.path.realpath(layer.realPath):
                return parent, i
    raise LookupError(f"no layer of {package} sublayers {layer.identifier}")


def repair_in_sublayer(package: Path, reference: Path, prim_path: str, attribute: str, stronger: bool) -> None:
    """Author the reference's value of one attribute in a new sublayer next to the faulty layer.

    stronger=False puts it just after (weaker than) the layer holding the fault: the
    composed stage keeps the fault. stronger=True puts it just before: the fix wins.
    """
    ref_stage = Usd.Stage.Open(str(root_layer_of(reference)), Usd.Stage.LoadAll)
    value = ref_stage.GetPrimAtPath(prim_path).GetAttribute(attribute).Get()
    stage = Usd.Stage.Open(str(root_layer_of(package)), Usd.Stage.LoadAll)
    faulty = _layer_with_strongest_spec(stage, prim_path, attribute)
    parent, index = _sublayering_parent(package, faulty)
    # In a subfolder: a second USD file at the package's top would be a second root layer.
    repair_path = Path(parent.realPath).parent / "repairs" / "repair.usda"
    repair_path.parent.mkdir(exist_ok=True)
    repair = Sdf.Layer.CreateNew(str(repair_path))
    spec = Sdf.CreatePrimInLayer(repair, prim_path)
    spec.specifier = Sdf.SpecifierOver
    type_name = stage.GetPrimAtPath(prim_path).GetAttribute(attribute).GetTypeName()
    Sdf.AttributeSpec(spec, attribute, type_name).default = value
    repair.Save()
    paths = list(parent.subLayerPaths)
    paths.insert(index if stronger else index + 1, "./repairs/repair.usda")
    parent.subLayerPaths = paths
    parent.Save()


def add_outside_sublayer(package: Path, outside_file: Path, absolute: bool) -> None:
    root = Sdf.Layer.FindOrOpen(str(root_layer_of(package)))
    path = str(outside_file.resolve()) if absolute else os.path.relpath(outside_file, package)
    root.subLayerPaths.append(path)
    root.Save()


# --- hostile submissions (tests/test_hostile_submissions.py) --------------------

def author_in_root_layer(package: Path, edit) -> None:
    """Call edit(stage) with the root layer as edit target, then save the root layer.

    The root layer's local opinions are the package's strongest, so whatever edit()
    authors is what the composed stage shows.
    """
    stage = Usd.Stage.Open(str(root_layer_of(package)), Usd.Stage.LoadAll)
    stage.SetEditTarget(Usd.EditTarget(stage.GetRootLayer()))
    edit(stage)
    stage.GetRootLayer().Save()


def remove_prim_everywhere(package: Path, prim_path: str) -> None:
    """Delete every spec of a prim (and so its subtree) in every layer of the package."""
    from usd_repair_verifier.authoring.inject import remove_prim

    stage = Usd.Stage.Open(str(root_layer_of(package)), Usd.Stage.LoadAll)
    dirty: set = set()
    remove_prim(stage.GetPrimAtPath(prim_path), dirty)
    for layer in dirty:
        layer.Save()


def remove_api_schema(package: Path, prim_path: str, schema: str) -> None:
    """Delete an applied API schema with a list-op edit in the prim's strongest local spec."""
    from usd_repair_verifier.authoring.inject import set_api_schemas

    stage = Usd.Stage.Open(str(root_layer_of(package)), Usd.Stage.LoadAll)
    dirty: set = set()
    set_api_schemas(stage.GetPrimAtPath(prim_path), schema, None, dirty)
    for layer in dirty:
        layer.Save()


def crate_claiming_points(path: Path, real: int, claimed: int) -> None:
    """A small .usdc Mesh </M> whose compressible float[] points claims `claimed` elements."""
    import struct

    from pxr import Vt

    layer = Sdf.Layer.CreateNew(str(path))
    prim = Sdf.PrimSpec(layer, "M", Sdf.SpecifierDef, "Mesh")
    attr = Sdf.AttributeSpec(prim, "points", Sdf.ValueTypeNames.FloatArray)
    attr.default = Vt.FloatArray([float(i % 7) for i in range(real)])
    layer.Save()
    del layer, prim, attr
    data = path.read_bytes()
    needle = struct.pack("<Q", real)
    assert needle in data, "array count not found in crate"
    path.write_bytes(data.replace(needle, struct.pack("<Q", claimed)))


def write_file(path: Path, data: str | bytes) -> Path:
    """The text or bytes written at path, its folders made."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data)
    return path


def usdz_bytes(members: dict[str, str | bytes]) -> bytes:
    """A .usdz's bytes: a zip holding the given members (name -> text or bytes) in order, stored
    uncompressed."""
    import io
    import zipfile

    data = io.BytesIO()
    with zipfile.ZipFile(data, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, member in members.items():
            zf.writestr(name, member)
    return data.getvalue()


def write_usdz(path: Path, members: dict[str, str | bytes]) -> None:
    """A .usdz (zip, members stored uncompressed) holding the given members in order."""
    write_file(path, usdz_bytes(members))
