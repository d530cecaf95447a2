"""The verifier's one import namespace: installed, its packages are usd_repair_verifier.checks,
usd_repair_verifier.scoring, ... and nothing else lands in site-packages as a top-level name.

In the repository the packages stay top-level folders (checks/, gates/, scoring/, ...), so that
`pytest checks --case ...` works in a checkout; pyproject.toml maps each of them under this
namespace on install. This file is the namespace's only code. In a checkout (no scoring/ beside
this file) it adds the repository's root to the package's path, so the same names import there
with no install at all: from PYTHONPATH, from pytest's rootdir, in the sealed grade's bootstrap.
"""
from pathlib import Path as _Path

# The folder that holds this package: what a child process needs on sys.path to import the
# verifier (a checkout, site-packages, or a Harbor task's verifier folder).
IMPORT_ROOT = _Path(__file__).resolve().parent.parent

if not (_Path(__file__).resolve().parent / "scoring").is_dir():
    __path__.append(str(IMPORT_ROOT))
