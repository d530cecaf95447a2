"""Authoring: the case author's tools. Fault injectors (`usdgrade inject`), freezing a case from a
reference and a broken input (`usdgrade freeze`), and Harbor task folders from frozen cases
(`usdgrade task`). Built on the grader; nothing in grading imports it."""

from usd_repair_verifier import only_namespaced

only_namespaced(__name__)   # one name for each module: usd_repair_verifier.authoring...
