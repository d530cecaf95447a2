"""Reference snapshots kept between grades in one process (the warm batch grader).

A fresh `pytest checks` process reads the case's reference every time; a process that
grades many submissions of the same case reads it once. The key is everything the
snapshot depends on: the profile's digest (which covers the sampling settings and the
reference's frozen digest, verified against the files when the case is loaded), the
reference root layer's path and the scoring version of the code that reads it.

Entries are stored pickled and every hit is a fresh unpickled copy, so a measure that
memoizes on a snapshot object can never carry anything from one grade into the next
(the copy is what a shared `-n N` run hands between workers, too). Least recently used
entries go first once the pickles pass `max_bytes`. The reference-only free-space samples
are computed (usd_repair_verifier.stage_snapshot.parts.with_free_space) before an entry is stored, so copies carry them.
"""
from __future__ import annotations

import pickle
from collections import OrderedDict

from usd_repair_verifier.profiles.case import Case
from usd_repair_verifier.profiles.schema import SCORING_VERSION

DEFAULT_MAX_BYTES = 512 << 20


class ReferenceCache:
    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES):
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple, bytes] = OrderedDict()
        self.hits = self.misses = 0

    @staticmethod
    def key(case: Case) -> tuple:
        return (case.profile_digest, case.profile.reference.digest, str(case.reference_root_layer), SCORING_VERSION)

    @property
    def size_bytes(self) -> int:
        return sum(len(data) for data in self._entries.values())

    def get(self, key: tuple):
        data = self._entries.get(key)
        if data is None:
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return pickle.loads(data)  # our own pickle, made in this process from a snapshot we read

    def put(self, key: tuple, snapshot):
        """Keep the reference and return it with its free-space samples computed ahead.

        They depend on the reference alone (its colliders and the profile's seed) and are its
        most expensive part: computed once here, every later grade of the case gets them with
        its copy instead of sampling again (the same function on the same inputs)."""
        from usd_repair_verifier.stage_snapshot.parts import with_free_space  # pxr: only once grading

        snapshot = with_free_space(snapshot)
        data = pickle.dumps(snapshot, protocol=pickle.HIGHEST_PROTOCOL)
        if len(data) > self.max_bytes:
            return snapshot
        self._entries[key] = data
        self._entries.move_to_end(key)
        while self.size_bytes > self.max_bytes:
            self._entries.popitem(last=False)
        return snapshot
