"""The validity gate's rule names and the file types it knows: pxr-free, importing nothing.

gates/names.py reads RULES from here, so that naming the gates imports none of the gate's code.
"""
from __future__ import annotations

# Checked in this order; a rule that cannot run because an earlier one failed says so.
RULES = (
    "local_package",
    "single_root_layer",
    "resource_limits",
    "layers_parse",
    "dependencies_inside",
)

USD_EXTENSIONS = (".usd", ".usda", ".usdc", ".usdz")
TEXT_LAYER_EXTENSIONS = (".usd", ".usda", ".usdz")  # may hold text layers


def has_usd_ext(name: str) -> bool:
    return name.lower().endswith(USD_EXTENSIONS)
