"""Results of the costly mesh computations, kept by a digest of what they are computed from.

Most of a repair is untouched: a candidate's meshes are usually byte for byte the reference's,
and a re-grading worker meets the same meshes in submission after submission. A convex hull, a
mesh's mass integrals and a visible part's canonical surface with its samples are pure functions
of their input arrays (and the profile's sample count and seed), and so are a surface's
nearest-point index (by its triangles) and the rigid fit of one part's surface to another's (by
their digests and samples), so the second time the same
content comes along its result is taken from here instead of being computed again: within a grade
(the candidate after the reference) and across the grades of one process (the warm re-grading
worker, where most submissions of a case leave the same parts as the input left them; the test
suite's in-process grades).

The key is a BLAKE2b digest of the computation's name and every input: an array by its dtype,
shape and bytes, anything else by its repr. A hit is the very value a fresh computation gives
(deterministic functions of the same bytes), so no grade can tell whether it was served from here.
Values are stored pickled and every hit is a fresh unpickled copy: nothing that one caller does to
its copy reaches the next. Inputs smaller than ``MIN_INPUT_BYTES`` are computed every time (a
primitive's or a small mesh's hull costs less than its digest and pickle); least recently used
entries go first once the stored pickles pass ``max_bytes``.

The content is whatever the snapshot read from a hostile submission: a crafted mesh can only
fill entries with its own correct results, bounded in bytes like everything else here.
"""
from __future__ import annotations

import hashlib
import pickle
import threading
from collections import OrderedDict
from typing import Any, Callable, TypeVar

import numpy as np

__all__ = ["ContentCache", "CACHE", "MIN_INPUT_BYTES", "DEFAULT_MAX_BYTES"]

T = TypeVar("T")
MIN_INPUT_BYTES = 16 << 10      # about 700 points of float64 coordinates
DEFAULT_MAX_BYTES = 256 << 20


def _input_bytes(inputs: tuple) -> int:
    return sum(a.nbytes for a in inputs if isinstance(a, np.ndarray))


class ContentCache:
    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES):
        self.max_bytes = max_bytes
        self._entries: OrderedDict[bytes, bytes] = OrderedDict()
        self._stored = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    @staticmethod
    def key(kind: str, inputs: tuple) -> bytes:
        digest = hashlib.blake2b(kind.encode(), digest_size=32)
        for item in inputs:
            if isinstance(item, np.ndarray):
                digest.update(f"|array:{item.dtype.str}:{item.shape}:".encode())
                digest.update(np.ascontiguousarray(item).data)
            else:
                digest.update(f"|{type(item).__name__}:{item!r}".encode())
        return digest.digest()

    @property
    def size_bytes(self) -> int:
        return self._stored

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._stored = 0
            self.hits = self.misses = 0

    def get_or_compute(self, kind: str, inputs: tuple, compute: Callable[[], T], *,
                       min_bytes: int = MIN_INPUT_BYTES) -> T:
        """``compute()``'s value for these inputs: a copy of the stored one when the same content
        came before, else computed now (and kept when the inputs hold at least ``min_bytes`` of
        arrays: a computation that is costly whatever its size passes 0)."""
        if _input_bytes(inputs) < min_bytes or any(isinstance(a, np.ndarray) and a.dtype.hasobject for a in inputs):
            return compute()   # too small to be worth it, or an array of references (its bytes are addresses)
        key = self.key(kind, inputs)
        with self._lock:
            data = self._entries.get(key)
            if data is not None:
                self._entries.move_to_end(key)
                self.hits += 1
        if data is not None:
            return pickle.loads(data)   # our own pickle, made in this process from a value we computed
        value = compute()
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        with self._lock:
            self.misses += 1
            if len(data) <= self.max_bytes and key not in self._entries:
                self._entries[key] = data
                self._stored += len(data)
                while self._stored > self.max_bytes:
                    _, dropped = self._entries.popitem(last=False)
                    self._stored -= len(dropped)
        return value

    def stats(self) -> dict[str, Any]:
        return {"hits": self.hits, "misses": self.misses, "entries": len(self._entries), "bytes": self._stored}


# The process's cache: every grade in this process shares it.
CACHE = ContentCache()
