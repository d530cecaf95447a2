"""The capped worker: every USD call of the gate, in a process of its own.

Run as ``python -m usd_repair_verifier.gates.validity.worker CONFIG`` (runner.py) or forked from
the fork server (fork.py); either way ``main`` sets the caps before pxr is imported: RLIMIT_AS
(default_worker_memory), no core files, a bounded RLIMIT_FSIZE and RLIMIT_CPU. It then reads the
root layer and every layer reachable from it (LayerScan), checks each authored asset path
(Resolver), looks for sublayer cycles, cross-checks with UsdUtils.ComputeAllDependencies and
counts the composed stage (composed_budget.py), and writes a WorkerResult.

Before reading each layer it writes "layer PATH" to the progress file, so that when USD crashes
or hangs the runner can name the layer. USD's diagnostics go to this process's stderr (a file
of the verifier's), quoted in reasons.
"""
from __future__ import annotations

import os
import posixpath
import re
import sys
from typing import Any, Iterator

from . import composed_budget
from .limits import WORKER_MAX_STDERR_BYTES
from .paths import MISSING_INSIDE, Location, split_package_path
from .protocol import ComposedResult, DependencyStats, WorkerConfig, WorkerResult
from .resolve import Resolver
from .scan import BudgetExceeded, LayerScan
from .text import MAX_DETAILS, clean, counted, inside, show
from .usdz import UsdzArchives

class _Capped(list):
    """A list that keeps the first ``keep`` items but counts every append."""

    def __init__(self, keep: int = 4 * MAX_DETAILS):
        super().__init__()
        self.keep = keep
        self.total = 0

    def append(self, item) -> None:  # type: ignore[override]
        self.total += 1
        if len(self) < self.keep:
            super().append(item)


class Worker:
    def __init__(self, cfg: WorkerConfig):
        from pxr import Sdf, Tf  # noqa: F401 (imported after the rlimits are set)

        self.Sdf = Sdf
        self.Tf = Tf
        self.root = cfg.package_root
        self.root_layer = cfg.root_layer
        self.reference_root_layer = cfg.reference_root_layer
        self.selections = cfg.variant_selections
        self.limits = cfg.limits
        self.stderr_path = cfg.stderr
        self.progress = open(cfg.progress, "a", encoding="utf-8")
        self.archives = UsdzArchives(self.show)
        self.resolver = Resolver(self.root, self.archives)
        self.layers: list[str] = []
        self.parse_errors = _Capped()
        self.dep_errors = _Capped()
        self.missing_inside = _Capped()
        self.missing_inside_files: set[str] = set()
        self.prims = 0
        self.points = 0
        self.budget: str | None = None
        self.sublayer_edges: dict[str, list[str]] = {}
        self.stats = DependencyStats()
        self.asset_files: set[str] = set()

    # -- reporting ---------------------------------------------------------
    def show(self, loc_or_path: Any) -> str:
        text = loc_or_path.ident() if isinstance(loc_or_path, Location) else str(loc_or_path)
        return show(text, self.root)

    def note(self, line: str) -> None:
        self.progress.write(clean(line) + "\n")
        self.progress.flush()

    def stderr_since(self, pos: int) -> str:
        try:
            with open(self.stderr_path, "rb") as fh:
                fh.seek(pos)
                data = fh.read(64 * 1024)
        except OSError:
            return ""
        lines = [ln.strip() for ln in data.decode("utf-8", "replace").splitlines()
                 if ln.strip() and not ln.startswith("#")]
        return " | ".join(lines[:4])

    def stderr_pos(self) -> int:
        try:
            sys.stderr.flush()
            return os.fstat(2).st_size
        except OSError:
            return 0

    @staticmethod
    def usd_message(exc: BaseException) -> str:
        text = str(exc).strip()
        # Tf errors look like "Error in 'func' at line N in file F : 'message'"
        m = re.findall(r" : '(.*?)'\s*$", text, flags=re.S | re.M)
        if m:
            text = m[-1]
        text = " ".join(text.split())
        return clean(text[:500]) or type(exc).__name__

    # -- dependencies --------------------------------------------------------
    def check_dep(self, anchor: Location, authored: str, kind: str, where: str,
                  is_layer: bool) -> Location | None:
        """Check one authored asset path; the location of what it names when it is inside."""
        if not authored:
            return None
        loc, problem = self.resolver.resolve(anchor, authored, is_layer)
        if problem and problem.startswith(MISSING_INSIDE):
            # A file the package itself should hold but does not: not an escape, so not
            # invalid; the stage gets a composition error (or a missing texture) that the
            # composition checks and the preservation bound grade.
            self.missing_inside.append(f"{self.show(anchor)}: {kind} @{clean(authored)}@{where}: {problem}")
            self.missing_inside_files.add(os.path.normpath(
                os.path.join(os.path.dirname(anchor.fs), split_package_path(authored)[0])))
            return None
        if problem:
            self.dep_errors.append(
                f"{self.show(anchor)}: {kind} @{clean(authored)}@{where}: {problem}"
            )
            return None
        if is_layer:
            self.stats.layer_arcs += 1
        else:
            self.stats.assets += 1
            self.asset_files.add(loc.ident())
        return loc

    # -- layers -------------------------------------------------------------
    def open_layer(self, loc: Location) -> tuple[Any, Location | None]:
        """Open a layer; returns (layer, anchor location) or (None, None) after recording why."""
        anchor = loc
        last = loc.members[-1] if loc.members else loc.fs
        if last.lower().endswith(".usdz"):
            zf, err = self.archives.open(loc)
            if zf is None:
                self.parse_errors.append(err)
                return None, None
            anchor = Location(loc.fs, loc.members + (posixpath.normpath(zf.infolist()[0].filename),))
        ident = loc.ident()
        self.note(f"layer {ident}")
        pos = self.stderr_pos()
        try:
            layer = self.Sdf.Layer.FindOrOpen(ident)
        except MemoryError:
            self.parse_errors.append(f"{self.show(loc)}: exceeded the verifier's memory cap while opening")
            return None, None
        except Exception as exc:  # Tf.ErrorException and anything else
            self.parse_errors.append(f"{self.show(loc)}: does not parse: {self.usd_message(exc)}")
            return None, None
        if layer is None:
            said = self.stderr_since(pos)
            if os.path.exists(loc.fs) and os.path.getsize(loc.fs) == 0 and not loc.members:
                why = "empty file"
            else:
                why = "USD could not open it" + (f": {clean(said)}" if said else " (no diagnostic)")
            self.parse_errors.append(f"{self.show(loc)}: does not parse: {why}")
            return None, None
        return layer, anchor

    # -- driver ---------------------------------------------------------------
    def run(self) -> WorkerResult:
        root_loc = Location(self.root_layer)
        self.read_layers(root_loc)
        if self.budget is None:
            self.check_cycles()
        cross = ""
        composed = None
        if self.budget is None and not self.parse_errors and not self.dep_errors:
            cross = self.cross_check(root_loc)
            if not self.dep_errors:
                composed = self.composed_budget(root_loc)
        self.stats.asset_files = len(self.asset_files)
        return WorkerResult(
            composed=composed,
            layers=self.layers,
            prims=self.prims,
            points=self.points,
            budget=self.budget,
            parse_errors=list(self.parse_errors),
            parse_error_total=self.parse_errors.total,
            dep_errors=list(self.dep_errors),
            dep_error_total=self.dep_errors.total,
            missing_inside=list(self.missing_inside),
            dep_stats=self.stats,
            cross_check=cross,
        )

    def read_layers(self, root_loc: Location) -> None:
        """Every layer reachable from the root, breadth first, each once."""
        queue: list[Location] = [root_loc]
        done: set[str] = set()
        head = 0
        try:
            while head < len(queue):
                loc = queue[head]
                head += 1
                key = loc.ident()
                if key in done:
                    continue
                done.add(key)
                layer, anchor = self.open_layer(loc)
                if layer is None:
                    continue
                self.layers.append(key)
                LayerScan(self, loc, layer, anchor, queue).run()
                del layer
        except BudgetExceeded as exc:
            self.budget = str(exc)
        except MemoryError:
            self.parse_errors.append(
                f"{self.show(queue[head - 1]) if head else '?'}: exceeded the verifier's memory cap while reading"
            )

    def composed_budget(self, root_loc: Location) -> ComposedResult:
        """Compose the stage and count it against the budgets (see composed_budget.py)."""
        absolute = {name: getattr(self.limits, f"max_composed_{name}") for name in composed_budget.COUNTED}
        reference = None
        if self.reference_root_layer:
            # The reference is the case's own, trusted package: a failure here is the verifier's.
            if self.selections:   # composed as the grade composes it: the named prims' other sets held
                from usd_repair_verifier.stage_snapshot.variant_selections import applied_selections

                self.selections = applied_selections(self.reference_root_layer, self.selections)
            reference = composed_budget.count(self.reference_root_layer, absolute, self.selections).as_dict()
        limits = composed_budget.budgets(reference, absolute)
        self.note(f"layer {root_loc.ident()}")
        try:
            counts = composed_budget.count(root_loc.ident(), limits, self.selections)
        except MemoryError:
            return ComposedResult(budgets=limits, refusal=f"composing the stage exceeded the verifier's memory cap "
                                                          f"(budgets: {limits})")
        except Exception as exc:  # Tf errors: the stage does not compose
            return ComposedResult(budgets=limits, error=f"{self.show(root_loc)}: the stage does not compose: "
                                                        f"{self.usd_message(exc)}")
        refusal = composed_budget.refusal(counts, limits, reference) if counts.over else None
        return ComposedResult(budgets=limits, counts=counts.as_dict(), reference=reference, refusal=refusal,
                              layers=counts.layers)

    def check_cycles(self) -> None:
        for cyc in sublayer_cycles(self.sublayer_edges):
            chain = " -> ".join(self.show(c) for c in cyc)
            if len(cyc) == 2:
                msg = f"{self.show(cyc[0])}: sublayers itself (sublayer cycle {chain})"
            else:
                msg = f"{self.show(cyc[0])}: sublayer cycle {chain}"
            self.parse_errors.append(
                msg + "; a cyclic layer stack is a composition error, so the package is invalid"
            )

    def cross_check(self, root_loc: Location) -> str:
        """UsdUtils.ComputeAllDependencies must find nothing outside and nothing unresolved."""
        try:
            from pxr import UsdUtils
        except Exception as exc:  # pragma: no cover
            return f"UsdUtils unavailable ({clean(exc)}), cross-check skipped"
        self.note(f"layer {root_loc.ident()}")
        try:
            layers, assets, unresolved = UsdUtils.ComputeAllDependencies(root_loc.ident())
        except Exception as exc:
            self.dep_errors.append(
                f"{self.show(root_loc)}: UsdUtils.ComputeAllDependencies failed: {self.usd_message(exc)}"
            )
            return ""
        found = [lyr.realPath or lyr.identifier for lyr in layers
                 if not lyr.anonymous and (lyr.realPath or lyr.identifier)]
        for path in found + [str(a) for a in assets]:
            try:
                outer, _ = split_package_path(path)
            except ValueError:
                outer = path
            real = os.path.realpath(outer) if os.path.isabs(outer) else None
            if real is None or not inside(real, self.root):
                self.dep_errors.append(
                    f"{self.show(root_loc)}: UsdUtils.ComputeAllDependencies resolves a dependency "
                    f"outside the package: {clean(path)}"
                )
        for u in unresolved:
            if os.path.normpath(str(u)) in self.missing_inside_files:
                continue  # already reported as missing inside the package
            self.dep_errors.append(
                f"{self.show(root_loc)}: UsdUtils.ComputeAllDependencies cannot resolve @{clean(u)}@"
            )
        return (f"UsdUtils.ComputeAllDependencies agrees ({counted(len(layers), 'layer')}, "
                f"{counted(len(assets), 'asset')}, none unresolved outside what is reported missing)")


def sublayer_cycles(edges: dict[str, list[str]]) -> Iterator[list[str]]:
    """Each cycle of the sublayer graph once, as [first, ..., first], in depth-first order."""
    color: dict[str, int] = {}   # 1: on the current path, 2: done
    reported: set[frozenset] = set()
    for start in list(edges):
        if color.get(start):
            continue
        stack = [(start, iter(edges.get(start, ())))]
        path = [start]
        color[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                color[node] = 2
                stack.pop()
                path.pop()
                continue
            state = color.get(nxt, 0)
            if state == 1:
                cyc = path[path.index(nxt):] + [nxt]
                key = frozenset(cyc)
                if key not in reported:
                    reported.add(key)
                    yield cyc
            elif state == 0:
                color[nxt] = 1
                path.append(nxt)
                stack.append((nxt, iter(edges.get(nxt, ()))))


def set_worker_limits(cfg: WorkerConfig) -> None:
    try:
        import resource
    except ImportError:  # pragma: no cover - non-POSIX
        return

    def setlim(which: int, value: int) -> None:
        try:
            soft, hard = resource.getrlimit(which)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(which, (value, hard if hard != resource.RLIM_INFINITY else value))
        except (ValueError, OSError):
            pass

    setlim(resource.RLIMIT_AS, int(cfg.memory_bytes))
    setlim(resource.RLIMIT_CORE, 0)
    setlim(resource.RLIMIT_FSIZE, WORKER_MAX_STDERR_BYTES)
    setlim(resource.RLIMIT_CPU, int(cfg.cpu_seconds))


def main(cfg_path: str) -> int:
    """The worker's whole life: caps, pxr, the package, the result file."""
    cfg = WorkerConfig.read(cfg_path)
    set_worker_limits(cfg)
    worker = Worker(cfg)  # imports pxr
    worker.note("ready")
    try:
        result = worker.run()
    except Exception as exc:  # a verifier bug, not the submission's fault
        import traceback

        tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
        result = WorkerResult(internal_error="".join(tb[-3:])[-1500:])
    result.write(cfg.result)
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
