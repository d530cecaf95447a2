"""A module imported on its first attribute access, not when the test module is collected.

Collecting a test module that imports the judge's SDK (anthropic, httpx2) at the top cost every
pytest run, and every xdist worker, about 3 s even when none of its tests ran.

Only public names are forwarded: pytest's fixture scan probes every module-level object for
private names (`_mock_name`, `__wrapped__`), and answering those by importing would pay the
import at collection after all.
"""
from __future__ import annotations

import importlib


class LazyModule:
    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attribute: str):
        if attribute.startswith("_"):
            raise AttributeError(attribute)
        return getattr(importlib.import_module(self._name), attribute)
