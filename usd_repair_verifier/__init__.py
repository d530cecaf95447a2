"""The verifier's one import namespace: installed, its packages are usd_repair_verifier.checks,
usd_repair_verifier.scoring, ... and nothing else lands in site-packages as a top-level name.

In the repository the packages stay top-level folders (checks/, gates/, scoring/, ...), so that
`pytest checks --case ...` works in a checkout; pyproject.toml maps each of them under this
namespace on install. This file is the namespace's only code (a Harbor task's verifier folder
copies it alone). In a checkout (no scoring/ beside this file) it adds the repository's root to the package's path, so the same names import there
with no install at all: from PYTHONPATH, from pytest's rootdir, in the sealed grade's bootstrap.
"""
from pathlib import Path as _Path

# The folder that holds this package: what a child process needs on sys.path to import the
# verifier (a checkout, site-packages, or a Harbor task's verifier folder).
IMPORT_ROOT = _Path(__file__).resolve().parent.parent

if not (_Path(__file__).resolve().parent / "scoring").is_dir():
    __path__.append(str(IMPORT_ROOT))


# --- one name for each module ------------------------------------------------------------------
# One name for each of the verifier's modules: `usd_repair_verifier.<package>.<module>`.
# A checkout's root on sys.path (`python -m`, pytest's rootdir) would also make `scoring.reward`
# importable as a second, separate copy of `usd_repair_verifier.scoring.reward`: its own classes
# (an `isinstance` that fails across the two), its own module state, imported twice. Each package's
# `__init__.py` calls `only_namespaced(__name__)`, which refuses such an import with an ImportError
# that names the one name to use.
#
# One exception, pytest's own: it imports the test modules it collects by their folders' names
# (`checks.test_fault_checks`, `gates.test_validity`, `physical.runtime_tests.test_joint_travel`
# in a checkout), and with them their packages. The packages that hold collected tests (`COLLECTED`)
# may therefore be imported by their top-level name, but below them only their test modules and
# conftest.py: any other module of theirs imported through a top-level name is refused.
import sys as _sys
from importlib.abc import MetaPathFinder as _MetaPathFinder

NAMESPACE = __name__
# Top-level package -> the folder path below it that holds the test modules pytest collects.
COLLECTED: dict[str, tuple[str, ...]] = {"checks": (), "gates": (), "physical": ("runtime_tests",)}


def _test_module(name: str) -> bool:
    return name == "conftest" or name.startswith("test_")


def collected_name(fullname: str) -> bool:
    """May `fullname` (a top-level name) be imported: a collected package, its test folder or a
    test module in it?"""
    head, *rest = fullname.split(".")
    if head not in COLLECTED:
        return False
    folder = COLLECTED[head]
    if len(rest) <= len(folder):
        return tuple(rest) == folder[:len(rest)]
    return tuple(rest[:len(folder)]) == folder and len(rest) == len(folder) + 1 and _test_module(rest[-1])


def refusal(fullname: str) -> str:
    return (f"{fullname} is the verifier's module {NAMESPACE}.{fullname}: import it by that name "
            f"(a top-level name would load a second copy of it from the checkout)")


class _RefuseTopLevel(_MetaPathFinder):
    """Refuses `checks.registry` and the like, which a collected package's top-level import makes
    reachable; lets pytest import the test modules (`collected_name`)."""

    def find_spec(self, fullname, path=None, target=None):
        head = fullname.split(".", 1)[0]
        if head in COLLECTED and "." in fullname and not collected_name(fullname):
            raise ImportError(refusal(fullname), name=fullname)
        return None


def only_namespaced(name: str) -> None:
    """Called by each package's __init__.py with its `__name__`."""
    if name.startswith(NAMESPACE + "."):
        return
    if collected_name(name):
        if not any(isinstance(f, _RefuseTopLevel) for f in _sys.meta_path):
            _sys.meta_path.insert(0, _RefuseTopLevel())
        return
    raise ImportError(refusal(name), name=name)
