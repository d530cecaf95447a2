"""tools/harbor_stack.py's one decision: Harbor's own images where Docker Hub answers, this
machine's replacements only where it does not. The daemons, pulls and builds are replaced by
records of the calls (the real stack, on this machine's no-pull branch, is what tests_harbor/
runs on); what is tested is which images each branch puts in place."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def load_stack():
    spec = importlib.util.spec_from_file_location("harbor_stack_under_test", ROOT / "tools" / "harbor_stack.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture()
def stack(monkeypatch, tmp_path):
    module = load_stack()
    calls: list[str] = []
    monkeypatch.setattr(module, "STATE", tmp_path / "state")
    for name in ("packages", "dockerd", "compose", "registry"):
        monkeypatch.setattr(module, name, lambda *args: None)
    monkeypatch.setattr(module, "harbor", lambda venv, install: venv / "bin" / "harbor")
    monkeypatch.setattr(module, "harbor_value", lambda venv, expression, imports: "alpine:3.23.4@sha256:probe")
    monkeypatch.setattr(module, "sidecar_base", lambda venv: "gogost/gost:3@sha256:gost")
    monkeypatch.setattr(module, "base_image", lambda: calls.append("stand-in base image") or "localhost:5000/python@sha256:x")
    monkeypatch.setattr(module, "kernel_probe", lambda venv, base: calls.append(f"register probe for {base}"))
    monkeypatch.setattr(module, "egress_sidecar", lambda venv, base: calls.append(f"build sidecar stand-in on {base}"))
    monkeypatch.setattr(module, "remove_stand_in_sidecar", lambda venv: calls.append("remove sidecar stand-in"))
    return module, calls


def test_where_docker_hub_answers_harbors_own_images_are_used_unchanged(stack, tmp_path, monkeypatch):
    module, calls = stack
    pulled: list[str] = []
    monkeypatch.setattr(module, "can_pull", lambda reference: pulled.append(reference) or True)
    values = module.bring_up(tmp_path / "venv", install=False)
    default = module.default_base_image()
    assert default.startswith("python:3.11-slim@sha256:")
    assert values["USDGRADE_BASE_IMAGE"] == default
    assert pulled == ["alpine:3.23.4@sha256:probe", "gogost/gost:3@sha256:gost", default]
    assert calls == ["remove sidecar stand-in"]   # nothing built, nothing registered


def test_where_nothing_can_be_pulled_the_replacements_are_put_in_place(stack, tmp_path, monkeypatch):
    module, calls = stack
    monkeypatch.setattr(module, "can_pull", lambda reference: False)
    values = module.bring_up(tmp_path / "venv", install=False)
    assert values["USDGRADE_BASE_IMAGE"] == "localhost:5000/python@sha256:x"
    assert calls == ["stand-in base image", "register probe for localhost:5000/python@sha256:x",
                     "build sidecar stand-in on localhost:5000/python@sha256:x"]
