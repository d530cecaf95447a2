"""Visual grade: trusted renders of the graded bytes and a rubric judge.

Separate from the authored-USD reward: reads grade.json, writes OUT/visual.json and
OUT/renders/*.png, never changes authored_usd and never produces a combined score.
"""
