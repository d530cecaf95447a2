"""Fixtures shared by the verifier's own tests. (The checkout's root is on sys.path for `tests.*`,
`bench.*` and `fixtures.*`: pyproject.toml's pytest `pythonpath`.)"""
import json

import pytest


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a real connection fails the test (the mock transport needs none)."""
    import socket

    def refuse(*args, **kwargs):
        raise AssertionError("a test tried to touch the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture
def written_records_match(tmp_path):
    """Call with (file name, pydantic model, kind of record): at teardown, every file of that name
    the test made a grade write below tmp_path is what its model (and the published JSON Schema)
    describes, and the records store reads it as that model, to the same columns as its tolerant
    path for earlier records would."""
    from usd_repair_verifier.records.grades import _earlier_record_columns, current_record, separate_columns

    records = []
    yield lambda name, model, kind: records.append((name, model, kind))
    for name, model, kind in records:
        for path in tmp_path.rglob(name):
            model.model_validate_json(path.read_bytes())
            record = json.loads(path.read_bytes())
            assert current_record(kind, record) is not None
            assert separate_columns(kind, record) == _earlier_record_columns(kind, record)


@pytest.fixture(autouse=True, scope="session")
def _child_sessions_without_hypothesis():
    """Child pytest sessions load the plugins the operator's command would: in the checkout only
    those pyproject.toml names; elsewhere (an installed verifier, no ini) every installed one,
    except hypothesis's here: only these tests install it (the `test` extra), and its plugin
    imports all of hypothesis at the end of every session, 0.8 s of a 1.8 s grade (measured)."""
    import os

    before = os.environ.get("PYTEST_ADDOPTS")
    os.environ["PYTEST_ADDOPTS"] = " ".join(filter(None, [before, "-p no:hypothesispytest"]))
    yield
    if before is None:
        os.environ.pop("PYTEST_ADDOPTS", None)
    else:
        os.environ["PYTEST_ADDOPTS"] = before


def pytest_collection_modifyitems(items):
    """The Ray cluster tests go first. They share one cluster per module (a fixture); pytest-xdist
    hands each worker a first batch of consecutive tests (an eighth of the suite each), so at the
    front they all land on one worker, which starts that cluster once, early, while the other
    worker runs the rest."""
    first = [item for item in items if item.nodeid.startswith("tests/test_regrade_cluster.py")]
    if first:
        items[:] = first + [item for item in items if item not in first]
