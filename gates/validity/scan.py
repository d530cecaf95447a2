"""Reading one layer inside the worker: every authored value, every asset path in it, the prim
and point budgets.

Every value is read on purpose: a crafted .usdc can claim a huge array length for any attribute,
and reading it later inside the grading process would allocate gigabytes; here it fails inside
the memory-capped worker. Only scalar enum/bool/token fields are skipped (_SKIP_INFO_KEYS).
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Protocol

from .limits import ResourceLimits
from .paths import Location
from .resolve import Resolver
from .text import clean


class ScanHost(Protocol):
    """What a layer scan reads and records on the worker that runs it (worker.py's Worker):
    declared here so that the scan does not import the worker that imports it."""

    Sdf: Any
    limits: ResourceLimits
    resolver: Resolver
    prims: int
    points: int
    sublayer_edges: dict[str, list[str]]
    dep_errors: list[str]
    parse_errors: list[str]

    def show(self, loc_or_path: Any) -> str: ...

    def usd_message(self, exc: BaseException) -> str: ...

    def check_dep(self, anchor: Location, authored: str, kind: str, where: str,
                  is_layer: bool) -> Location | None: ...


class BudgetExceeded(Exception):
    """The parsed budget (prim specs or points) is crossed: reading stops."""


# Scalar enum/bool/token fields: inlined in crate files (nothing to read lazily) and
# never asset-valued.  Skipping them keeps large layers fast.  Layer-stack fields are
# handled separately; assetInfo is identification metadata, not a dependency.
_SKIP_INFO_KEYS = frozenset({
    "specifier", "typeName", "variability", "custom", "active", "hidden",
    "instanceable", "kind", "subLayers", "subLayerOffsets", "assetInfo",
})

# An asset path found in a value: the authored path, or ("\0template", template string) for a
# value clip's templateAssetPath; and whether it sits in a value-clip dictionary.
FoundAsset = tuple[Any, bool]


class LayerScan:
    """One opened layer: queues the layers it depends on, records every offence on the worker."""

    def __init__(self, worker: ScanHost, loc: Location, layer, anchor: Location, queue: list[Location]):
        self.worker = worker
        self.Sdf = worker.Sdf
        self.loc = loc          # the layer's location
        self.layer = layer
        self.anchor = anchor    # what its asset paths are relative to (a .usdz's first member)
        self.queue = queue      # layers still to read
        self.seen_arcs: set[str] = set()

    # -- dependencies -------------------------------------------------------
    def enqueue(self, target: Location | None, sublayer: bool) -> None:
        if target is None:
            return
        self.queue.append(target)
        if sublayer:
            self.worker.sublayer_edges.setdefault(self.loc.ident(), []).append(target.ident())

    def layer_dep(self, path: str, kind: str, where: str, sublayer: bool = False) -> None:
        self.enqueue(self.worker.check_dep(self.anchor, path, kind, where, True), sublayer)

    def asset_dep(self, path: Any, kind: str, where: str, clip: bool) -> None:
        if isinstance(path, tuple):  # clip template string
            self.clip_template(path[1], where)
        elif clip:
            self.layer_dep(path, "clip layer", where)
        else:
            self.worker.check_dep(self.anchor, path, kind, where, False)

    def clip_template(self, template: str, where: str) -> None:
        """A template names no file; one probe of it must not escape (missing is fine)."""
        if not template:
            return
        probe = template.replace("#", "0")
        _, problem = self.worker.resolver.resolve(self.anchor, probe, False)
        if problem and ("absolute" in problem or "URL" in problem or "escapes" in problem
                        or "symlink" in problem):
            self.worker.dep_errors.append(
                f"{self.worker.show(self.anchor)}: clip template {clean(template)!r}{where}: {problem}"
            )

    # -- reading ------------------------------------------------------------
    def read(self, what: str, fn: Callable[[], Any]) -> tuple[bool, Any]:
        """Read a value through fn(); record corruption as a parse error."""
        try:
            return True, fn()
        except TypeError as exc:
            if "to_python" in str(exc) or "converter" in str(exc):
                return False, None  # binding limitation (e.g. subLayerOffsets), not corruption
            self.read_failed(f"{what} cannot be read: {self.worker.usd_message(exc)}")
        except MemoryError:
            self.read_failed(f"{what} exceeds the verifier's memory cap (corrupt or oversized array)")
        except Exception as exc:
            msg = self.worker.usd_message(exc)
            if "unpacking a value" in msg:
                msg += " (a corrupt or oversized array: it does not fit the verifier's memory cap)"
            self.read_failed(f"{what} cannot be read: {msg}")
        return False, None

    def read_failed(self, problem: str) -> None:
        # The layer's name is formatted only for a failed read: formatting it ahead of every
        # read took most of the scan of a clean package.
        self.worker.parse_errors.append(f"{self.worker.show(self.loc)}: {problem}")

    def asset_values(self, value: Any, in_clips: bool = False) -> Iterator[FoundAsset]:
        """Yield (asset path string, is_layer) found in a metadata/attribute value (iterative)."""
        Sdf = self.Sdf
        stack = [(value, in_clips)]
        while stack:
            v, clip = stack.pop()
            if isinstance(v, Sdf.AssetPath):
                yield (getattr(v, "authoredPath", None) or v.path), clip
            elif isinstance(v, Sdf.AssetPathArray):
                for a in v:
                    yield (getattr(a, "authoredPath", None) or a.path), clip
            elif isinstance(v, dict):
                for k, sub in v.items():
                    if clip and k == "templateAssetPath" and isinstance(sub, str):
                        yield ("\0template", sub), clip
                    else:
                        stack.append((sub, clip))
            elif isinstance(v, (list, tuple)):
                for sub in v:
                    stack.append((sub, clip))

    # -- the layer ------------------------------------------------------------
    def run(self) -> None:
        layer = self.layer
        _, sublayers = self.read("subLayers", lambda: list(layer.subLayerPaths))
        for sp in sublayers or []:
            self.layer_dep(sp, "sublayer", "", sublayer=True)
        _, extra = self.read("composition dependencies", lambda: list(layer.GetCompositionAssetDependencies()))
        listed = set(sublayers or [])
        # A set (its order follows the process's string hashing): sorted, so that the same
        # package gives the same report in every process.
        extra_paths = sorted(p for p in (extra or []) if p and p not in listed)
        self.traverse()
        for p in extra_paths:
            if p not in self.seen_arcs:
                self.layer_dep(p, "composition dependency", "")

    def traverse(self) -> None:
        Sdf, layer = self.Sdf, self.layer
        # Layer.Traverse visits every spec path (prims, variant sets, variants, properties,
        # targets) from C++; ~1 us a path.  It cannot be stopped early (an exception in the
        # callback is re-raised for every remaining path), so only collect here.
        paths: list = []
        layer.Traverse(Sdf.Path.absoluteRootPath, paths.append)
        for path in paths:
            if path == Sdf.Path.absoluteRootPath:
                self.metadata(layer.pseudoRoot, "/")
            elif path.IsPrimPath():
                self.count_prim(path)
                spec = layer.GetPrimAtPath(path)
                if spec is not None:
                    self.metadata(spec, str(path))
            elif path.IsPrimVariantSelectionPath():
                spec = layer.GetPrimAtPath(path)  # a variant's own prim spec (None for a variant set)
                if spec is not None:
                    self.metadata(spec, str(path))
            elif path.IsPropertyPath():
                spec = layer.GetPropertyAtPath(path)
                if spec is None:
                    continue
                if isinstance(spec, Sdf.AttributeSpec):
                    self.attribute(spec)
                else:
                    self.metadata(spec, str(path))

    def count_prim(self, path) -> None:
        worker, lim = self.worker, self.worker.limits
        worker.prims += 1
        if worker.prims > lim.max_prims:
            raise BudgetExceeded(
                f"more than {lim.max_prims} prim specs (limit max_prims={lim.max_prims}); "
                f"the limit was crossed in {worker.show(self.loc)} at <{path}>"
            )

    def count_points(self, value: Any, apath: str) -> None:
        worker, lim = self.worker, self.worker.limits
        try:
            n = len(value)
        except TypeError:
            n = 0
        worker.points += n
        if worker.points > lim.max_points:
            raise BudgetExceeded(
                f"more than {lim.max_points} points (limit max_points={lim.max_points}); "
                f"the limit was crossed in {worker.show(self.loc)} at <{apath}> ({n} points)"
            )

    def metadata(self, spec, spath: str) -> None:
        # Sorted: Sdf lists the keys in an order that varies from process to process.
        for key in sorted(spec.ListInfoKeys()):
            if key in _SKIP_INFO_KEYS:
                continue
            ok, value = self.read(f"{key} on <{spath}>", lambda k=key: spec.GetInfo(k))
            if key in ("references", "payload"):
                if ok and value is not None:
                    self.arcs(value, "reference" if key == "references" else "payload", spath)
                continue
            if not ok:
                continue
            for ap, clip in self.asset_values(value, in_clips=(key == "clips")):
                self.asset_dep(ap, "asset", f" in {key} of <{spath}>", clip)

    def arcs(self, listop, kind: str, spath: str) -> None:
        for item in listop.GetAddedOrExplicitItems():
            ap = item.assetPath
            if ap:
                self.seen_arcs.add(ap)
                self.layer_dep(ap, kind, f" on <{spath}>")

    def attribute(self, attr) -> None:
        apath = str(attr.path)
        is_points = attr.name == "points"
        for key in sorted(attr.ListInfoKeys()):
            ok, value = self.read(f"{key} of <{apath}>", lambda k=key: attr.GetInfo(k))
            if not ok or value is None:
                continue
            if key == "default":
                values = [value]
            elif key == "timeSamples" and isinstance(value, dict):
                values = list(value.values())
            else:
                for ap, clip in self.asset_values(value):
                    self.asset_dep(ap, "asset", f" in {key} of <{apath}>", clip)
                continue
            for v in values:
                if is_points:
                    self.count_points(v, apath)
                for ap, clip in self.asset_values(v):
                    self.asset_dep(ap, "asset attribute", f" <{apath}>", clip)
