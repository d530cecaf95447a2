"""The physical grade: runtime tests of the submitted package in a physics engine (Newton).

Separate from the reward: it writes OUT/physical.json, never grade.json or authored_usd.
"""
