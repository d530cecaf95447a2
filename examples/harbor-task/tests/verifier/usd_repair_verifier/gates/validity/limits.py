"""What a submission may cost: the profile's resource limits and the worker's own caps."""
from __future__ import annotations

from dataclasses import dataclass, fields

DEFAULT_WORKER_TIMEOUT_S = 300.0
_GIB = 1024**3
_WORKER_BASE_MEMORY = 3 * _GIB // 2      # python + libusd mappings, ~1.0 GB VmPeak
_WORKER_MIN_EXTRA_MEMORY = 1 * _GIB
WORKER_MAX_STDERR_BYTES = 64 * 1024**2  # RLIMIT_FSIZE for the worker


@dataclass(frozen=True)
class ResourceLimits:
    max_total_bytes: int = 200_000_000  # all files in the package
    max_file_bytes: int = 100_000_000   # any single file
    max_files: int = 2_000
    max_prims: int = 200_000            # prim specs over all layers
    max_points: int = 20_000_000        # sum of points-array lengths over all layers
    # Absolute bounds on the composed stage (see composed_budget.py; the budget is
    # also sized from the reference's own counts when the gate knows the reference).
    max_composed_prims: int = 200_000
    max_composed_instances: int = 10_000
    max_composed_points: int = 4_000_000
    max_composed_triangles: int = 4_000_000

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(
                    f"resource limit {f.name!r} must be a positive integer, got {value!r}"
                )
            if value <= 0:
                raise ValueError(
                    f"resource limit {f.name!r} must be a positive integer, got {value!r}"
                )

    @classmethod
    def from_dict(cls, d: dict) -> "ResourceLimits":
        """Build limits from a profile dict; missing keys keep their defaults.

        Unknown keys, non-integer and non-positive values raise ValueError.
        Integral floats (``2e8``) are accepted because JSON writers produce them.
        """
        if d is None:
            return cls()
        if not isinstance(d, dict):
            raise ValueError(f"resource limits must be a JSON object, got {type(d).__name__}")
        known = [f.name for f in fields(cls)]
        unknown = sorted(str(k) for k in d if k not in known)
        if unknown:
            raise ValueError(
                f"unknown resource limit key(s): {', '.join(map(repr, unknown))}; "
                f"known keys are {', '.join(known)}"
            )
        kwargs = {}
        for key, value in d.items():
            if isinstance(value, float) and not isinstance(value, bool) and value.is_integer():
                value = int(value)
            kwargs[key] = value
        return cls(**kwargs)

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def default_worker_memory(limits: ResourceLimits, text_bytes: int = 0, binary_bytes: int = 0) -> int:
    """Address-space cap for the USD worker.

    ~1.5 GiB covers the interpreter and libusd mappings.  On top of that the
    worker may use max(1 GiB, 48 x text-layer bytes + 8 x other bytes): text
    layers need ~25-45x their size to parse (a 78 MB .usda peaked at 3.6 GB
    of address space), crate files are memory-mapped but compressed arrays
    expand.  Memory claimed beyond this by a crafted file fails fast.
    """
    text_bytes = min(text_bytes, limits.max_total_bytes)
    binary_bytes = min(binary_bytes, limits.max_total_bytes)
    extra = max(_WORKER_MIN_EXTRA_MEMORY, 48 * text_bytes + 8 * binary_bytes)
    return _WORKER_BASE_MEMORY + extra
