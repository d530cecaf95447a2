"""Root conftest: the grading plugin (options --case/--submission/--out, fixtures, outputs)."""
pytest_plugins = ["usd_repair_verifier.scoring.plugin"]
