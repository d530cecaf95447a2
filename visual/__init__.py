"""Visual grade: trusted renders of the graded bytes and a rubric judge.

Separate from the authored-USD reward: reads grade.json, writes OUT/visual.json and
OUT/renders/*.png, never changes authored_usd and never produces a combined score.
"""

from usd_repair_verifier import only_namespaced

only_namespaced(__name__)   # one name for each module: usd_repair_verifier.visual...
