"""One typed reader for the authored values the snapshot reads.

A submission is written by a hostile agent: `string physics:centerOfMass = "abc"`,
`float physics:diagonalInertia = 1`, a quaternion of NaNs or a points array of the
wrong shape all compose (USD does not check an attribute's value against its schema)
and would reach arithmetic that raises. `read(attr, kind)` returns the value in plain
Python/numpy form, or None with the reason it cannot be used: a wrong type, a wrong
shape or a non-finite number is an *authoring error*, which `usd_repair_verifier.stage_snapshot.authoring_problems`
records so the checks can grade it (the property fails; preservation fails when it was
healthy). The readers in this package take values through here and fall back to
"not authored" on a problem, so no exception escapes them.

Kinds:
    real    a finite number (not a bool)              -> float
    vec3    three finite numbers                      -> (x, y, z)
    quat    a finite, non-zero quaternion             -> (w, x, y, z)
    points  an (n, 3) array of finite numbers         -> float64 ndarray (n, 3)
    ints    a one-dimensional array of integers       -> int64 ndarray (n,)
    colors  3-vectors of finite numbers, an array or one (display colours) -> float64 ndarray (n, 3)
    reals   finite numbers, an array or one (display opacities)           -> float64 ndarray (n,)
    token   a token or string                         -> str
    bool    a bool                                    -> bool
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from pxr import Gf, Usd

KINDS = ("real", "bound", "vec3", "quat", "points", "ints", "colors", "reals", "token", "bool")
_QUATS = (Gf.Quatf, Gf.Quatd, Gf.Quath)
_VEC3S = (Gf.Vec3f, Gf.Vec3d, Gf.Vec3h, Gf.Vec3i)


class Unusable(ValueError):
    """An authored value the snapshot cannot use, with the reason."""


def read(attr: Usd.Attribute | None, kind: str, time: Usd.TimeCode | float | None = None) -> tuple[Any, str | None]:
    """(value, None) when usable; (None, None) when nothing resolves; (None, why) on an authoring error."""
    if not attr:
        return None, None
    try:
        raw = attr.Get() if time is None else attr.Get(time)
    except Exception as error:  # Tf errors from a value USD itself cannot produce
        return None, f"cannot be read ({type(error).__name__})"
    if raw is None:
        return None, None
    try:
        return convert(raw, kind), None
    except Unusable as error:
        return None, f"authored as {_describe(attr, raw)}: {error}"


def value(attr: Usd.Attribute | None, kind: str, default: Any = None, time=None) -> Any:
    """The usable value, else `default` (the problem itself is recorded by the authoring audit)."""
    found, _ = read(attr, kind, time)
    return default if found is None else found


def prim_value(prim: Usd.Prim, name: str, kind: str, default: Any = None, authored_only: bool = False) -> Any:
    attr = prim.GetAttribute(name) if prim else None
    if not attr or (authored_only and not attr.HasAuthoredValue()):
        return default
    return value(attr, kind, default)


def convert(raw: Any, kind: str) -> Any:
    """`raw` as `kind`, or Unusable."""
    if kind == "real":
        return _real(raw)
    if kind == "bound":
        # Limits, break forces and drive force caps: the schema's own fallback is +-inf ("no
        # limit"), so an infinity is a meaning, not an error; NaN still is.
        return _real(raw, infinite_ok=True)
    if kind == "vec3":
        return _vec3(raw)
    if kind == "quat":
        return _quat(raw)
    if kind == "points":
        return _points(raw)
    if kind == "ints":
        return _ints(raw)
    if kind == "colors":
        return _points(raw if not isinstance(raw, _VEC3S) else [raw], what="colours")
    if kind == "reals":
        return _reals(raw)
    if kind == "token":
        if isinstance(raw, str):
            return str(raw)
        raise Unusable("expected a token")
    if kind == "bool":
        if isinstance(raw, (bool, np.bool_)):
            return bool(raw)
        raise Unusable("expected a bool")
    raise ValueError(f"unknown kind {kind!r}")  # a verifier bug, not the submission's


def _real(raw: Any, infinite_ok: bool = False) -> float:
    if isinstance(raw, (bool, np.bool_, str)) or not isinstance(raw, (int, float, np.integer, np.floating)):
        raise Unusable("expected a number")
    number = float(raw)
    if math.isnan(number) or (not infinite_ok and math.isinf(number)):
        raise Unusable("not finite")
    return number


def _vec3(raw: Any) -> tuple[float, float, float]:
    if isinstance(raw, (str, bytes)) or not (isinstance(raw, _VEC3S) or isinstance(raw, (tuple, list))):
        raise Unusable("expected three numbers")
    if len(raw) != 3:
        raise Unusable(f"expected three numbers, got {len(raw)}")
    return tuple(_real(c) for c in raw)


def _quat(raw: Any) -> tuple[float, float, float, float]:
    if not isinstance(raw, _QUATS):
        raise Unusable("expected a quaternion")
    imaginary = raw.GetImaginary()
    q = (_real(raw.GetReal()), _real(imaginary[0]), _real(imaginary[1]), _real(imaginary[2]))
    if math.hypot(*q) < 1e-12:
        raise Unusable("a zero quaternion is no rotation")
    return q


def _points(raw: Any, what: str = "points") -> np.ndarray:
    if isinstance(raw, (str, bytes)) or not hasattr(raw, "__len__"):
        raise Unusable("expected an array of 3-vectors")
    try:
        array = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        raise Unusable("expected an array of 3-vectors") from None
    if array.ndim != 2 or array.shape[1] != 3:
        raise Unusable(f"expected an array of 3-vectors, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise Unusable(f"{int((~np.isfinite(array)).any(axis=1).sum())} of {len(array)} {what} are not finite")
    return array


def _reals(raw: Any) -> np.ndarray:
    if isinstance(raw, (bool, np.bool_, str, bytes)):
        raise Unusable("expected numbers")
    if isinstance(raw, (int, float, np.integer, np.floating)):
        raw = [raw]
    if not hasattr(raw, "__len__") or type(raw).__module__.startswith("pxr.Gf"):  # a vector is not a list
        raise Unusable("expected numbers")
    array = np.asarray(raw)
    if array.ndim != 1 or array.dtype.kind not in "iuf":
        raise Unusable(f"expected numbers, got {array.dtype} of shape {array.shape}")
    array = array.astype(np.float64)
    if not np.isfinite(array).all():
        raise Unusable(f"{int((~np.isfinite(array)).sum())} of {len(array)} values are not finite")
    return array


def _ints(raw: Any) -> np.ndarray:
    if isinstance(raw, (str, bytes)) or not hasattr(raw, "__len__"):
        raise Unusable("expected an array of integers")
    array = np.asarray(raw)
    if array.ndim != 1 or array.dtype.kind not in "iu":
        raise Unusable(f"expected an array of integers, got {array.dtype} of shape {array.shape}")
    return array.astype(np.int64)


def _describe(attr: Usd.Attribute, raw: Any) -> str:
    """The type as authored (the strongest spec's, which may not be the schema's) and the value."""
    text = repr(raw)
    text = text if len(text) <= 60 else text[:57] + "..."
    stack = attr.GetPropertyStack(Usd.TimeCode.Default())
    type_name = stack[0].typeName if stack else attr.GetTypeName()
    return f"{type_name} {text}"
