"""Read a composed USD stage once into plain, picklable, comparable data.

Everything downstream (checks, gates, scoring) works on these snapshots, never on
live pxr objects, so a stage is opened once per process and measurements stay
pure functions of plain data.
"""

from usd_repair_verifier import only_namespaced

only_namespaced(__name__)   # one name for each module: usd_repair_verifier.stage_snapshot...
