"""What passes between the gate and its worker process: a config file in, a result file out (JSON).

Both files live in a temporary folder of the verifier's, outside the package. The worker writes
its result atomically once it has finished; a worker that crashed, hung or ran out of memory
leaves none, and the runner builds one from what the worker's progress file says.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields

from .limits import ResourceLimits


@dataclass(frozen=True)
class WorkerConfig:
    package_root: str                  # the package's real path
    root_layer: str                    # its root layer
    reference_root_layer: str | None   # the case's reference (sizes the composed budgets), if known
    limits: ResourceLimits
    memory_bytes: int                  # RLIMIT_AS
    cpu_seconds: int                   # RLIMIT_CPU
    result: str                        # where the worker writes its WorkerResult
    progress: str                      # "ready", then "layer PATH" before each layer is read
    stderr: str                        # the worker's diagnostics (USD's included)
    # the case's variant selections (prim path -> set -> selection): the stage is composed with them
    variant_selections: dict = field(default_factory=dict)

    def write(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(asdict(self) | {"limits": self.limits.to_dict()}, fh)

    @classmethod
    def read(cls, path: str) -> "WorkerConfig":
        with open(path, "r", encoding="utf-8") as fh:
            data = json.load(fh)
        return cls(**(data | {"limits": ResourceLimits(**data["limits"])}))


@dataclass
class DependencyStats:
    layer_arcs: int = 0    # sublayers, references, payloads, clips followed
    assets: int = 0        # asset paths checked
    asset_files: int = 0   # distinct files they name


@dataclass
class ComposedResult:
    """The composed stage counted against its budgets (composed_budget.py)."""
    budgets: dict
    counts: dict | None = None      # what was counted (None when composing failed)
    reference: dict | None = None   # the reference's counts, when it was given
    refusal: str | None = None      # why the stage is refused: a budget crossed or memory exhausted
    error: str | None = None        # the stage does not compose (a layers_parse failure)
    layers: list | None = None      # the layers the composed stage uses (None: not composed to the end)


@dataclass
class WorkerResult:
    layers: list[str] = field(default_factory=list)   # identifiers of the layers that opened
    prims: int = 0                                    # prim specs counted
    points: int = 0                                   # points counted
    budget: str | None = None                         # the parsed budget crossed: why
    parse_errors: list[str] = field(default_factory=list)
    parse_error_total: int = 0                        # all of them (the list keeps the first ones)
    dep_errors: list[str] = field(default_factory=list)
    dep_error_total: int = 0
    missing_inside: list[str] = field(default_factory=list)  # paths to files the package lacks
    dep_stats: DependencyStats = field(default_factory=DependencyStats)
    cross_check: str = ""                             # what UsdUtils.ComputeAllDependencies said
    composed: ComposedResult | None = None
    internal_error: str | None = None                 # a verifier bug in the worker

    def write(self, path: str) -> None:
        """Atomically: a reader sees the whole result or none."""
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(asdict(self), fh)
        os.replace(tmp, path)

    @classmethod
    def read(cls, path: str) -> "WorkerResult":
        with open(path, "r", encoding="utf-8") as fh:
            data = json.load(fh)
        known = {f.name for f in fields(cls)}
        data = {k: v for k, v in data.items() if k in known}
        data["dep_stats"] = DependencyStats(**data.get("dep_stats", {}))
        if data.get("composed") is not None:
            data["composed"] = ComposedResult(**data["composed"])
        return cls(**data)
