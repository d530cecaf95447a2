"""The physical grade: runtime tests of the submitted package in a physics engine (Newton).

Separate from the reward: it writes OUT/physical.json, never grade.json or authored_usd.
"""

from usd_repair_verifier import only_namespaced

only_namespaced(__name__)   # one name for each module: usd_repair_verifier.physical...
